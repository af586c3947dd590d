"""Which engine answers a knowledge graph's path queries, and the snapshot cache behind the in-process one.

``path_engine``: ``"snapshot"`` searches an in-process :class:`GraphSnapshot`; ``"store"`` runs the store's
shortest-path query; ``"auto"`` (the default) is the snapshot on an embedded (Ladybug) store and on a store read
through its API (``SimplePropertyGraphStore``, which has no path query), and the store query on a server store
(FalkorDB, Neo4j), where the data may change under us more often and the round trip is the
server's. The snapshot falls back to the store query, with a logged reason, when the graph has more than
``max_edges`` relationships or it cannot be built. The default, 2 million, keeps the build's peak near 1.5 GB:
the arrays take about 55 bytes per relationship (58 MB for 10^6 relationships and 10^5 nodes), but reading the
store's rows into them peaks at about 0.7 KB per relationship (measured: +670 MB for 10^6, +120 MB for 10^5).

Staleness: the snapshot is keyed by the import id, the layout and the store's node and relationship counts. The
counts are read (one cheap count query) when the snapshot is first used, then at most every
``recheck_seconds`` and after :meth:`KnowledgeGraph.refresh`; a snapshot whose token differs is rebuilt, never
used. A change that keeps both counts and the import id (e.g. one relationship re-pointed) is not seen until
the next import or :meth:`SnapshotCache.invalidate` with ``rebuild=True``.

Example:

```python
kg = KnowledgeGraph.open("ladybug:///tmp/kg.lbug", path_engine="snapshot")
kg.shortest_paths([("C1", "C2")])      # builds (or loads) <store>.kgplus/path-snapshot-*.npz once
```
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from llama_index_kgplus._redact import get_logger
from llama_index_kgplus.errors import InputDataError
from llama_index_kgplus.kg._snapshot import GraphSnapshot, staleness_token

if TYPE_CHECKING:
    from llama_index_kgplus.kg._graph import KnowledgeGraph

logger = get_logger(__name__)

PathEngine = Literal["auto", "snapshot", "store"]
PATH_ENGINES: tuple[str, ...] = ("auto", "snapshot", "store")
#: above this many relationships the store query is used (building the snapshot would need too much memory)
DEFAULT_MAX_EDGES = 2_000_000
DEFAULT_RECHECK_SECONDS = 1.0
_FILE_PREFIX = "path-snapshot-"
#: where "auto" means the snapshot: the embedded store, and stores read through their API (no path query)
_SNAPSHOT_ENGINES = frozenset({"ladybug", "store-api"})


def check_path_engine(engine: str) -> str:
    if engine not in PATH_ENGINES:
        raise ValueError(f"path_engine must be one of {', '.join(PATH_ENGINES)}; got {engine!r}.")
    return engine


def uses_snapshot(engine: str, store_engine: str) -> bool:
    """Whether ``engine`` (auto/snapshot/store) searches a snapshot on a store of ``store_engine``."""
    engine = check_path_engine(engine)
    return engine == "snapshot" or (engine == "auto" and store_engine in _SNAPSHOT_ENGINES)


class SnapshotCache:
    """The snapshot of one :class:`KnowledgeGraph`: kept in memory, checked, loaded from or saved to its
    ``cache_dir``, rebuilt from the store when stale. Attributes after a build: ``build_seconds_``, ``path_``."""

    def __init__(self, max_edges: int = DEFAULT_MAX_EDGES, recheck_seconds: float = DEFAULT_RECHECK_SECONDS) -> None:
        self.max_edges = max_edges
        self.recheck_seconds = recheck_seconds
        self.snapshot: GraphSnapshot | None = None
        self.build_seconds_: float | None = None
        self.path_: Path | None = None
        self._checked = -math.inf
        self._refused: dict[str, Any] | None = None  # the token of a graph we could not snapshot
        self._lock = threading.Lock()  # one check or build at a time (a build can take a gigabyte)

    def __getstate__(self) -> dict[str, Any]:
        # a copy in another process loads or rebuilds its own
        return {"max_edges": self.max_edges, "recheck_seconds": self.recheck_seconds}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)  # type: ignore[misc]

    def invalidate(self, rebuild: bool = False) -> None:
        """Check the counts on the next use (and with ``rebuild``, build the snapshot again from the store)."""
        self._checked, self._refused = -math.inf, None
        if rebuild:
            self.snapshot = None
            if self.path_ is not None:
                self.path_.unlink(missing_ok=True)

    def fresh(self) -> GraphSnapshot | None:
        """The snapshot in memory if it was checked within ``recheck_seconds`` (no store query)."""
        if self.snapshot is not None and time.monotonic() - self._checked < self.recheck_seconds:
            return self.snapshot
        return None

    def get(self, kg: KnowledgeGraph) -> GraphSnapshot | None:
        """The current snapshot, or None when the paths must use the store query (the reason is logged)."""
        snapshot = self.fresh()
        if snapshot is not None:
            return snapshot
        with self._lock:
            snapshot = self.fresh()  # another thread may have checked or built it meanwhile
            return snapshot if snapshot is not None else self._check(kg)

    def _check(self, kg: KnowledgeGraph) -> GraphSnapshot | None:
        counts = kg.dialect.count_graph(kg.store, kg.layout)
        token = staleness_token(kg, counts)
        if self.snapshot is not None and self.snapshot.token == token:
            self._checked = time.monotonic()
            return self.snapshot
        self.snapshot = None
        if self._refused == token:
            return None
        if counts[1] > self.max_edges:
            logger.warning(
                "The graph has %d relationships, more than the path snapshot's max_edges (%d): paths use the store "
                "query.",
                counts[1],
                self.max_edges,
            )
            self._refused = token
            return None
        path = self.path_ = self._file(kg)
        if path is not None and path.is_file():
            try:
                loaded = GraphSnapshot.load(path)
            except InputDataError as exc:  # a broken file is rebuilt, never fatal
                logger.warning("Rebuilding the path snapshot: %s", exc)
            else:
                if loaded.token == token:
                    self.snapshot, self._checked = loaded, time.monotonic()
                    return loaded
                logger.info("The path snapshot %s is older than the store; rebuilding it.", path)
        try:
            started = time.perf_counter()
            built = GraphSnapshot.build(kg, counts)
            self.build_seconds_ = time.perf_counter() - started
        except Exception as exc:  # noqa: BLE001 - any failure to build costs speed, never the answer
            logger.warning(
                "Cannot build the path snapshot (%s: %s): paths use the store query.", type(exc).__name__, exc
            )
            self._refused = token
            return None
        logger.info(
            "Built the path snapshot (%d nodes, %d relationships) in %.2f s.",
            built.n_nodes,
            built.n_relationships,
            self.build_seconds_,
        )
        self.snapshot, self._checked = built, time.monotonic()
        if path is not None:
            self._save(built, path)
        return built

    @staticmethod
    def _file(kg: KnowledgeGraph) -> Path | None:
        # no file without an import id: a graph LlamaIndex wrote can change and keep both counts
        if kg.cache_dir is None or not kg.manifest.import_id:
            return None
        # the name hashes what read the graph (text from the store never becomes a path)
        layout = staleness_token(kg, (0, 0))["layout"]
        graph = hashlib.sha256(json.dumps(layout[:1]).encode()).hexdigest()[:8]  # one file per graph of a store
        key = json.dumps([*layout, kg.manifest.import_id])
        return kg.cache_dir / f"{_FILE_PREFIX}{graph}-{hashlib.sha256(key.encode()).hexdigest()[:32]}.npz"

    @staticmethod
    def _save(snapshot: GraphSnapshot, path: Path) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            graph_prefix = path.name.rsplit("-", 1)[0]
            for old in path.parent.glob(f"{graph_prefix}-*.npz"):
                if old != path:
                    old.unlink(missing_ok=True)
            snapshot.save(path)
        except (OSError, TypeError, ValueError) as exc:  # an unwritable folder or value only costs a rebuild
            logger.warning("Cannot save the path snapshot in %s (%s); it is rebuilt next time.", path, exc)
