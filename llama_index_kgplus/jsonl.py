"""Deprecated: JSON Lines reading moved to a private module; this module only keeps the old names importable, with a
DeprecationWarning, until the next release."""

from llama_index_kgplus._deprecation import deprecated_names

__all__: list[str] = []

__getattr__ = deprecated_names(
    __name__,
    {
        "id_field": "llama_index_kgplus._jsonl:id_field",
        "iter_jsonl": "llama_index_kgplus._jsonl:iter_jsonl",
        "text_field": "llama_index_kgplus._jsonl:text_field",
    },
)
