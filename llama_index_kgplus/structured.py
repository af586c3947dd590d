"""Deprecated: JSON output from an LLM moved to a private module; this module only keeps the old names importable,
with a DeprecationWarning, until the next release."""

from llama_index_kgplus._deprecation import deprecated_names

__all__: list[str] = []

__getattr__ = deprecated_names(
    __name__,
    {
        "agenerate_json": "llama_index_kgplus._structured:agenerate_json",
        "generate_json": "llama_index_kgplus._structured:generate_json",
        "parse_json_object": "llama_index_kgplus._structured:parse_json_object",
        "truncated_json_candidates": "llama_index_kgplus._structured:truncated_json_candidates",
    },
)
