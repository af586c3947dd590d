"""The in-process path engine (``GraphSnapshot`` + search from both ends) against the store's own queries.

Real embedded Ladybug stores (and one FalkorDB server for the gold pairs); no wall-clock assertions.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import json
import pickle
from pathlib import Path

import numpy as np
import pytest

from llama_index_kgplus.cli import main
from llama_index_kgplus.graph_stores import ladybug_uri
from llama_index_kgplus.kg import KGPathFinder, KGPathRetriever, KnowledgeGraph, import_kg
from llama_index_kgplus.kg._snapshot import GraphSnapshot

BENCH = Path("/work/shared/bench-data")
GRAPHS = {"famplex": "kg-famplex", "umls": "kg-umls-semnet"}


def key(path):
    """Everything a path carries, comparable and sortable."""
    props = tuple(tuple(sorted(d.items())) for d in path.rel_properties)
    return path.node_ids, path.node_names, path.rel_types, path.rel_forward, path.rel_keys, props


def keys(paths):
    return sorted(key(p) for p in paths)


def gold_pairs(graph: str) -> list[dict]:
    return [json.loads(x) for x in (BENCH / GRAPHS[graph] / "pairs.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def bench_uris(tmp_path_factory):
    """famplex and UMLS imported once into embedded stores; their URIs."""
    tmp = tmp_path_factory.mktemp("snapshot-bench")
    uris = {}
    for name, folder in GRAPHS.items():
        uri = ladybug_uri(tmp / f"{name}.lbug")
        d = BENCH / folder
        synonyms = d / "synonyms.csv" if (d / "synonyms.csv").is_file() else None
        with KnowledgeGraph.open(uri, create=True) as kg:
            import_kg(kg, d / "nodes.csv", d / "relationships.csv", synonyms)
        uris[name] = uri
    return uris


@pytest.mark.parametrize("graph", ["famplex", "umls"])
def test_snapshot_paths_equal_the_store_on_every_gold_pair(bench_uris, graph):
    pairs = gold_pairs(graph)
    with KnowledgeGraph.open(bench_uris[graph]) as kg:
        for max_hops in (1, 2):
            differ = []
            for p in pairs:
                pair = [(p["lhs"], p["rhs"])]
                store = keys(kg.shortest_paths(pair, max_hops, engine="store"))
                if keys(kg.shortest_paths(pair, max_hops, engine="snapshot")) != store:
                    differ.append(p["text"])
            assert not differ, f"max_hops={max_hops}: {len(differ)} of {len(pairs)} pairs differ, e.g. {differ[:3]}"
        # many pairs in one call, as a question with several entities asks (and the reverse orientation)
        ids = [x for p in pairs[60:70] for x in (p["lhs"], p["rhs"])]
        many = [(a, b) for i, a in enumerate(ids) for b in ids[i + 1 :]]
        many += [(b, a) for a, b in many[:5]]
        assert keys(kg.shortest_paths(many, 2, 100_000, engine="snapshot")) == keys(
            kg.shortest_paths(many, 2, 100_000, engine="store")
        )
        assert kg.path_snapshot("snapshot") is not None


def test_longer_paths_and_neighbours_equal_the_store(bench_uris):
    umls = ["pharmacologic_substance", "disease_or_syndrome", "bacterium", "virus", "organism_function", "age_group"]
    pairs = [(a, b) for i, a in enumerate(umls) for b in umls[i + 1 :]]
    with KnowledgeGraph.open(bench_uris["umls"]) as kg:
        assert keys(kg.shortest_paths(pairs, 3, 100_000, engine="snapshot")) == keys(
            kg.shortest_paths(pairs, 3, 100_000, engine="store")
        )
        ids = [*umls, "no such node"]
        snap = kg.neighbours(ids, engine="snapshot")
        assert len(snap) > 500 and keys(snap) == keys(kg.neighbours(ids, engine="store"))
    far = [p for p in gold_pairs("famplex") if p["distance"] == 3][:5]
    with KnowledgeGraph.open(bench_uris["famplex"]) as kg:
        for hops in (3, 4, 6):
            pairs = [(p["lhs"], p["rhs"]) for p in far]
            snap = kg.shortest_paths(pairs, hops, engine="snapshot")
            assert snap and keys(snap) == keys(kg.shortest_paths(pairs, hops, engine="store"))


def test_async_twins_match(bench_uris):
    pairs = gold_pairs("famplex")[62:72]
    text = ", ".join(p["text"] for p in pairs)
    with KnowledgeGraph.open(bench_uris["famplex"]) as kg:
        finder = KGPathFinder.from_defaults(kg, max_paths=1000, path_engine="snapshot")
        sync = finder.find(text)
        asynchronous = asyncio.run(finder.afind(text))
        store = KGPathFinder.from_defaults(kg, max_paths=1000, path_engine="store").find(text)
        ids = [pairs[0]["lhs"]]
        assert keys(asyncio.run(kg.aneighbours(ids, engine="snapshot"))) == keys(kg.neighbours(ids, engine="store"))
    assert [p.to_dict() for p in asynchronous.paths] == [p.to_dict() for p in sync.paths]
    assert [p.to_dict() for p in store.paths] == [p.to_dict() for p in sync.paths]


# ----------------------------------------------------------------------------------------------- a small graph

NODES = [["cid:ID", "name", ":LABEL"]] + [[c, f"node {c.lower()}", "Ent"] for c in "ABCDEFG"]
RELS = [
    [":START_ID", ":END_ID", ":TYPE", "relname", "rank:int"],
    ["A", "B", "LINKS", "likes", "1"],
    ["A", "B", "LINKS", "knows", "2"],  # parallel, same direction
    ["B", "A", "LINKS", "helps", ""],  # parallel, the other way
    ["B", "C", "TREATS", "treats", "3"],
    ["A", "D", "LINKS", "", "1"],
    ["D", "C", "LINKS", "", "1"],
    ["E", "F", "NEXT", "next", "1"],
]


def write_graph(folder: Path, rels: list[list[str]]) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in (("nodes.csv", NODES), ("rels.csv", rels)):
        with (folder / name).open("w", newline="") as fh:
            csv.writer(fh).writerows(rows)
    return folder / "nodes.csv", folder / "rels.csv"


@pytest.fixture
def toy_uri(tmp_path):
    uri = ladybug_uri(tmp_path / "toy.lbug")
    with KnowledgeGraph.open(uri, create=True) as kg:
        import_kg(kg, *write_graph(tmp_path / "v1", RELS))
    return uri


def flat(paths):
    return sorted(
        " ".join(
            [p.node_ids[0]]
            + [
                f"-[{t}]-> {n}" if f else f"<-[{t}]- {n}"
                for t, f, n in zip((r["relname"] for r in p.rel_properties), p.rel_forward, p.node_ids[1:])
            ]
        )
        for p in paths
    )


def test_parallel_relationships_are_expanded_with_distinct_keys(toy_uri):
    with KnowledgeGraph.open(toy_uri) as kg:
        snap = kg.shortest_paths([("A", "C"), ("C", "E")], 2, engine="snapshot")
        assert keys(snap) == keys(kg.shortest_paths([("A", "C"), ("C", "E")], 2, engine="store"))
        assert flat(snap) == [
            "A -[None]-> D -[None]-> C",
            "A -[knows]-> B -[treats]-> C",
            "A -[likes]-> B -[treats]-> C",
            "A <-[helps]- B -[treats]-> C",
        ]
        direct = kg.shortest_paths([("B", "A")], 1, engine="snapshot")
        assert flat(direct) == ["B -[helps]-> A", "B <-[knows]- A", "B <-[likes]- A"]
        assert len({p.rel_keys for p in direct}) == 3
        assert [p.rel_properties[0]["rank"] for p in sorted(direct, key=lambda p: p.rel_keys)] == [1, 2, None]
        assert kg.shortest_paths([("A", "A"), ("A", "unknown")], 2, engine="snapshot") == []
        with pytest.raises(ValueError):
            kg.shortest_paths([("A", "C")], 7, engine="snapshot")


def test_the_snapshot_adjacency_serves_pagerank(toy_uri):
    from llama_index_kgplus.entity_graph._pagerank import personalized_pagerank, transition_matrix

    with KnowledgeGraph.open(toy_uri) as kg:
        snapshot = kg.path_snapshot()
    adjacency = snapshot.adjacency()
    a, b, e = snapshot.index_of(["A", "B", "E"]).tolist()
    assert adjacency[a, b] == adjacency[b, a] == 3  # three parallel relationships
    seeds = np.zeros(snapshot.n_nodes)
    seeds[a] = 1.0
    scores = personalized_pagerank(transition_matrix(adjacency), seeds, damping=0.5)
    assert scores[b] > scores[e] == 0.0


def test_the_limit_bounds_the_paths_and_says_so(toy_uri, caplog):
    with KnowledgeGraph.open(toy_uri) as kg, caplog.at_level("WARNING"):
        paths = KGPathFinder.from_defaults(kg, max_rows=2, path_engine="snapshot").find("node a and node c").paths
    assert len(paths) == 2
    assert "returned its row limit (2)" in caplog.text


def snapshot_files(uri: str) -> list[Path]:
    folder = Path(uri.removeprefix("ladybug://") + ".kgplus")
    return sorted(folder.glob("path-snapshot-*.npz"))


def test_a_snapshot_older_than_the_store_is_rebuilt_not_used(toy_uri, tmp_path):
    with KnowledgeGraph.open(toy_uri) as kg:
        assert flat(kg.shortest_paths([("A", "G")], 2)) == []  # auto: the snapshot on an embedded store
        assert kg.path_snapshot() is not None
    [old_file] = snapshot_files(toy_uri)
    old_token = GraphSnapshot.load(old_file).token
    with KnowledgeGraph.open(toy_uri) as kg:  # unchanged store: loaded from the file, not built
        assert kg.path_snapshot() is not None and kg.snapshot_cache.build_seconds_ is None

    # a write outside the import (no new import id) that changes the counts, through another handle
    with KnowledgeGraph.open(toy_uri, path_engine="store") as kg:
        kg.dialect.run(
            kg.store,
            "MATCH (a:Ent {cid: 'A'}), (g:Ent {cid: 'G'}) CREATE (a)-[:Rel {label: 'LINKS', relname: 'new'}]->(g)",
        )
    with KnowledgeGraph.open(toy_uri) as kg:
        assert flat(kg.shortest_paths([("A", "G")], 2)) == ["A -[new]-> G"]
        [new_file] = snapshot_files(toy_uri)
        assert GraphSnapshot.load(new_file).token["relationships"] == old_token["relationships"] + 1

        # the same handle sees a write after refresh()
        kg.dialect.run(kg.store, "MATCH (:Ent {cid: 'A'})-[r:Rel {relname: 'new'}]->(:Ent {cid: 'G'}) DELETE r")
        kg.refresh()
        assert flat(kg.shortest_paths([("A", "G")], 2)) == []

        # a new import (replace=True) with the same counts: a new import id
        rels = [row if row[:2] != ["E", "F"] else ["E", "G", "NEXT", "next", "1"] for row in RELS]
        import_kg(kg, *write_graph(tmp_path / "v2", rels), replace=True)
    with KnowledgeGraph.open(toy_uri) as kg:
        assert flat(kg.shortest_paths([("E", "G"), ("E", "F")], 2)) == ["E -[next]-> G"]
        [newest] = snapshot_files(toy_uri)
        assert GraphSnapshot.load(newest).token["import_id"] == kg.manifest.import_id != old_token["import_id"]


@pytest.mark.parametrize("damage", ["truncate", "garbage", "foreign", "incomplete"])
def test_a_damaged_snapshot_file_is_rebuilt_with_a_warning(toy_uri, damage, caplog):
    with KnowledgeGraph.open(toy_uri) as kg:
        expected = keys(kg.shortest_paths([("A", "C")], 2, engine="store"))
        assert kg.path_snapshot() is not None
    [path] = snapshot_files(toy_uri)
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        path.write_bytes(b"not a zip file" * 100)
    else:  # a valid npz that is no snapshot, or one whose header lacks what the arrays need
        with np.load(path) as old:
            arrays = {k: old[k] for k in old.files if k != "header"}
        header = b'{"format": "other"}' if damage == "foreign" else b'{"format": "kgplus-path-snapshot", "version": 1}'
        with path.open("wb") as fh:
            np.savez(fh, header=np.frombuffer(header, dtype=np.uint8), **arrays)
    with KnowledgeGraph.open(toy_uri) as kg, caplog.at_level("WARNING"):
        assert keys(kg.shortest_paths([("A", "C")], 2)) == expected
    assert "Rebuilding the path snapshot" in caplog.text
    [path] = snapshot_files(toy_uri)
    assert GraphSnapshot.load(path).n_relationships == len(RELS) - 1


def test_store_engine_never_builds_a_snapshot(toy_uri):
    with KnowledgeGraph.open(toy_uri, path_engine="store") as kg:
        finder = KGPathFinder.from_defaults(kg)
        finder.warm_up()
        assert finder.find("node a and node c").paths
        assert kg.neighbours(["A"]) and kg.path_snapshot() is None
    with KnowledgeGraph.open(toy_uri) as kg:  # auto graph, finder asks for the store
        finder = KGPathFinder.from_defaults(kg, path_engine="store")
        finder.warm_up()
        assert finder.find("node a and node c").paths and finder.find("node e").paths
    assert snapshot_files(toy_uri) == []
    with pytest.raises(ValueError, match="path_engine"):
        KnowledgeGraph.open(toy_uri, path_engine="fast")


def test_too_large_a_graph_falls_back_to_the_store_query(toy_uri, caplog):
    store, _ = KnowledgeGraph.open(toy_uri).store, None
    kg = KnowledgeGraph(store, owns_store=True, path_engine="snapshot", max_snapshot_edges=3)
    with kg, caplog.at_level("WARNING"):
        assert kg.path_snapshot() is None
        assert flat(kg.shortest_paths([("A", "C")], 2))[0] == "A -[None]-> D -[None]-> C"
    assert "more than the path snapshot's max_edges (3)" in caplog.text


def test_a_snapshot_that_cannot_be_built_falls_back_to_the_store_query(toy_uri, monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise MemoryError("no room")

    monkeypatch.setattr(GraphSnapshot, "from_columns", broken)
    with KnowledgeGraph.open(toy_uri, path_engine="snapshot") as kg, caplog.at_level("WARNING"):
        assert keys(kg.shortest_paths([("A", "C")], 2)) == keys(kg.shortest_paths([("A", "C")], 2, engine="store"))
        assert kg.path_snapshot() is None
    assert "Cannot build the path snapshot (MemoryError: no room)" in caplog.text
    assert caplog.text.count("Cannot build") == 1  # not retried until the store changes


def test_a_retriever_with_a_snapshot_pickles(toy_uri):
    retriever = KGPathRetriever.from_defaults(toy_uri, path_engine="snapshot")
    expected = [h.node.text for h in retriever.retrieve("node a and node c")]
    assert retriever.finder.graph.path_snapshot() is not None
    data = pickle.dumps(retriever)
    retriever.finder.graph.close()
    assert b"nbr" not in data  # the arrays stay behind: the copy loads the file
    copy = pickle.loads(data)
    try:
        assert copy.finder.path_engine == "snapshot"
        assert [h.node.text for h in copy.retrieve("node a and node c")] == expected
    finally:
        copy.finder.graph.close()


def test_cli_path_engine_option(toy_uri):
    for engine in ("store", "snapshot"):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(["kg", "paths", "node a and node c", "--store", toy_uri, "--json", "--path-engine", engine])
        assert code == 0
        assert len(json.loads(out.getvalue())["paths"]) == 4
    with pytest.raises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
        main(["kg", "paths", "node a", "--store", toy_uri, "--path-engine", "fast"])


@pytest.mark.slow  # starts a FalkorDB server
def test_snapshot_on_falkordb_equals_its_store_on_the_gold_pairs(falkordb_port):
    for graph, folder in GRAPHS.items():
        d = BENCH / folder
        with KnowledgeGraph.open(f"falkordb://127.0.0.1:{falkordb_port}", database=f"snap-{graph}") as kg:
            synonyms = d / "synonyms.csv" if (d / "synonyms.csv").is_file() else None
            import_kg(kg, d / "nodes.csv", d / "relationships.csv", synonyms)
            assert kg.path_snapshot() is None  # auto: the store query on a server
            differ = [
                p["text"]
                for p in gold_pairs(graph)
                if keys(kg.shortest_paths([(p["lhs"], p["rhs"])], 2, engine="snapshot"))
                != keys(kg.shortest_paths([(p["lhs"], p["rhs"])], 2, engine="store"))
            ]
            assert not differ, f"{graph}: {len(differ)} pairs differ, e.g. {differ[:3]}"


def test_a_graph_llamaindex_wrote_gets_its_snapshot_in_memory_only(tmp_path):
    """No import id: an edit that keeps both counts would go unseen by a file, so none is written."""
    from llama_index.core.graph_stores.types import EntityNode, Relation

    uri = f"ladybug://{tmp_path / 'pg.lbug'}"
    with KnowledgeGraph.open(uri, create=True) as kg:
        kg.store.upsert_nodes([EntityNode(name="virus", label="ORGANISM"), EntityNode(name="fever", label="SYMPTOM")])
        kg.store.upsert_relations([Relation(label="CAUSES", source_id="virus", target_id="fever")])
        [path] = kg.shortest_paths([("virus", "fever")], 2)
        assert (path.node_ids, path.rel_types) == (("virus", "fever"), ("CAUSES",))
        assert kg.path_snapshot() is not None
    assert snapshot_files(uri) == []
