"""Deprecated: index building and loading (``build_index`` and ``load_index`` are public at the top level) moved to a
private module; this module only keeps the old names importable, with a DeprecationWarning, until the next release."""

from llama_index_kgplus._deprecation import deprecated_names

__all__: list[str] = []

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
