"""Read a knowledge graph from CSV files in the neo4j-admin import format, with positioned error messages.

Header conventions (as ``neo4j-admin database import full`` reads them):

- nodes: one ``name:ID`` column (``:ID`` alone stores the id as ``id``; an id space ``:ID(Space)`` is accepted),
  an optional ``:LABEL`` column (several labels separated by ``;``), property columns;
- relationships: ``:START_ID``, ``:END_ID``, ``:TYPE`` (or a default type), property columns;
- a property column is ``name`` (a string) or ``name:type`` with type ``int``/``long``/``short``/``byte``
  (integers), ``float``/``double``, ``boolean``, ``string``/``char``, or an array ``type[]`` (values separated
  by ``;``). Temporal and point types are kept as their text. ``name:IGNORE`` columns are skipped;
- an empty field means "no property", as in neo4j-admin.

The optional synonyms file has two columns: the node id (``cid``, ``id`` or the nodes file's id column name)
and ``synonym``.

Example:

```python
data = read_kg_csv("nodes.csv", "relationships.csv", synonyms="synonyms.csv")
data.node_count, data.relationship_count, data.name_property
```
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from llama_index_kgplus._files import read_utf8
from llama_index_kgplus.errors import InputDataError
from llama_index_kgplus.graph_stores._dialects import IDENTIFIER_RE, NodeRecord, RelRecord

#: Name columns tried in order when none is given.
NAME_COLUMNS = ("name", "cfname", "title", "label", "preferred_name", "pref_label")
#: Property names the stores use themselves.
RESERVED_NODE_PROPERTIES = ("labels", "synonyms")
RESERVED_REL_PROPERTIES = ("label",)  # Ladybug: the column holding the relationship type

_INT_TYPES = {"int", "long", "short", "byte"}
_FLOAT_TYPES = {"float", "double"}
_STRING_TYPES = {"string", "char", "date", "time", "datetime", "localtime", "localdatetime", "duration", "point"}
_SPECIAL = {"id", "start_id", "end_id", "type", "label", "ignore"}
_HEADER_RE = re.compile(
    r"^(?P<name>.*?)(?::(?P<type>[A-Za-z_]+)(?P<space>\([^)]*\))?(?P<array>\[\])?(?P<opts>\{.*\})?)?$", re.DOTALL
)
_MAX_LISTED = 5


@dataclass(frozen=True)
class Column:
    """One header field: ``kind`` is ``id``, ``start_id``, ``end_id``, ``type``, ``label``, ``ignore`` or
    ``property`` (then ``value_type`` is ``string``/``int``/``float``/``boolean``, with ``[]`` for arrays)."""

    index: int
    header: str
    name: str
    kind: str
    value_type: str = "string"
    id_space: str | None = None


@dataclass
class KGData:
    """A validated graph read from CSV files."""

    nodes: list[NodeRecord]
    relationships: list[RelRecord]
    aliases: list[tuple[str, str]]
    id_property: str
    name_property: str
    node_properties: dict[str, str]
    rel_properties: dict[str, str]
    rel_types: tuple[str, ...]
    labels: tuple[str, ...]
    skipped_relationships: int = 0
    skipped_aliases: int = 0
    warnings: list[str] = field(default_factory=list)

    @property
    def node_count(self) -> int:
        return len(self.nodes)

    @property
    def relationship_count(self) -> int:
        return len(self.relationships)


def read_text(path: str | Path) -> str:
    """A file's text as UTF-8 (a BOM is dropped), or an :class:`InputDataError` naming the line of a bad byte."""
    return read_utf8(path, "CSV file")


def _rows(path: Path, delimiter: str) -> Iterator[tuple[int, list[str]]]:
    """``(line number, fields)`` of every non-blank record; the header comes first."""
    text = read_text(path)
    if not text.strip():
        raise InputDataError(f"{path} is empty: it needs a header line (neo4j-admin format) and rows.")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    start, seen = 1, False
    try:
        for fields in reader:
            if fields and any(f.strip() for f in fields):
                seen = True
                yield start, fields
            start = reader.line_num + 1
    except csv.Error as exc:
        raise InputDataError(f"{path}:{reader.line_num}: malformed CSV ({exc}).") from exc
    if not seen:
        raise InputDataError(f"{path} has no header line (only empty fields): it needs a neo4j-admin header and rows.")


