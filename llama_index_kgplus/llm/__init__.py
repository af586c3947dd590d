"""The home of LLM bookkeeping: model specs (which LLM or embedding model, local or served), token counting in
the model's own vocabulary and usage metering.

Example::

    from llama_index_kgplus.llm import AnswerUsage, attach_usage, metered

    llm = metered(llm)                       # a MeteredLLM: counts every call of the LLM it wraps
    usage = AnswerUsage(llm)
    response = attach_usage(engine.query("..."), usage)
    response.metadata["usage"]               # prompt/completion tokens, llm_calls, seconds, first_token_seconds
"""

from llama_index_kgplus.llm._complete import (
    acomplete_response,
    acomplete_text,
    complete_response,
    complete_text,
    local_llama,
    repeats_itself,
)
from llama_index_kgplus.llm._llama import is_llama_cpp, llama_complete, llama_vocabulary
from llama_index_kgplus.llm._specs import (
    ModelSpec,
    describe_server_error,
    embed_model_from_spec,
    embed_model_identity,
    llm_from_spec,
    parse_model_spec,
    resolve_model_spec,
)
from llama_index_kgplus.llm._tokens import TokenCounter
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
    "ModelSpec",
    "TokenCounter",
    "UsageMeter",
    "acomplete_response",
    "acomplete_text",
    "attach_usage",
    "complete_response",
    "complete_text",
    "describe_server_error",
    "embed_model_from_spec",
    "embed_model_identity",
    "format_usage",
    "is_llama_cpp",
    "is_metered",
    "llama_complete",
    "llama_vocabulary",
    "llm_from_spec",
    "local_llama",
    "metered",
    "parse_model_spec",
    "repeats_itself",
    "resolve_model_spec",
    "usage_meter",
]
