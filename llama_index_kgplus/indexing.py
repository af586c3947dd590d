"""Keeping an index in step with its corpus: :func:`sync_index` (and :func:`async_index`) compare the corpus with
what an index folder holds and add, update and delete documents through every index in it (vector store,
docstore, entity graph, summaries, a GraphRAG store), returning a ``SyncReport`` (what was touched and the LLM
calls spent: ``report.summary()``, ``report.as_dict()``). :func:`upgrade_index` moves a folder kept in JSON into
LanceDB and SQLite, which open at once, without embedding anything again.

Building and loading an index (``build_index``, ``load_index``) are public at the top level; the other names
this module held before (``persist_index``, ``check_embed_model``, ...) moved to a private module and stay
importable here, with a DeprecationWarning, until the next release.

Example:

```python
from llama_index_kgplus.indexing import sync_index

report = sync_index("docs.jsonl", "./index")  # the corpus as it is now
print(report.summary())
```
"""

from llama_index_kgplus._deprecation import deprecated_names
from llama_index_kgplus._public import set_public_module
from llama_index_kgplus._syncing import async_index, sync_index
from llama_index_kgplus._upgrade import upgrade_index

__all__ = ["async_index", "sync_index", "upgrade_index"]
set_public_module(__name__, globals(), __all__)

__getattr__ = deprecated_names(
    __name__,
    {
        "build_index": "llama_index_kgplus:build_index",
        "check_embed_model": "llama_index_kgplus._indexing:check_embed_model",
        "check_index_files": "llama_index_kgplus._indexing:check_index_files",
        "DEFAULT_CHUNK_OVERLAP": "llama_index_kgplus._indexing:DEFAULT_CHUNK_OVERLAP",
        "DEFAULT_CHUNK_SIZE": "llama_index_kgplus._indexing:DEFAULT_CHUNK_SIZE",
        "index_embed_model": "llama_index_kgplus._indexing:index_embed_model",
        "INGEST_FILE": "llama_index_kgplus._indexing:INGEST_FILE",
        "load_index": "llama_index_kgplus:load_index",
        "persist_index": "llama_index_kgplus._indexing:persist_index",
        "persist_storage": "llama_index_kgplus._indexing:persist_storage",
        "require_index": "llama_index_kgplus._indexing:require_index",
    },
)