def parse_header(fields: list[str], path: Path) -> list[Column]:
    """Parse a neo4j-admin header line into columns; unknown types and bad names fail with a clear message."""
    columns: list[Column] = []
    seen: dict[tuple[str, ...] | str, str] = {}
    for index, raw in enumerate(fields):
        header = raw.strip()
        match = _HEADER_RE.match(header)
        assert match is not None  # the pattern matches any string
        name, typ = match["name"].strip(), (match["type"] or "").lower()
        space = match["space"][1:-1] if match["space"] else None
        if typ in _SPECIAL:
            kind, value_type = typ, "string"
            if match["array"]:
                raise InputDataError(f"{path}:1: column {header!r}: {typ.upper()} cannot be an array.")
        elif typ == "" or typ in _INT_TYPES | _FLOAT_TYPES | _STRING_TYPES | {"boolean"}:
            kind = "property"
            base = (
                "int"
                if typ in _INT_TYPES
                else "float"
                if typ in _FLOAT_TYPES
                else ("boolean" if typ == "boolean" else "string")
            )
            value_type = base + ("[]" if match["array"] else "")
            if not name:
                raise InputDataError(f"{path}:1: column {index + 1} has no name (header {header!r}).")
        else:
            raise InputDataError(
                f"{path}:1: column {header!r}: unknown type {match['type']!r}. Use ID, START_ID, END_ID, TYPE, "
                "LABEL, IGNORE or a value type (int, long, float, double, boolean, string, ... with [] for arrays)."
            )
        if kind == "property" and not IDENTIFIER_RE.fullmatch(name):
            raise InputDataError(
                f"{path}:1: column name {name!r} is not a plain identifier (letters, digits, '_'): rename it."
            )
        if kind not in ("ignore",):
            key = name if kind in ("property", "id") and name else f":{kind}"
            if key in seen:
                raise InputDataError(f"{path}:1: column {header!r} repeats column {seen[key]!r}.")
            seen[key] = header
        columns.append(Column(index, header, name, kind, value_type, space))
    return columns


def _convert(value: str, value_type: str, array_delimiter: str) -> Any:
    if value_type.endswith("[]"):
        base = value_type[:-2]
        return [_convert(v.strip(), base, array_delimiter) for v in value.split(array_delimiter) if v.strip()]
    if value_type == "int":
        return int(value.strip())
    if value_type == "float":
        return float(value.strip())
    if value_type == "boolean":
        low = value.strip().lower()
        if low not in ("true", "false"):
            raise ValueError(f"{value!r} is not true or false")
        return low == "true"
    return value


def _properties(
    columns: list[Column], fields: list[str], path: Path, line: int, array_delimiter: str
) -> dict[str, Any]:
    props = {}
    for col in columns:
        raw = fields[col.index]
        if raw == "":
            continue
        if col.value_type == "string":  # the common case, no conversion
            props[col.name] = raw
            continue
        try:
            props[col.name] = _convert(raw, col.value_type, array_delimiter)
        except ValueError as exc:
            raise InputDataError(
                f"{path}:{line}: column {col.header!r}: {raw!r} is not a valid {col.value_type} ({exc})."
            ) from exc
    return props


def _one(columns: list[Column], kind: str, path: Path, hint: str) -> Column | None:
    found = [c for c in columns if c.kind == kind]
    if len(found) > 1:
        raise InputDataError(f"{path}:1: more than one :{kind.upper()} column ({', '.join(c.header for c in found)}).")
    if not found and hint:
        raise InputDataError(f"{path}:1: {hint}")
    return found[0] if found else None


def _missing_hint(columns: list[Column], wanted: str, candidates: tuple[str, ...]) -> str:
    names = [c.header for c in columns]
    close = [
        c.header for c in columns if c.name.lower().strip(":") in candidates or c.header.upper().strip(":") == wanted
    ]
    text = f"no ':{wanted}' column (found: {', '.join(names)})."
    if close:
        prefix = close[0].split(":")[0] if wanted == "ID" else ""  # the id column's name becomes its property
        text += f" Did you mean '{prefix}:{wanted}' for column {close[0]!r}?"
    return text


def _check_identifier(value: str, what: str, path: Path, line: int) -> str:
    if not IDENTIFIER_RE.fullmatch(value):
        raise InputDataError(
            f"{path}:{line}: {what} {value!r} is not a plain identifier (letters, digits, '_', not starting "
            "with a digit)."
        )
    return value


def _unknown_ids_error(path: Path, count: int, first: list[str], what: str) -> InputDataError:
    more = f" and {count - len(first)} more" if count > len(first) else ""
    return InputDataError(
        f"{path}: {count} {what} ids that are not in the nodes file ({'; '.join(first)}{more}). Fix the files, "
        "or skip them with --skip-unknown-ids (on_unknown_id='skip')."
    )


def _listed(items: list[str]) -> str:
    more = f" and {len(items) - _MAX_LISTED} more" if len(items) > _MAX_LISTED else ""
    return "; ".join(items[:_MAX_LISTED]) + more


