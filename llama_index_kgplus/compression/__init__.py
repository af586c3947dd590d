"""Query-aware context compression between retrieval and synthesis (a LlamaIndex node postprocessor).

Example:

```python
from llama_index_kgplus.compression import ContextCompressor

engine = index.as_query_engine(node_postprocessors=[ContextCompressor.from_defaults(1024, llm=llm)])
```
"""

from llama_index_kgplus._deprecation import deprecated_names
from llama_index_kgplus._public import set_public_module
from llama_index_kgplus.compression._compressor import ContextCompressor

__all__ = [
    "ContextCompressor",
]
set_public_module(__name__, globals(), __all__)

# Names that left the public API: importable for one more release, with a DeprecationWarning.
__getattr__ = deprecated_names(
    __name__,
    {
        "arun_postprocessors": "llama_index_kgplus.compression._apply:arun_postprocessors",
        "COMPRESSION_KEY": "llama_index_kgplus.compression._compressor:COMPRESSION_KEY",
        "DEFAULT_CONTEXT_BUDGET": "llama_index_kgplus.compression._compressor:DEFAULT_CONTEXT_BUDGET",
        "join_units": "llama_index_kgplus.compression._units:join_units",
        "postprocessors_for": "llama_index_kgplus.compression._apply:postprocessors_for",
        "query_with_hints": "llama_index_kgplus.compression._apply:query_with_hints",
        "run_postprocessors": "llama_index_kgplus.compression._apply:run_postprocessors",
        "split_units": "llama_index_kgplus.compression._units:split_units",
        "Unit": "llama_index_kgplus.compression._units:Unit",
    },
)
