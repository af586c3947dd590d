"""Vector stores that keep their data outside the index folder: a server such as PostgreSQL with pgvector
(LlamaIndex's ``PGVectorStore``, the ``postgres`` extra), or any other LlamaIndex vector store passed to
``build_index(..., vector_store=store)``.

The folder keeps the docstore and index store (for a store that returns its nodes, ``stores_text``: the SQLite file
of a LanceDB folder, :mod:`llama_index_kgplus._sqlitedoc`); ``ingest.json`` records which store holds the vectors
(:func:`store_record`: its class, its table or collection, and its server with no secret: the userinfo and the
secret-named parameters of a URL become ``***``, and a connection string that is not a URL is not recorded), so
that :func:`check_store` can refuse, in one line naming the fix, to open the folder without that store or with
another one. The pack never connects to the server by itself: the caller builds the store (with its credentials)
and passes it to ``load_index(DIR, vector_store=store)``.

Example:

```python
store = PGVectorStore.from_params(host="127.0.0.1", port=5432, database="rag", user="rag",
                                  password=os.environ["PGPASSWORD"], table_name="kgplus", embed_dim=384)
build_index(docs, "./index", vector_store=store)
index = load_index("./index", vector_store=store)  # load_index("./index") alone: refused, naming the table
```
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llama_index_kgplus._redact import redact_url
from llama_index_kgplus.errors import InputDataError

__all__ = [
    "STORE_TYPE",
    "check_store",
    "describe",
    "holds_nodes",
    "is_server_store",
    "store_record",
]

STORE_TYPE = "server"
"""``type`` of the ``vector_store`` record of ``ingest.json`` for a store outside the folder."""
#: what names a store's data on its server (compared when the folder is opened), by the attribute that holds it
_IDENTITY = ("schema_name", "table_name", "collection_name", "index_name", "namespace", "embed_dim")
#: attributes that hold the server's address (recorded through redact_url, only in URL form)
_ADDRESS = ("connection_string", "uri", "url")


def is_server_store(vector_store: Any) -> bool:
    """Whether ``vector_store`` keeps its data outside the folder: any LlamaIndex vector store but the JSON
    ``SimpleVectorStore`` and the pack's LanceDB table."""
    from llama_index.core.vector_stores import SimpleVectorStore

    from llama_index_kgplus._lancedb import is_pack_store

    if vector_store is None or isinstance(vector_store, SimpleVectorStore):
        return False
    return not is_pack_store(vector_store)


def holds_nodes(vector_store: Any) -> bool:
    """Whether a query of ``vector_store`` returns the nodes themselves (``stores_text``), so that the index needs no
    map of every node id and its docstore can be the folder's SQLite file."""
    return is_server_store(vector_store) and bool(getattr(vector_store, "stores_text", False))


def _address(vector_store: Any) -> str | None:
    for name in _ADDRESS:
        value = getattr(vector_store, name, None)
        if type(value).__name__ == "URL":  # SQLAlchemy's, whose str() hides the password
            value = str(value)
        if isinstance(value, str) and value:
            # a URL without its userinfo and secret parameters; another form ("host=... password=...") may hold a
            # secret anywhere: not recorded
            return redact_url(value) if "://" in value else None
    return None


def store_record(vector_store: Any) -> dict[str, Any]:
    """What ``ingest.json`` records of a store outside the folder: its class, what names its data there and its
    server, without secrets."""
    record: dict[str, Any] = {"type": STORE_TYPE, "class": vector_store.class_name()}
    for name in _IDENTITY:
        value = getattr(vector_store, name, None)
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            record[name] = value
    server = _address(vector_store)
    if server:
        record["server"] = server
    return record


def describe(record: dict[str, Any]) -> str:
    """The store of a record in a few words: ``PGVectorStore table 'kgplus' (schema 'public', 384-d) at URL``."""
    parts = [str(record.get("class", "a vector store"))]
    named = [f"{name.removesuffix('_name')} {record[name]!r}" for name in _IDENTITY[1:-1] if name in record]
    if named:
        parts.append(named[0])
    details = [f"schema {record['schema_name']!r}"] if "schema_name" in record else []
    details += [f"{record['embed_dim']}-d"] if "embed_dim" in record else []
    if details:
        parts.append(f"({', '.join(details)})")
    if record.get("server"):
        parts.append(f"at {record['server']}")
    return " ".join(parts)


def _fix(persist_dir: Path, record: dict[str, Any]) -> str:
    if record.get("class") == "PGVectorStore":
        arguments = f"host=..., port=..., database=..., user=..., password=..., table_name={record.get('table_name')!r}"
        if "embed_dim" in record:
            arguments += f", embed_dim={record['embed_dim']}"
        store = f"PGVectorStore.from_params({arguments})"
    else:
        store = f"the {record.get('class', 'vector store')} it was built with"
    return f"load_index({str(persist_dir)!r}, vector_store={store})"


def check_store(persist_dir: Path, record: dict[str, Any], vector_store: Any | None) -> None:
    """Refuse (one line, naming the fix) to open a folder whose vectors live in the store of ``record`` without
    that store, or with one of another class or table."""
    where = f"{persist_dir} keeps its vectors in {describe(record)}"
    if vector_store is None:
        raise InputDataError(f"{where}: pass that store, {_fix(persist_dir, record)}.")
    given = store_record(vector_store)
    differs = [
        name
        for name in ("class", *_IDENTITY)
        if (name in record or name in given) and record.get(name) != given.get(name)
    ]
    if differs:
        raise InputDataError(
            f"{where}, not in the {describe(given)} given ({', '.join(differs)} differ): pass the store it was "
            f"built with, {_fix(persist_dir, record)}."
        )