def read_nodes(
    path: str | Path, *, name_column: str | None = None, delimiter: str = ",", array_delimiter: str = ";"
) -> tuple[list[NodeRecord], str, str, dict[str, str], str | None]:
    """Nodes, the id property, the name property, the property types and the id space."""
    path = Path(path)
    rows = _rows(path, delimiter)
    _, header = next(rows)
    columns = parse_header(header, path)
    for kind in ("start_id", "end_id", "type"):
        if any(c.kind == kind for c in columns):
            raise InputDataError(
                f"{path}:1: a nodes file has no :{kind.upper()} column; is this the relationships file?"
            )
    id_col = _one(columns, "id", path, _missing_hint(columns, "ID", ("id", "cid", "identifier", "node_id")))
    assert id_col is not None
    id_property = id_col.name or "id"
    label_col = _one(columns, "label", path, "")
    props = [c for c in columns if c.kind == "property"]
    for col in props:
        if col.name in RESERVED_NODE_PROPERTIES or col.name == id_property:
            raise InputDataError(f"{path}:1: column {col.header!r}: {col.name!r} is reserved; rename the column.")
    prop_names = [c.name for c in props]
    if name_column is not None:
        if name_column not in prop_names:
            raise InputDataError(
                f"{path}:1: name column {name_column!r} not found; property columns are: {', '.join(prop_names)}."
            )
        name_property = name_column
    else:
        found = next((n for n in NAME_COLUMNS if n in prop_names), None)
        if found is None:
            raise InputDataError(
                f"{path}:1: no name column: expected one of {', '.join(NAME_COLUMNS)}; property columns are: "
                f"{', '.join(prop_names) or '(none)'}. Name the column to use with --name-column / name_column."
            )
        name_property = found
    nodes: list[NodeRecord] = []
    first_line: dict[str, int] = {}
    duplicates: list[str] = []
    width = len(columns)
    for line, fields in rows:
        if len(fields) != width:
            raise InputDataError(f"{path}:{line}: {len(fields)} fields, the header has {width}.")
        node_id = fields[id_col.index].strip()
        if not node_id:
            raise InputDataError(f"{path}:{line}: empty id in column {id_col.header!r}.")
        if node_id in first_line:
            duplicates.append(f"{node_id!r} at line {line} (first at line {first_line[node_id]})")
            continue
        first_line[node_id] = line
        labels: tuple[str, ...] = ()
        if label_col is not None:
            labels = tuple(
                _check_identifier(lb.strip(), "label", path, line)
                for lb in fields[label_col.index].split(array_delimiter)
                if lb.strip()
            )
        nodes.append(NodeRecord(node_id, labels, _properties(props, fields, path, line, array_delimiter)))
    if duplicates:
        raise InputDataError(f"{path}: {len(duplicates)} duplicate ids: {_listed(duplicates)}. Ids must be unique.")
    if not nodes:
        raise InputDataError(f"{path} has a header but no rows: a graph needs nodes.")
    return nodes, id_property, name_property, {c.name: c.value_type for c in props}, id_col.id_space


def read_kg_csv(
    nodes: str | Path,
    relationships: str | Path,
    synonyms: str | Path | None = None,
    *,
    name_column: str | None = None,
    default_type: str | None = None,
    on_unknown_id: Literal["fail", "skip"] = "fail",
    delimiter: str = ",",
    array_delimiter: str = ";",
) -> KGData:
    """Read and validate the nodes, relationships and (optional) synonyms files.

    Relationships or synonyms that name ids missing from the nodes file are counted; ``on_unknown_id="fail"``
    (default) raises with the first of them, ``"skip"`` leaves them out and records how many.
    """
    if on_unknown_id not in ("fail", "skip"):
        raise ValueError(f"on_unknown_id must be 'fail' or 'skip', got {on_unknown_id!r}.")
    node_records, id_property, name_property, node_props, id_space = read_nodes(
        nodes, name_column=name_column, delimiter=delimiter, array_delimiter=array_delimiter
    )
    ids = {n.id for n in node_records}
    rels, rel_props, skipped_rels = _read_relationships(
        Path(relationships), ids, id_space, default_type, on_unknown_id, delimiter, array_delimiter
    )
    aliases: list[tuple[str, str]] = []
    skipped_aliases = 0
    if synonyms is not None:
        aliases, skipped_aliases = _read_synonyms(Path(synonyms), ids, id_property, on_unknown_id, delimiter)
    data = KGData(
        nodes=node_records,
        relationships=rels,
        aliases=aliases,
        id_property=id_property,
        name_property=name_property,
        node_properties=node_props,
        rel_properties=rel_props,
        rel_types=tuple(sorted({r.type for r in rels})),
        labels=tuple(sorted({lb for n in node_records for lb in n.labels})),
        skipped_relationships=skipped_rels,
        skipped_aliases=skipped_aliases,
    )
    if skipped_rels:
        data.warnings.append(f"skipped {skipped_rels} relationships that point at unknown ids")
    if skipped_aliases:
        data.warnings.append(f"skipped {skipped_aliases} synonyms of unknown ids")
    if not rels:
        data.warnings.append(f"{relationships} has no relationships: paths will be empty")
    return data


