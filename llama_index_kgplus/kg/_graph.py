"""A knowledge graph inside a graph store: the store, its dialect, the layout recorded at import, and the
entity dictionary (rebuilt from the store once, then cached on disk keyed by the import).

The import writes a small manifest into the store itself (a ``KGPlusMeta`` record, key ``kg:<label>``), so
``KnowledgeGraph.open(uri)`` needs nothing but the store. The entity dictionary is cached next to an embedded
store (``<path>.kgplus/``) or, for a server, under ``$KGPLUS_HOME/kg-cache/``; a cache is used only if it
belongs to the current import.

Example:

```python
with KnowledgeGraph.open("ladybug:///tmp/kg.lbug") as kg:
    matcher = kg.entity_matcher()
    paths = kg.shortest_paths([("C1", "C2")], max_hops=2)
```
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from llama_index_kgplus._redact import get_logger
from llama_index_kgplus.errors import GraphStoreError, InputDataError
from llama_index_kgplus.graph_stores import open_graph_store
from llama_index_kgplus.graph_stores._dialects import (
    GraphDialect,
    GraphLayout,
    RawPath,
    dialect_for_engine,
    dialect_for_store,
)
from llama_index_kgplus.graph_stores._uri import GraphStoreURI
from llama_index_kgplus.kg._matcher import EntityMatcher
from llama_index_kgplus.kg._path_engine import DEFAULT_MAX_EDGES, SnapshotCache, check_path_engine, uses_snapshot
from llama_index_kgplus.kg._snapshot import GraphSnapshot
from llama_index_kgplus.kg._snapshot_paths import snapshot_neighbours, snapshot_shortest_paths

logger = get_logger(__name__)

_MATCHER_CACHE_PREFIX = "entity-matcher-"

MANIFEST_VERSION = 1
DEFAULT_NODE_LABEL = "Ent"


def manifest_key(node_label: str) -> str:
    return f"kg:{node_label}"


def rel_table_for(node_label: str) -> str:
    """Ladybug relationship table of a graph: ``Rel`` for the default label ``Ent``, else ``<label>Rel``."""
    return "Rel" if node_label == "Ent" else f"{node_label}Rel"


class KGManifest(BaseModel):
    """What the import recorded about a knowledge graph (stored as JSON in the store)."""

    version: int = Field(default=MANIFEST_VERSION, description="Manifest format version.")
    import_id: str = Field(description="Unique id of the import that wrote the graph (keys the caches).")
    created: str = Field(description="UTC time of the import, ISO 8601.")
    node_label: str = Field(description="Label (Ladybug: node table) of every entity node.")
    id_property: str = Field(description="Property holding the entity id (the nodes file's :ID column).")
    name_property: str = Field(description="Property holding the entity name used by the dictionary.")
    rel_types: list[str] = Field(description="Relationship types of the graph (:TYPE values).")
    rel_table: str = Field("Rel", description="Ladybug: the relationship table holding all of them.")
    type_column: str = Field(
        default="label", description="Ladybug: the column of rel_table holding the type (reltype in older imports)."
    )
    node_properties: dict[str, str] = Field(default_factory=dict, description="Node property -> value type.")
    rel_properties: dict[str, str] = Field(default_factory=dict, description="Relationship property -> value type.")
    counts: dict[str, int] = Field(default_factory=dict, description="nodes, relationships, synonyms, skipped.")
    sources: dict[str, str] = Field(default_factory=dict, description="The imported files.")

    def layout(self) -> GraphLayout:
        return GraphLayout(
            node_label=self.node_label,
            id_property=self.id_property,
            name_property=self.name_property,
            rel_types=tuple(self.rel_types) or ("RELATED_TO",),
            rel_properties=tuple(self.rel_properties),
            rel_table=self.rel_table,
            type_column=self.type_column,
        )

    @classmethod
    def of_property_graph(cls, layout: GraphLayout) -> KGManifest:
        """The manifest of a graph LlamaIndex's store wrote (no import: no import id, so no disk cache)."""
        return cls(
            import_id="",
            created="",
            node_label=layout.node_label,
            id_property=layout.id_property,
            name_property=layout.name_property,
            rel_types=list(layout.rel_types),
            rel_table=layout.rel_table,
            type_column=layout.type_column,
        )


