"""The Ladybug (embedded Kuzu fork) dialect: typed tables, ``COPY FROM`` loads, ``ALL SHORTEST`` paths."""

from __future__ import annotations

import csv
import importlib.util
import math
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from llama_index_kgplus.errors import GraphStoreError, InputDataError
from llama_index_kgplus.graph_stores._dialect_base import (
    META_LABEL,
    SCALAR_TYPES,
    GraphDialect,
    GraphLayout,
    NodeRecord,
    RawPath,
    RelRecord,
    _check_hops,
    _decode_path,
    quote_identifier,
)
from llama_index_kgplus.graph_stores._drivers import LadybugDriver, result_rows

_LADYBUG_TYPES = {"string": "STRING", "int": "INT64", "float": "DOUBLE", "boolean": "BOOLEAN"}
_UNSAFE_LIST_ITEM = re.compile(r"[,\[\]{}\"'\\\n\r]")


class LadybugDialect(GraphDialect):
    """Ladybug (embedded Kuzu fork): typed tables, ``ALL SHORTEST`` recursive patterns, ``COPY FROM`` loads.

    The graph gets its own tables, separate from the ``Entity``/``Chunk`` tables that
    ``LadybugPropertyGraphStore`` creates: a node table ``layout.node_label`` (extra labels in a list column),
    one relationship table ``layout.rel_table`` (the type in a column), a table ``<label>Alias`` for aliases
    and ``KGPlusMeta`` for key/value records. Chunk nodes are therefore never on a path.

    Shortest paths take every pair of the question's ids in one statement: the sources and targets are given
    as lists (``a.id IN $ids``), which lets the engine run one bounded search per source; pairs given one by
    one through ``UNWIND`` defeat that optimisation here (about a second per pair on the 135-node UMLS graph
    instead of milliseconds). A single pair uses both primary keys directly.
    """

    engine = "ladybug"
    driver_type = LadybugDriver

    async def arun(self, store: Any, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        conn = getattr(store, "async_connection", None)
        if conn is None:
            return await super().arun(store, query, params)
        try:
            return result_rows(await conn.execute(query, params or {}))
        except Exception as exc:
            raise self._error(exc) from exc

    def close(self, store: Any) -> None:
        LadybugDriver.close_store(store)

    def _tables(self, store: Any) -> set[str]:
        return {row["name"] for row in self.run(store, "CALL show_tables() RETURN name")}

    # key/value records
    def read_meta(self, store: Any, key: str) -> str | None:
        if META_LABEL not in self._tables(store):
            return None
        rows = self.run(store, f"MATCH (m:{META_LABEL} {{key: $key}}) RETURN m.value AS value", {"key": key})
        return rows[0]["value"] if rows else None

    def write_meta(self, store: Any, key: str, value: str) -> None:
        self.run(store, f"CREATE NODE TABLE IF NOT EXISTS {META_LABEL}(key STRING PRIMARY KEY, value STRING)")
        self.run(store, f"MERGE (m:{META_LABEL} {{key: $key}}) SET m.value = $value", {"key": key, "value": value})

    def delete_meta(self, store: Any, key: str) -> None:
        if META_LABEL in self._tables(store):
            self.run(store, f"MATCH (m:{META_LABEL} {{key: $key}}) DELETE m", {"key": key})

    def property_graph_layout(self, store: Any) -> GraphLayout | None:
        # LlamaIndex's Ladybug store: entities in `Entity` (id = name), entity-entity relations in `LINKS`, the type
        # in its `label` column; chunks and MENTIONS live in other tables, so no path runs through them. The store
        # creates these tables when it opens: only entities in them make a graph.
        tables = self._tables(store)
        if {"Entity", "LINKS"} <= tables and self.run(store, "MATCH (n:Entity) RETURN n.id LIMIT 1"):
            return GraphLayout(
                node_label="Entity", id_property="id", name_property="name", rel_types=("LINKS",), rel_table="LINKS",
                type_column="label",
            )  # fmt: skip
        # an imported graph whose manifest is gone: its tables have the columns LlamaIndex reads
        node, rel = "Ent", "Rel"
        if not {node, rel} <= tables or not {"id", "name"} <= self._columns(store, node):
            return None
        rel_columns = self._columns(store, rel)
        if "label" not in rel_columns:
            return None
        types = sorted(str(r["t"]) for r in self.run(store, f"MATCH ()-[r:{rel}]->() RETURN DISTINCT r.label AS t"))
        return GraphLayout(
            node_label=node, id_property="id", name_property="name", rel_types=tuple(types) or ("RELATED_TO",),
            rel_properties=tuple(sorted(rel_columns - {"label"})), rel_table=rel, type_column="label",
        )  # fmt: skip

    def _columns(self, store: Any, table: str) -> set[str]:
        return {row["name"] for row in self.run(store, f"CALL TABLE_INFO('{table}') RETURN name")}

    # schema
    def count_nodes(self, store: Any, layout: GraphLayout) -> int:
        if layout.node_label not in self._tables(store):
            return 0
        rows = self.run(store, f"MATCH (n:{quote_identifier(layout.node_label)}) RETURN count(n) AS n")
        return int(rows[0]["n"]) if rows else 0

    def create_schema(
        self, store: Any, layout: GraphLayout, node_properties: dict[str, str], rel_properties: dict[str, str]
    ) -> None:
        node_cols = [f"{quote_identifier(layout.id_property)} STRING PRIMARY KEY"]
        node_cols += [
            f"{quote_identifier(k)} {self._column_type(t)}"
            for k, t in node_properties.items()
            if k != layout.id_property
        ]
        node_cols.append(f"{quote_identifier(layout.labels_column)} STRING[]")
        label = quote_identifier(layout.node_label)
        rel_cols = [f"{quote_identifier(layout.type_column)} STRING"]
        rel_cols += [f"{quote_identifier(k)} {self._column_type(t)}" for k, t in rel_properties.items()]
        self.run(store, f"CREATE NODE TABLE {label}({', '.join(node_cols)})")
        self.run(
            store,
            f"CREATE REL TABLE {quote_identifier(layout.rel_table)}(FROM {label} TO {label}, {', '.join(rel_cols)})",
        )
        self._create_alias_table(store, layout)

    def _create_alias_table(self, store: Any, layout: GraphLayout) -> None:
        self.run(
            store,
            f"CREATE NODE TABLE IF NOT EXISTS {quote_identifier(layout.alias_table)}"
            f"(aid SERIAL PRIMARY KEY, node_id STRING, alias STRING)",
        )

    @staticmethod
    def _column_type(value_type: str) -> str:
        base = value_type[:-2] if value_type.endswith("[]") else value_type
        if base not in _LADYBUG_TYPES:
            raise InputDataError(f"Unsupported property type {value_type!r}; use one of {SCALAR_TYPES} or arrays.")
        return _LADYBUG_TYPES[base] + ("[]" if value_type.endswith("[]") else "")

    def drop_graph(self, store: Any, layout: GraphLayout) -> None:
        tables = self._tables(store)
        for name in (layout.rel_table, layout.alias_table, layout.node_label):
            if name in tables:
                self.run(store, f"DROP TABLE {quote_identifier(name)}")

    # writes: COPY FROM a temporary CSV (UNWIND ... CREATE is orders of magnitude slower on this engine)
    def write_nodes(
        self,
        store: Any,
        layout: GraphLayout,
        nodes: Sequence[NodeRecord],
        node_properties: dict[str, str],
        batch_size: int = 10_000,
        progress: Any = None,
    ) -> int:
        columns = [(k, self._converter(t)) for k, t in node_properties.items() if k != layout.id_property]
        labels_value = self._converter("string[]")

        def rows() -> Iterator[list[Any]]:
            for node in nodes:
                props = node.properties
                yield [
                    node.id,
                    *(conv(props.get(c)) for c, conv in columns),
                    labels_value(sorted({layout.node_label, *node.labels})),
                ]

        return self._copy(store, layout.node_label, None, rows(), len(nodes), progress)

    def write_relationships(
        self,
        store: Any,
        layout: GraphLayout,
        rels: Sequence[RelRecord],
        rel_properties: dict[str, str],
        batch_size: int = 10_000,
        progress: Any = None,
    ) -> int:
        columns = [(k, self._converter(t)) for k, t in rel_properties.items()]

        def rows() -> Iterator[list[Any]]:
            for rel in rels:
                props = rel.properties
                yield [rel.start, rel.end, rel.type, *(conv(props.get(c)) for c, conv in columns)]

        return self._copy(store, layout.rel_table, None, rows(), len(rels), progress)

    def write_aliases(
        self, store: Any, layout: GraphLayout, aliases: Sequence[tuple[str, str]], batch_size: int = 10_000
    ) -> int:
        self._create_alias_table(store, layout)
        self.run(store, f"MATCH (s:{quote_identifier(layout.alias_table)}) DELETE s")  # replace, not add
        return self._copy(
            store, layout.alias_table, ("node_id", "alias"), ([a, b] for a, b in aliases), len(aliases), None
        )

    @staticmethod
    def _converter(value_type: str) -> Any:
        """A function turning a property value of ``value_type`` into its CSV field for ``COPY FROM``."""
        if value_type.endswith("[]"):
            return _list_field
        if value_type == "boolean":
            return lambda v: None if v is None else ("true" if v else "false")
        if value_type == "float":
            return lambda v: v if v is None or math.isfinite(v) else str(v)
        return lambda v: v

    def _copy(
        self,
        store: Any,
        table: str,
        columns: tuple[str, ...] | None,
        rows: Iterable[list[Any]],
        total: int,
        progress: Any,
    ) -> int:
        if total == 0:
            return 0
        tmpdir = Path(tempfile.mkdtemp(prefix="kgplus-copy-"))
        try:
            path = tmpdir / "rows.csv"
            with path.open("w", encoding="utf-8", newline="") as fh:
                csv.writer(fh, quoting=csv.QUOTE_MINIMAL, lineterminator="\n").writerows(rows)
            # a quoted field spanning lines (more line breaks than rows) needs the engine's serial CSV reader
            breaks, carriage = 0, False
            with path.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    breaks += block.count(b"\n")
                    carriage = carriage or b"\r" in block
            multiline = carriage or breaks != total
            literal = str(path)
            if "'" in literal or "\\" in literal:  # a temporary path we made; refuse anything unusual
                raise GraphStoreError(f"Temporary folder {tmpdir} has a quote or backslash in its path; set TMPDIR.")
            target = quote_identifier(table) + (
                f"({', '.join(quote_identifier(c) for c in columns)})" if columns else ""
            )
            # the dialect is the one written above: the engine's sniffing of the first lines would miss quoting
            # when those have no quoted field and a later one does ("Bonaire, Saint Eustatius and Saba")
            options = "HEADER=false, AUTO_DETECT=false" + (", PARALLEL=false" if multiline else "")
            self.run(store, f"COPY {target} FROM '{literal}' ({options})")
            if progress is not None:
                progress.update(total)
            return total
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)

    # reads
    def read_names(self, store: Any, layout: GraphLayout) -> Iterator[tuple[str, str, bool]]:
        label, idp = quote_identifier(layout.node_label), quote_identifier(layout.id_property)
        namep = quote_identifier(layout.name_property)
        for row in self.run(
            store, f"MATCH (n:{label}) WHERE n.{namep} IS NOT NULL RETURN n.{idp} AS id, n.{namep} AS name"
        ):
            yield str(row["id"]), str(row["name"]), False
        if layout.alias_table in self._tables(store):
            for row in self.run(
                store, f"MATCH (s:{quote_identifier(layout.alias_table)}) RETURN s.node_id AS id, s.alias AS a"
            ):
                yield str(row["id"]), str(row["a"]), True

    def relationships_query(self, layout: GraphLayout) -> str:
        label, idp = quote_identifier(layout.node_label), quote_identifier(layout.id_property)
        return (
            f"MATCH (a:{label})-[r:{quote_identifier(layout.rel_table)}]->(b:{label}) "
            f"RETURN a.{idp} AS s, b.{idp} AS t, r.{quote_identifier(layout.type_column)} AS type"
        )

    def _rel_key_cypher(self) -> str:
        return "CAST(ID(r) AS STRING)"  # "table:offset", as path rows' rel_keys are decoded

    def _read_columns(self, store: Any, query: str, names: Sequence[str]) -> dict[str, list[Any]]:
        # straight into columns (through Arrow when pyarrow is installed): a million relationships as row dicts
        # would cost gigabytes
        try:
            result = store.connection.execute(query)
            if importlib.util.find_spec("pyarrow") is not None:
                table = result.get_as_arrow()
                return {name: table.column(name).to_pylist() for name in names}
            where = [result.get_column_names().index(name) for name in names]
            columns: list[list[Any]] = [[] for _ in names]
            for row in result:
                for column, i in zip(columns, where):
                    column.append(row[i])
            return dict(zip(names, columns))
        except Exception as exc:
            raise self._error(exc) from exc

    def count_graph(self, store: Any, layout: GraphLayout) -> tuple[int, int]:
        # two plain counts are cheaper here than one query joining them
        nodes = self.count_nodes(store, layout)  # 0 when the table does not exist
        if nodes == 0:
            return 0, 0
        rels = self.run(store, f"MATCH ()-[r:{quote_identifier(layout.rel_table)}]->() RETURN count(r) AS n")
        return nodes, int(rels[0]["n"]) if rels else 0

    def _path_columns(self, layout: GraphLayout) -> str:
        cols = [
            f"properties(nodes(p), '{layout.id_property}') AS node_ids",
            f"properties(nodes(p), '{layout.name_property}') AS node_names",
            "properties(nodes(p), '_ID') AS node_keys",
            f"properties(rels(p), '{layout.type_column}') AS rel_types",
            "properties(rels(p), '_SRC') AS rel_starts",
            "properties(rels(p), '_ID') AS rel_keys",
        ]
        cols += [f"properties(rels(p), '{prop}') AS prop_{i}" for i, prop in enumerate(layout.rel_properties)]
        return ", ".join(cols)

    def shortest_paths_statement(
        self, layout: GraphLayout, pairs: Sequence[tuple[str, str]], max_hops: int, limit: int
    ) -> tuple[str, dict[str, Any]]:
        # The relationship table holds only this graph's relationships, so no type filter is needed. One pair:
        # both ends by primary key (fastest). More: every pair of the id set in one statement; rows of pairs
        # nobody asked for (alternatives of one ambiguous name) are dropped by the caller. (Fixed-length 1- and
        # 2-hop join patterns were faster still, but ladybug 0.22 loses rows of such joins over parallel
        # relationships, checked against networkx, so only ALL SHORTEST is used.)
        label, idp = quote_identifier(layout.node_label), quote_identifier(layout.id_property)
        ids = sorted({x for pair in pairs for x in pair})
        pattern = f"-[:{quote_identifier(layout.rel_table)}* ALL SHORTEST 1..{_check_hops(max_hops)}]-"
        if len(pairs) == 1:
            query = (
                f"MATCH p = (a:{label} {{{idp}: $lhs}}){pattern}(b:{label} {{{idp}: $rhs}}) "
                f"RETURN {self._path_columns(layout)} LIMIT $limit"
            )
            return query, {"lhs": pairs[0][0], "rhs": pairs[0][1], "limit": limit}
        query = (
            f"MATCH p = (a:{label}){pattern}(b:{label}) "
            f"WHERE a.{idp} IN $ids AND b.{idp} IN $ids AND a.{idp} < b.{idp} "
            f"RETURN {self._path_columns(layout)} LIMIT $limit"
        )
        return query, {"ids": ids, "limit": limit}

    def neighbours_query(self, layout: GraphLayout) -> str:
        label, idp = quote_identifier(layout.node_label), quote_identifier(layout.id_property)
        rel = quote_identifier(layout.rel_table)
        return (
            f"MATCH p = (a:{label})-[:{rel}*1..1]-(b:{label}) WHERE a.{idp} IN $ids "
            f"RETURN {self._path_columns(layout)} LIMIT $limit"
        )

    def decode_path(self, row: dict[str, Any], layout: GraphLayout) -> RawPath:
        return _decode_path(row, layout, refs_column="node_keys")


def _list_field(value: Any) -> Any:
    """A list in the engine's CSV list syntax ``[a,b]``; items that syntax cannot carry are refused."""
    if value is None:
        return None
    items = []
    for item in value:
        text = str(item).lower() if isinstance(item, bool) else str(item)
        if _UNSAFE_LIST_ITEM.search(text) or text != text.strip():
            raise InputDataError(
                f"Array value {item!r} holds a comma, bracket, quote, backslash, newline or edge whitespace, "
                "which the embedded store's CSV list format cannot carry; store it as a plain string column or "
                "use a FalkorDB/Neo4j store."
            )
        items.append(text)
    return "[" + ",".join(items) + "]"
