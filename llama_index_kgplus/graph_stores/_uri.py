"""Graph stores are named by URI everywhere (CLI and Python).

``ladybug:///absolute/path`` (embedded, the default), ``falkordb://host:port`` and
``neo4j://host:7687`` (also ``bolt://``, ``neo4j+s://``, ``bolt+s://`` ...). Credentials never travel in the URI
on the command line: they come from ``NEO4J_USERNAME`` / ``NEO4J_PASSWORD`` / ``NEO4J_DATABASE`` and
``FALKORDB_USERNAME`` / ``FALKORDB_PASSWORD``; ``FALKORDB_GRAPH`` names the FalkorDB graph (default ``kgplus``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

from llama_index_kgplus._defaults import GRAPH_STORE_ENV, default_graph_store_path
from llama_index_kgplus._redact import redact_text, redact_url
from llama_index_kgplus.errors import GraphStoreError

NEO4J_SCHEMES = ("neo4j", "neo4j+s", "neo4j+ssc", "bolt", "bolt+s", "bolt+ssc")
SCHEMES = ("ladybug", "falkordb", *NEO4J_SCHEMES)
_FORMS = "use one of ladybug:///absolute/path, falkordb://host:port, neo4j://host:7687 (or bolt://, neo4j+s://)"


@dataclass(frozen=True)
class GraphStoreURI:
    """A parsed graph store URI. ``engine`` is ``"ladybug"``, ``"falkordb"`` or ``"neo4j"``.

    Example:

    ```python
    from llama_index_kgplus.graph_stores._uri import GraphStoreURI

    uri = GraphStoreURI.parse("neo4j://localhost:7687")
    uri.engine, uri.host, uri.port  # ('neo4j', 'localhost', 7687)
    ```
    """

    uri: str
    engine: str
    path: Path | None = None
    host: str | None = None
    port: int | None = None

    @classmethod
    def parse(cls, uri: str) -> GraphStoreURI:
        """Parse strictly: percent-escapes in a path are decoded; an empty URI, a query, a fragment, credentials,
        control characters or a malformed host are refused with a :class:`GraphStoreError` that shows the URI
        redacted (no password, no secret-named parameter: :func:`~llama_index_kgplus._redact.redact_url`)."""
        if not isinstance(uri, str) or any(ord(c) < 32 or c == "\x7f" for c in uri):
            shown = repr(redact_url(uri)) if isinstance(uri, str) else type(uri).__name__
            raise GraphStoreError(f"{shown} is not a graph store URI (it holds control characters).")
        shown = repr(redact_url(uri))
        if not uri.strip():
            raise GraphStoreError(f"The graph store URI is empty: {_FORMS}.")
        try:
            parts = urlsplit(uri)
        except ValueError as exc:
            raise GraphStoreError(f"{shown} is not a valid URI ({redact_text(exc)}).") from None
        if "@" in parts.netloc:  # before anything else is said about it: the message shows no password
            raise GraphStoreError(
                f"Put no credentials in the graph store URI {shown}: set NEO4J_USERNAME/NEO4J_PASSWORD "
                "or FALKORDB_USERNAME/FALKORDB_PASSWORD in the environment instead."
            )
        if parts.query or parts.fragment or uri.rstrip().endswith(("?", "#")):
            raise GraphStoreError(
                f"{shown}: graph store URIs take no ?query or #fragment (options are set in the environment: "
                "NEO4J_DATABASE, FALKORDB_GRAPH, ...)."
            )
        scheme = parts.scheme.lower()
        if scheme not in SCHEMES:
            raise GraphStoreError(f"Unknown graph store URI scheme {parts.scheme!r} in {shown}. {_FORMS}.")
        if scheme == "ladybug":
            try:
                raw = unquote(parts.netloc + parts.path, errors="strict")
            except UnicodeDecodeError as exc:
                raise GraphStoreError(f"{shown}: the path's %-escapes are not UTF-8 ({exc.reason}).") from exc
            if not raw or not os.path.isabs(raw) or "\x00" in raw:
                raise GraphStoreError(f"{shown}: a ladybug URI needs an absolute path, e.g. ladybug:///data/kg.lbug")
            return cls(uri=uri, engine="ladybug", path=Path(raw))
        if not parts.hostname:
            raise GraphStoreError(f"{shown} names no host, e.g. {scheme}://127.0.0.1:{_default_port(scheme)}")
        try:
            port = parts.port or _default_port(scheme)
        except ValueError as exc:
            raise GraphStoreError(f"{shown}: invalid port ({redact_text(exc)}).") from None
        engine = "falkordb" if scheme == "falkordb" else "neo4j"
        return cls(uri=uri, engine=engine, host=parts.hostname, port=port)


def ladybug_uri(path: str | Path) -> str:
    """The URI of an embedded store file (percent-escaped, so any path survives :meth:`GraphStoreURI.parse`)."""
    return "ladybug://" + quote(os.path.abspath(path))


def default_graph_store_uri() -> str:
    """``$KGPLUS_GRAPH_STORE``, else the embedded Ladybug database under the data folder."""
    return os.environ.get(GRAPH_STORE_ENV) or ladybug_uri(default_graph_store_path())


def _default_port(scheme: str) -> int:
    return 6379 if scheme == "falkordb" else 7687
