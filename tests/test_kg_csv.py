"""Reading neo4j-admin CSV files: header conventions, typed columns, and every kind of bad input.

These tests need no graph store: all validation happens before a store is touched (so bad input never leaves
half a graph behind; the store-side checks live in test_kg_engines.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llama_index_kgplus import InputDataError
from llama_index_kgplus.kg._csv import parse_header, read_kg_csv
from llama_index_kgplus.kg._import import neo4j_admin_import_command

BENCH = Path("/work/shared/bench-data")


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path):
    """A small valid graph; tests overwrite one file at a time."""
    return {
        "nodes": write(
            tmp_path,
            "nodes.csv",
            "cid:ID,cfname,score:float,tags:string[],:LABEL\n"
            "C1,aspirin,0.5,drug;nsaid,Ent;Drug\nC2,headache,,,Ent\nC3,migraine,1,,Ent;Disease\n",
        ),
        "rels": write(
            tmp_path,
            "rels.csv",
            ":START_ID,:END_ID,:TYPE,relname,rank:int,note:IGNORE\nC1,C2,Rel,TREATS,1,x\nC3,C2,Rel,ISA,2,y\n",
        ),
        "syn": write(tmp_path, "syn.csv", "cid,synonym\nC1,acetylsalicylic acid\nC1,ASA\nC1,ASA\n"),
    }


def read(files, **kwargs):
    return read_kg_csv(files["nodes"], files["rels"], files.get("syn"), **kwargs)


def test_header_conventions_and_typed_columns(files):
    data = read(files)
    assert (data.id_property, data.name_property) == ("cid", "cfname")
    assert data.node_properties == {"cfname": "string", "score": "float", "tags": "string[]"}
    assert data.rel_properties == {"relname": "string", "rank": "int"}  # the IGNORE column is dropped
    aspirin = data.nodes[0]
    assert aspirin.labels == ("Ent", "Drug")
    assert aspirin.properties == {"cfname": "aspirin", "score": 0.5, "tags": ["drug", "nsaid"]}
    assert data.nodes[1].properties == {"cfname": "headache"}  # empty fields are no property, as in neo4j-admin
    assert [(r.start, r.end, r.type, r.properties) for r in data.relationships] == [
        ("C1", "C2", "Rel", {"relname": "TREATS", "rank": 1}),
        ("C3", "C2", "Rel", {"relname": "ISA", "rank": 2}),
    ]
    assert data.aliases == [("C1", "acetylsalicylic acid"), ("C1", "ASA")]  # the repeated row is dropped
    assert data.rel_types == ("Rel",) and data.labels == ("Disease", "Drug", "Ent")


def test_untyped_rank_stays_a_string_like_neo4j_admin():
    data = read_kg_csv(BENCH / "kg-umls-semnet/nodes.csv", BENCH / "kg-umls-semnet/relationships.csv")
    assert data.rel_properties == {"relname": "string", "rank": "string"}
    assert (data.node_count, data.relationship_count) == (135, 6529)


@pytest.mark.parametrize(
    ("header", "kinds"),
    [
        (":ID,name", [("id", ""), ("property", "name")]),
        (
            "cid:ID(Genes),n:long[],b:BOOLEAN,d:date",
            [("id", "cid"), ("property", "n"), ("property", "b"), ("property", "d")],
        ),
    ],
)
def test_parse_header(header, kinds, tmp_path):
    columns = parse_header(header.split(","), tmp_path / "x.csv")
    assert [(c.kind, c.name) for c in columns] == kinds
    if "long[]" in header:
        assert [c.value_type for c in columns[1:]] == ["int[]", "boolean", "string"]
        assert columns[0].id_space == "Genes"


@pytest.mark.parametrize(
    ("which", "text", "message"),
    [
        ("nodes", "cid,cfname\nC1,a\n", r"nodes.csv:1: no ':ID' column .*Did you mean 'cid:ID'"),
        ("nodes", "cid:ID,label_text\nC1,a\n", r"no name column: expected one of name, cfname"),
        ("nodes", "cid:ID,name:integer\nC1,a\n", r"unknown type 'integer'"),
        ("nodes", "cid:ID,name,name\nC1,a,b\n", r"repeats column"),
        ("nodes", "cid:ID,full name\nC1,a\n", r"not a plain identifier"),
        ("nodes", "cid:ID,name,synonyms\nC1,a,b\n", r"'synonyms' is reserved"),
        ("nodes", ":START_ID,:END_ID,name\nC1,C2,a\n", r"is this the relationships file"),
        (
            "rels",
            "start,:END_ID,:TYPE\nC1,C2,R\n",
            r"no ':START_ID' column .*Did you mean ':START_ID' for column 'start'",
        ),
        ("rels", ":START_ID,:END_ID,relname\nC1,C2,x\n", r"no ':TYPE' column"),
        ("rels", "cid:ID,cfname\nC1,a\n", r"is this the nodes file"),
        ("rels", ":START_ID,:END_ID,:TYPE\nC1,C2,HAS-DRUG\n", r"rels.csv:2: relationship type 'HAS-DRUG'"),
        (
            "rels",
            ":START_ID,:END_ID,:TYPE,rank:int\nC1,C2,R,high\n",
            r"rels.csv:2: column 'rank:int': 'high' is not a valid int",
        ),
        ("rels", ":START_ID,:END_ID,:TYPE\nC1,C2\n", r"rels.csv:2: 2 fields, the header has 3"),
        ("syn", "cid,alias_text\nC1,x\n", r"syn.csv:1: a synonyms file needs the columns 'cid'"),
    ],
)
def test_missing_or_misnamed_columns(files, which, text, message):
    name = {"nodes": "nodes.csv", "rels": "rels.csv", "syn": "syn.csv"}[which]
    files[which] = write(files[which].parent, name, text)
    with pytest.raises(InputDataError, match=message):
        read(files)


def test_a_default_type_replaces_a_missing_type_column(files):
    files["rels"] = write(files["rels"].parent, "rels.csv", ":START_ID,:END_ID\nC1,C2\n")
    assert [r.type for r in read(files, default_type="RELATED_TO").relationships] == ["RELATED_TO"]


def test_duplicate_ids_are_listed_with_both_lines(files):
    files["nodes"] = write(files["nodes"].parent, "nodes.csv", "cid:ID,name\nC1,a\nC2,b\nC1,c\nC2,d\n")
    with pytest.raises(InputDataError, match=r"2 duplicate ids: 'C1' at line 4 \(first at line 2\); 'C2' at line 5"):
        read(files)


def test_unknown_ids_fail_by_default_and_are_counted_when_skipped(files):
    files["rels"] = write(
        files["rels"].parent, "rels.csv", ":START_ID,:END_ID,:TYPE\nC1,C2,R\nC1,C9,R\nC8,C9,R\nC3,C2,R\n"
    )
    files["syn"] = write(files["syn"].parent, "syn.csv", "cid,synonym\nC1,ASA\nC7,ghost\n")
    with pytest.raises(
        InputDataError,
        match=r"rels.csv: 2 relationships point at ids that are not in the nodes "
        r"file \(line 3: 'C9'; line 4: 'C8', 'C9'\).*--skip-unknown-ids",
    ):
        read(files)
    data = read(files, on_unknown_id="skip")
    assert data.relationship_count == 2 and data.skipped_relationships == 2
    assert data.aliases == [("C1", "ASA")] and data.skipped_aliases == 1
    assert any("skipped 2 relationships" in w for w in data.warnings)


@pytest.mark.parametrize("which", ["nodes", "rels", "syn"])
def test_empty_files(files, which):
    name = {"nodes": "nodes.csv", "rels": "rels.csv", "syn": "syn.csv"}[which]
    files[which] = write(files[which].parent, name, "")
    with pytest.raises(InputDataError, match=rf"{name} is empty: it needs a header line"):
        read(files)


def test_header_only_nodes_file_is_an_error_but_no_relationships_is_a_warning(files):
    files["rels"] = write(files["rels"].parent, "rels.csv", ":START_ID,:END_ID,:TYPE\n")
    assert any("no relationships" in w for w in read(files).warnings)
    files["nodes"] = write(files["nodes"].parent, "nodes.csv", "cid:ID,name\n\n")
    with pytest.raises(InputDataError, match="has a header but no rows"):
        read(files)


def test_non_utf8_input_names_the_line(files):
    files["nodes"] = write(files["nodes"].parent, "nodes.csv", "cid:ID,name\nC1,a\nC2,caf\xe9\n".encode("latin-1"))
    with pytest.raises(InputDataError, match=r"nodes.csv:3:\d+: not UTF-8 text \(byte 0xe9.*iconv"):
        read(files)


def test_utf8_bom_quotes_and_newlines_are_read(files):
    text = '\ufeffcid:ID,name\nC1,"multi\nline, ""quoted"" name"\nC2,b\n'
    files["nodes"] = write(files["nodes"].parent, "nodes.csv", text)
    files["rels"] = write(files["rels"].parent, "rels.csv", ":START_ID,:END_ID,:TYPE\nC1,C2,R\n")
    files["syn"] = None
    data = read(files)
    assert data.nodes[0].properties["name"] == 'multi\nline, "quoted" name'


def test_bad_label_is_reported_with_its_line(files):
    files["nodes"] = write(files["nodes"].parent, "nodes.csv", "cid:ID,name,:LABEL\nC1,a,Ent\nC2,b,Bad Label\n")
    with pytest.raises(InputDataError, match=r"nodes.csv:3: label 'Bad Label'"):
        read(files)


def test_missing_file_is_an_input_error(files, tmp_path):
    files["nodes"] = tmp_path / "nope.csv"
    with pytest.raises(InputDataError, match="CSV file .*nope.csv does not exist"):
        read(files)


def test_neo4j_admin_command(files):
    command = neo4j_admin_import_command(files["nodes"], files["rels"], database="kg")
    assert command.startswith("neo4j-admin database import full ")
    assert f"--nodes=Ent={files['nodes'].resolve()}" in command
    assert f"--relationships={files['rels'].resolve()}" in command
    assert "--array-delimiter=';'" in command and command.endswith(" kg")
    with pytest.raises(InputDataError):
        neo4j_admin_import_command(files["nodes"], files["rels"], node_label="Ent`) DETACH")


def test_cli_import_fails_or_skips_unknown_ids_and_writes_nothing_on_failure(files, tmp_path, capsys):
    from llama_index_kgplus.cli import main

    files["rels"] = write(files["rels"].parent, "rels.csv", ":START_ID,:END_ID,:TYPE\nC1,C2,R\nC1,C9,R\nC8,C3,R\n")
    store = f"ladybug://{tmp_path / 'kg.lbug'}"
    args = [
        "kg",
        "import",
        "--nodes",
        str(files["nodes"]),
        "--relationships",
        str(files["rels"]),
        "--synonyms",
        str(files["syn"]),
        "--store",
        store,
        "--quiet",
    ]
    assert main(args) == 2
    assert "2 relationships point at ids that are not in the nodes file" in capsys.readouterr().err
    assert main(["kg", "paths", "aspirin", "--store", store]) == 2  # nothing was written
    assert "does not exist" in capsys.readouterr().err  # not even an empty store file
    assert main([*args, "--skip-unknown-ids", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["nodes"], report["relationships"], report["skipped_relationships"]) == (3, 1, 2)
    assert main(["kg", "paths", "ASA for a headache", "--store", store, "--json"]) == 0
    assert [p["text"] for p in json.loads(capsys.readouterr().out)["paths"]] == ["aspirin -[R]-> headache"]


def test_cli_rejects_bad_arguments(capsys):
    from llama_index_kgplus.cli import main

    with pytest.raises(SystemExit):
        main(["kg", "paths", "x", "--max-hops", "9"])
    assert "must be from 1 to 6" in capsys.readouterr().err
    assert main(["kg", "paths"]) == 2
    assert "Give either a TEXT or --questions" in capsys.readouterr().err
