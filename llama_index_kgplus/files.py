"""Deprecated: atomic file writes and checked reads moved to a private module; this module only keeps the old names
importable, with a DeprecationWarning, until the next release."""

from llama_index_kgplus._deprecation import deprecated_names

__all__: list[str] = []

__getattr__ = deprecated_names(
    __name__,
    {
        "atomic_open": "llama_index_kgplus._files:atomic_open",
        "atomic_write_bytes": "llama_index_kgplus._files:atomic_write_bytes",
        "atomic_write_json": "llama_index_kgplus._files:atomic_write_json",
        "atomic_write_text": "llama_index_kgplus._files:atomic_write_text",
        "read_utf8": "llama_index_kgplus._files:read_utf8",
        "sha256_file": "llama_index_kgplus._files:sha256_file",
    },
)
