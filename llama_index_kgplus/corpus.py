"""Deprecated: corpus loading (``load_corpus`` is public at the top level) moved to a private module; this module only
keeps the old names importable, with a DeprecationWarning, until the next release."""

from llama_index_kgplus._deprecation import deprecated_names

__all__: list[str] = []

__getattr__ = deprecated_names(
    __name__,
    {
        "load_corpus": "llama_index_kgplus:load_corpus",
    },
)