class KnowledgeGraph:
    """A handle on an imported knowledge graph: ``store`` (a LlamaIndex ``PropertyGraphStore``), ``dialect``,
    ``manifest``/``layout`` and the cached :meth:`entity_matcher`.

    Build it with :meth:`open` (from a URI; owns and closes the store) or from a store you opened yourself. A
    handle opened by URI pickles (for worker processes): the copy reopens the store by its URI when first used,
    with credentials from the environment, never from the pickle.

    ``path_engine`` (``"auto"``, ``"snapshot"``, ``"store"``) says where :meth:`shortest_paths` and
    :meth:`neighbours` run: on an in-process snapshot (default on embedded stores; at most
    ``max_snapshot_edges`` relationships) or as the store's query (see ``kg/_path_engine.py``).

    Any LlamaIndex ``PropertyGraphStore`` works: a store without a Cypher dialect (``SimplePropertyGraphStore``,
    the default store of ``PropertyGraphIndex``) is read through its API, its entities and their relations, and
    its paths always run on the snapshot.

    Example:

    ```python
    from llama_index_kgplus import KnowledgeGraph, import_kg
    from llama_index_kgplus.graph_stores import ladybug_uri

    uri = ladybug_uri("umls.lbug")
    import_kg(uri, "nodes.csv", "relationships.csv")
    with KnowledgeGraph.open(uri) as kg:
        mentions = kg.entity_matcher().find("Can a virus cause a disease or syndrome?")
        paths = kg.shortest_paths([(mentions[0].cid, mentions[1].cid)], max_hops=2)
    ```
    """

    def __init__(
        self,
        store: Any,
        *,
        node_label: str = "Ent",
        cache_dir: str | Path | None = None,
        owns_store: bool = False,
        uri: str | None = None,
        store_kwargs: dict[str, Any] | None = None,
        path_engine: str = "auto",
        max_snapshot_edges: int = DEFAULT_MAX_EDGES,
    ) -> None:
        self._store = store
        self.node_label = node_label
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.dialect: GraphDialect = dialect_for_store(store)
        self.uri = uri
        self._store_kwargs = {k: v for k, v in (store_kwargs or {}).items() if k not in _SECRET_KWARGS}
        self._owns_store = owns_store
        self._manifest: KGManifest | None = None
        self._matcher: EntityMatcher | None = None
        self.path_engine = check_path_engine(path_engine)
        self._snapshots = SnapshotCache(max_edges=max_snapshot_edges)

    @property
    def snapshot_cache(self) -> SnapshotCache:
        """The cache of the in-process path snapshot (``build_seconds_`` and ``path_`` after a build)."""
        return self._snapshots

    @property
    def store_options(self) -> dict[str, Any]:
        """The options the store was opened with, credentials left out (what a copy reopens it with)."""
        return dict(self._store_kwargs)

    @property
    def store(self) -> Any:
        """The LlamaIndex property graph store (reopened by URI in an unpickled copy)."""
        if self._store is None:
            assert self.uri is not None
            self._store, _ = open_kg_store(self.uri, create=False, **self._store_kwargs)
            self._owns_store = True
        return self._store

    def __getstate__(self) -> dict[str, Any]:
        if self.uri is None:
            raise GraphStoreError(
                "This knowledge graph was built on a store object, which cannot go to another process: open it by "
                "URI (KnowledgeGraph.open(uri), or KGPathRetriever.from_defaults(uri)) to pickle it."
            )
        state = dict(self.__dict__)
        state.update(_store=None, _owns_store=False)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    @classmethod
    def open(
        cls,
        uri: str | None = None,
        *,
        node_label: str = "Ent",
        create: bool = False,
        path_engine: str = "auto",
        **store_kwargs: Any,
    ) -> KnowledgeGraph:
        """Open the store named by ``uri`` (default: the embedded default store); an embedded store that does
        not exist is an error unless ``create`` (importing creates it)."""
        store, parsed = open_kg_store(uri, create=create, **store_kwargs)
        cache_dir = default_cache_dir(parsed, node_label, store_kwargs)
        return cls(
            store,
            node_label=node_label,
            cache_dir=cache_dir,
            owns_store=True,
            uri=parsed.uri,
            store_kwargs=store_kwargs,
            path_engine=path_engine,
        )

    # ------------------------------------------------------------------ metadata

    @property
    def manifest(self) -> KGManifest:
        """What the import recorded about the graph (labels, property names, counts), or what was discovered in a
        property graph."""
        if self._manifest is None:
            raw = self.dialect.read_meta(self.store, manifest_key(self.node_label))
            discovered = self._property_graph_layout() if raw is None else None
            if discovered is not None:
                self._manifest = KGManifest.of_property_graph(discovered)
                return self._manifest
            if raw is None and not self.dialect.runs_queries:
                raise GraphStoreError(
                    f"No entities in this {type(self.store).__name__}: write them with its upsert_nodes / "
                    "upsert_relations or a PropertyGraphIndex (a store without Cypher takes no import)."
                )
            if raw is None:
                raise GraphStoreError(
                    f"No knowledge graph with label {self.node_label!r} in this {self.dialect.engine} store (nor "
                    "entities written by LlamaIndex's property graph store): "
                    "import one with `kgplus kg import --nodes FILE --relationships FILE --store URI` "
                    "(after a neo4j-admin import, add --metadata-only)."
                )
            try:
                self._manifest = KGManifest.model_validate_json(raw)
            except ValidationError as exc:
                problem = "; ".join(
                    f"{'.'.join(map(str, e['loc'])) or 'manifest'}: {e['msg']}" for e in exc.errors()[:3]
                )
                raise GraphStoreError(
                    f"The manifest of the knowledge graph {self.node_label!r} in this {self.dialect.engine} store is "
                    f"malformed ({problem}): import the graph again with `kgplus kg import ... --replace`."
                ) from exc
        return self._manifest

    @property
    def layout(self) -> GraphLayout:
        """The node label and property names the path queries use."""
        return self.manifest.layout()

    def exists(self) -> bool:
        """True when the store holds an imported graph ``node_label`` (a property graph LlamaIndex's store wrote
        does not count: importing beside it is allowed)."""
        return self.dialect.read_meta(self.store, manifest_key(self.node_label)) is not None

    def _property_graph_layout(self) -> GraphLayout | None:
        """Without an import, the default label reads the graph LlamaIndex's own store wrote (if any)."""
        if self.node_label != DEFAULT_NODE_LABEL:
            return None
        return self.dialect.property_graph_layout(self.store)

    def refresh(self) -> None:
        """Forget what was read from the store (after an import through another handle)."""
        self._manifest = None
        self._matcher = None
        self._snapshots.invalidate()

    # ------------------------------------------------------------------ dictionary

    def matcher_cache_path(self) -> Path | None:
        """The dictionary cache of the current import; its name is a hash of the import id (text read from the
        store never becomes a path)."""
        if self.cache_dir is None or not self.manifest.import_id:  # a property graph changes under us: no cache
            return None
        digest = hashlib.sha256(self.manifest.import_id.encode("utf-8")).hexdigest()[:32]
        return self.cache_dir / f"{_MATCHER_CACHE_PREFIX}{digest}.json"

    def entity_matcher(self) -> EntityMatcher:
        """The dictionary of the graph's names and synonyms: from memory, the disk cache, or the store."""
        if self._matcher is not None:
            return self._matcher
        path = self.matcher_cache_path()
        if path is not None and path.is_file():
            try:
                self._matcher = EntityMatcher.load(path, expect={"import_id": self.manifest.import_id})
                return self._matcher
            except InputDataError as exc:  # a broken or foreign cache is rebuilt, never fatal
                logger.warning("Rebuilding the entity dictionary: %s", exc)
        self._matcher = EntityMatcher.from_graph(self)
        self.save_matcher(self._matcher)
        return self._matcher

    def save_matcher(self, matcher: EntityMatcher) -> Path | None:
        """Cache ``matcher`` for this import (best effort: an unwritable folder only costs a rebuild)."""
        self._matcher = matcher
        path = self.matcher_cache_path()
        if path is None:
            return None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            for old in path.parent.glob(f"{_MATCHER_CACHE_PREFIX}*"):
                if old != path and old.is_file():
                    old.unlink(missing_ok=True)
            matcher.save(path, import_id=self.manifest.import_id)
        except OSError as exc:
            logger.warning("Cannot cache the entity dictionary in %s (%s); it is rebuilt next time.", path, exc)
            return None
        return path

    # ------------------------------------------------------------------ reading the whole graph

    def names(self) -> list[tuple[str, str, bool]]:
        """``(id, name_or_synonym, is_synonym)`` of every entity."""
        return list(self.dialect.read_names(self.store, self.layout))

    def relationships(self, name_property: str | None = "relname") -> list[tuple[str, str, str]]:
        """``(start id, end id, type)`` of every relationship; the type is ``name_property`` where the import
        recorded that property (UMLS: ``causes``), else the :TYPE."""
        layout = self.layout
        shown = name_property if name_property in layout.rel_properties else None
        return list(self.dialect.read_relationships(self.store, layout, shown))

    # ------------------------------------------------------------------ paths

    def path_snapshot(self, engine: str | None = None) -> GraphSnapshot | None:
        """The in-process snapshot paths run on under ``engine`` (default: this graph's ``path_engine``), or
        None when they run as the store's query."""
        if not uses_snapshot(engine or self.path_engine, self.dialect.engine):
            return None
        return self._snapshots.get(self)

    async def apath_snapshot(self, engine: str | None = None) -> GraphSnapshot | None:
        """Async :meth:`path_snapshot`."""
        if not uses_snapshot(engine or self.path_engine, self.dialect.engine):
            return None
        return self._snapshots.fresh() or await asyncio.to_thread(self._snapshots.get, self)

    def shortest_paths(
        self, pairs: Sequence[tuple[str, str]], max_hops: int = 2, limit: int = 10_000, *, engine: str | None = None
    ) -> list[RawPath]:
        """Shortest paths of at most ``max_hops`` between each pair of node ids (on the snapshot or in the store, per
        ``engine``)."""
        snapshot = self.path_snapshot(engine)
        if snapshot is not None:
            return snapshot_shortest_paths(snapshot, pairs, max_hops, limit)
        return self.dialect.shortest_paths(self.store, self.layout, pairs, max_hops, limit)

    async def ashortest_paths(
        self, pairs: Sequence[tuple[str, str]], max_hops: int = 2, limit: int = 10_000, *, engine: str | None = None
    ) -> list[RawPath]:
        """Async :meth:`shortest_paths`."""
        snapshot = await self.apath_snapshot(engine)
        if snapshot is not None:
            return snapshot_shortest_paths(snapshot, pairs, max_hops, limit)
        return await self.dialect.ashortest_paths(self.store, self.layout, pairs, max_hops, limit)

    def neighbours(self, ids: Sequence[str], limit: int = 10_000, *, engine: str | None = None) -> list[RawPath]:
        """One-hop paths from each node of ``ids`` (at most ``limit``)."""
        snapshot = self.path_snapshot(engine) if ids else None
        if snapshot is not None:
            return snapshot_neighbours(snapshot, ids, limit)
        return self.dialect.neighbours(self.store, self.layout, ids, limit)

    async def aneighbours(self, ids: Sequence[str], limit: int = 10_000, *, engine: str | None = None) -> list[RawPath]:
        """Async :meth:`neighbours`."""
        snapshot = await self.apath_snapshot(engine) if ids else None
        if snapshot is not None:
            return snapshot_neighbours(snapshot, ids, limit)
        return await self.dialect.aneighbours(self.store, self.layout, ids, limit)

    # ------------------------------------------------------------------ lifetime

    def close(self) -> None:
        """Close the store if this handle opened it."""
        if self._owns_store:
            self.dialect.close(self.store)
            self._owns_store = False

    def __enter__(self) -> KnowledgeGraph:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# never pickled with a handle: a copy takes credentials from the environment
