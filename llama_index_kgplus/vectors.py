"""Deprecated: vector arithmetic on embeddings moved to a private module; this module only keeps the old names
importable, with a DeprecationWarning, until the next release."""

from llama_index_kgplus._deprecation import deprecated_names

__all__: list[str] = []

__getattr__ = deprecated_names(
    __name__,
    {
        "cosine": "llama_index_kgplus._vectors:cosine",
        "mean_pairwise_cosine": "llama_index_kgplus._vectors:mean_pairwise_cosine",
        "unit": "llama_index_kgplus._vectors:unit",
        "unit_rows": "llama_index_kgplus._vectors:unit_rows",
    },
)
