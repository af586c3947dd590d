"""The home of LLM bookkeeping: token counting in the model's own vocabulary and usage metering.

Example::

    from llama_index_kgplus.llm import AnswerUsage, attach_usage, metered

    llm = metered(llm)                       # counts every call (llama.cpp: in place)
    usage = AnswerUsage(llm)
    response = attach_usage(engine.query("..."), usage)
    response.metadata["usage"]               # prompt/completion tokens, llm_calls, seconds, first_token_seconds
"""

from llama_index_kgplus.llm._tokens import TokenCounter, llama_model
from llama_index_kgplus.llm._usage import (
    AnswerUsage,
    LLMUsage,
    MeteredLLM,
    UsageMeter,
    attach_usage,
    format_usage,
    is_metered,
    metered,
    usage_meter,
)

__all__ = [
    "AnswerUsage",
    "LLMUsage",
    "MeteredLLM",
    "TokenCounter",
    "UsageMeter",
    "attach_usage",
    "format_usage",
    "is_metered",
    "llama_model",
    "metered",
    "usage_meter",
]
