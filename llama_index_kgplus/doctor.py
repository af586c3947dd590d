"""Deprecated: the set-up checks of ``kgplus doctor`` moved to a private module; this module only keeps the old names
importable, with a DeprecationWarning, until the next release."""

from llama_index_kgplus._deprecation import deprecated_names

__all__: list[str] = []

__getattr__ = deprecated_names(
    __name__,
    {
        "Check": "llama_index_kgplus._doctor:Check",
        "run_doctor": "llama_index_kgplus._doctor:run_doctor",
    },
)