def _read_relationships(
    path: Path,
    ids: set[str],
    id_space: str | None,
    default_type: str | None,
    on_unknown_id: str,
    delimiter: str,
    array_delimiter: str,
) -> tuple[list[RelRecord], dict[str, str], int]:
    rows = _rows(path, delimiter)
    _, header = next(rows)
    columns = parse_header(header, path)
    if any(c.kind == "id" for c in columns):
        raise InputDataError(f"{path}:1: a relationships file has no :ID column; is this the nodes file?")
    start = _one(
        columns, "start_id", path, _missing_hint(columns, "START_ID", ("start", "start_id", "source", "from", "src"))
    )
    end = _one(columns, "end_id", path, _missing_hint(columns, "END_ID", ("end", "end_id", "target", "to", "dst")))
    assert start is not None and end is not None
    for col in (start, end):
        if col.id_space != id_space:
            raise InputDataError(
                f"{path}:1: column {col.header!r} uses id space {col.id_space!r} but the nodes use {id_space!r}."
            )
    type_col = _one(
        columns,
        "type",
        path,
        ""
        if default_type
        else _missing_hint(columns, "TYPE", ("type", "rel_type", "relationship"))
        + " Or give a default relationship type.",
    )
    if default_type:
        _check_identifier(default_type, "default relationship type", path, 1)
    props = [c for c in columns if c.kind == "property"]
    for col in props:
        if col.name in RESERVED_REL_PROPERTIES:
            raise InputDataError(f"{path}:1: column {col.header!r}: {col.name!r} is reserved; rename the column.")
    rels: list[RelRecord] = []
    unknown: list[str] = []
    width, unknown_count = len(columns), 0
    checked_types: set[str] = set()
    for line, fields in rows:
        if len(fields) != width:
            raise InputDataError(f"{path}:{line}: {len(fields)} fields, the header has {width}.")
        s, e = fields[start.index].strip(), fields[end.index].strip()
        if not s or not e:
            raise InputDataError(f"{path}:{line}: empty :START_ID or :END_ID.")
        rel_type = fields[type_col.index].strip() if type_col is not None else ""
        rel_type = rel_type or default_type or ""
        if not rel_type:
            raise InputDataError(f"{path}:{line}: empty :TYPE and no default relationship type.")
        if rel_type not in checked_types:
            checked_types.add(_check_identifier(rel_type, "relationship type", path, line))
        missing = [x for x in (s, e) if x not in ids]
        if missing:
            unknown_count += 1
            if len(unknown) < _MAX_LISTED:
                unknown.append(f"line {line}: {', '.join(repr(m) for m in missing)}")
            continue
        rels.append(RelRecord(s, e, rel_type, _properties(props, fields, path, line, array_delimiter)))
    if unknown_count and on_unknown_id == "fail":
        raise _unknown_ids_error(path, unknown_count, unknown, "relationships point at")
    return rels, {c.name: c.value_type for c in props}, unknown_count


def _read_synonyms(
    path: Path, ids: set[str], id_property: str, on_unknown_id: str, delimiter: str
) -> tuple[list[tuple[str, str]], int]:
    rows = _rows(path, delimiter)
    _, header = next(rows)
    names = [h.strip() for h in header]
    plain = [h.split(":")[0].lower() for h in names]
    id_candidates = (id_property.lower(), "cid", "id")
    id_idx = next((i for i, h in enumerate(plain) if h in id_candidates), None)
    syn_idx = next((i for i, h in enumerate(plain) if h in ("synonym", "synonyms", "alias")), None)
    if id_idx is None or syn_idx is None or id_idx == syn_idx:
        raise InputDataError(
            f"{path}:1: a synonyms file needs the columns '{id_property}' (or 'cid'/'id') and 'synonym'; "
            f"found: {', '.join(names)}."
        )
    out: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    unknown: list[str] = []
    unknown_count = 0
    for line, fields in rows:
        if len(fields) != len(names):
            raise InputDataError(f"{path}:{line}: {len(fields)} fields, the header has {len(names)}.")
        node_id, synonym = fields[id_idx].strip(), fields[syn_idx].strip()
        if not node_id or not synonym:
            raise InputDataError(f"{path}:{line}: empty id or synonym.")
        if node_id not in ids:
            unknown_count += 1
            if len(unknown) < _MAX_LISTED:
                unknown.append(f"line {line}: {node_id!r}")
            continue
        if (node_id, synonym) not in seen:
            seen.add((node_id, synonym))
            out.append((node_id, synonym))
    if unknown_count and on_unknown_id == "fail":
        raise _unknown_ids_error(path, unknown_count, unknown, "synonyms name")
    return out, unknown_count
