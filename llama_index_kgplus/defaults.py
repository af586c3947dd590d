"""Deprecated: model names, paths and environment variables of the offline defaults moved to a private module; this
module only keeps the old names importable, with a DeprecationWarning, until the next release."""

from llama_index_kgplus._deprecation import deprecated_names

__all__: list[str] = []

__getattr__ = deprecated_names(
    __name__,
    {
        "default_graph_store_path": "llama_index_kgplus._defaults:default_graph_store_path",
        "DEFAULT_LLM": "llama_index_kgplus._defaults:DEFAULT_LLM",
        "EMBED_MODEL_ENV": "llama_index_kgplus._defaults:EMBED_MODEL_ENV",
        "embed_model_path": "llama_index_kgplus._defaults:embed_model_path",
        "ensure_writable_dir": "llama_index_kgplus._defaults:ensure_writable_dir",
        "FAST_LLM": "llama_index_kgplus._defaults:FAST_LLM",
        "gguf_path": "llama_index_kgplus._defaults:gguf_path",
        "GGUFModel": "llama_index_kgplus._defaults:GGUFModel",
        "GRAPH_STORE_ENV": "llama_index_kgplus._defaults:GRAPH_STORE_ENV",
        "HOME_ENV": "llama_index_kgplus._defaults:HOME_ENV",
        "kgplus_home": "llama_index_kgplus._defaults:kgplus_home",
        "LLM_ENV": "llama_index_kgplus._defaults:LLM_ENV",
        "models_dir": "llama_index_kgplus._defaults:models_dir",
        "MODELS_DIR_ENV": "llama_index_kgplus._defaults:MODELS_DIR_ENV",
        "verify_gguf": "llama_index_kgplus._defaults:verify_gguf",
    },
)
