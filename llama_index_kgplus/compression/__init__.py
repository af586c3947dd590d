"""Query-aware context compression between retrieval and synthesis (a LlamaIndex node postprocessor).

Example::

    from llama_index_kgplus.compression import ContextCompressor

    engine = index.as_query_engine(node_postprocessors=[ContextCompressor.from_defaults(1024, llm=llm)])
"""

from llama_index_kgplus.compression._apply import (
    arun_postprocessors,
    postprocessors_for,
    query_with_hints,
    run_postprocessors,
)
from llama_index_kgplus.compression._compressor import COMPRESSION_KEY, DEFAULT_CONTEXT_BUDGET, ContextCompressor
from llama_index_kgplus.compression._units import Unit, join_units, split_units

__all__ = [
    "COMPRESSION_KEY",
    "DEFAULT_CONTEXT_BUDGET",
    "ContextCompressor",
    "Unit",
    "arun_postprocessors",
    "join_units",
    "postprocessors_for",
    "query_with_hints",
    "run_postprocessors",
    "split_units",
]
