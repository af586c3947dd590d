"""Deprecated: test helpers (a scripted LLM, graph-store servers) moved to a private module; this module only keeps
the old names importable, with a DeprecationWarning, until the next release."""

from llama_index_kgplus._deprecation import deprecated_names

__all__: list[str] = []

__getattr__ = deprecated_names(
    __name__,
    {
        "ArcadeDB": "llama_index_kgplus._testing:ArcadeDB",
        "arcadedb_server": "llama_index_kgplus._testing:arcadedb_server",
        "falkordb_server": "llama_index_kgplus._testing:falkordb_server",
        "free_port": "llama_index_kgplus._testing:free_port",
        "llama_cpp_server": "llama_index_kgplus._testing:llama_cpp_server",
        "ScriptedLLM": "llama_index_kgplus._testing:ScriptedLLM",
    },
)
