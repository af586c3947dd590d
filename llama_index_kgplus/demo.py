"""Deprecated: the offline demo of ``kgplus demo`` moved to a private module; this module only keeps the old names
importable, with a DeprecationWarning, until the next release."""

from llama_index_kgplus._deprecation import deprecated_names

__all__: list[str] = []

__getattr__ = deprecated_names(
    __name__,
    {
        "run_demo": "llama_index_kgplus._demo:run_demo",
        "workbench_command": "llama_index_kgplus._demo:workbench_command",
    },
)