_SECRET_KWARGS = frozenset({"username", "password", "auth", "token"})


def open_kg_store(uri: str | None = None, *, create: bool = True, **store_kwargs: Any) -> tuple[Any, GraphStoreURI]:
    """Open a store for knowledge-graph use (the dialect's open options, e.g. no APOC schema refresh on Neo4j)."""
    if uri is None:
        from llama_index_kgplus.graph_stores._uri import default_graph_store_uri

        uri = default_graph_store_uri()
    parsed = GraphStoreURI.parse(uri)
    kwargs = {**dialect_for_engine(parsed.engine).open_kwargs, **store_kwargs}
    return open_graph_store(uri, create=create, **kwargs), parsed


def default_cache_dir(parsed: GraphStoreURI, node_label: str, store_kwargs: dict[str, Any]) -> Path:
    """Next to an embedded store; under ``$KGPLUS_HOME/kg-cache/`` for a server (keyed by URI and graph)."""
    if parsed.engine == "ladybug":
        assert parsed.path is not None
        return parsed.path.with_name(parsed.path.name + ".kgplus")
    from llama_index_kgplus._defaults import kgplus_home

    env = "FALKORDB_GRAPH" if parsed.engine == "falkordb" else "NEO4J_DATABASE"
    database = store_kwargs.get("database") or os.environ.get(env) or ""
    key = json.dumps([parsed.uri, database, node_label])
    return kgplus_home() / "kg-cache" / hashlib.sha256(key.encode()).hexdigest()[:16]
