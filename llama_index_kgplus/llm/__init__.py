"""The home of LLM bookkeeping: model specs (which LLM or embedding model, local or served), token counting in
the model's own vocabulary and usage metering.

Example:

```python
from llama_index_kgplus.llm import AnswerUsage, attach_usage, metered

llm = metered(llm)                       # a MeteredLLM: counts every call of the LLM it wraps
usage = AnswerUsage(llm)
response = attach_usage(engine.query("..."), usage)
response.metadata["usage"]               # prompt/completion tokens, llm_calls, seconds, first_token_seconds
```
"""

from llama_index_kgplus._deprecation import deprecated_names
from llama_index_kgplus._public import set_public_module
from llama_index_kgplus.llm._specs import embed_model_from_spec, llm_from_spec, resolve_model_spec
from llama_index_kgplus.llm._usage import AnswerUsage, MeteredLLM, UsageMeter, attach_usage, metered

__all__ = [
    "llm_from_spec",
    "embed_model_from_spec",
    "resolve_model_spec",
    "MeteredLLM",
    "metered",
    "UsageMeter",
    "AnswerUsage",
    "attach_usage",
]
set_public_module(__name__, globals(), __all__)

# Names that left the public API: importable for one more release, with a DeprecationWarning.
__getattr__ = deprecated_names(
    __name__,
    {
        "acomplete_response": "llama_index_kgplus.llm._complete:acomplete_response",
        "acomplete_text": "llama_index_kgplus.llm._complete:acomplete_text",
        "complete_response": "llama_index_kgplus.llm._complete:complete_response",
        "complete_text": "llama_index_kgplus.llm._complete:complete_text",
        "describe_server_error": "llama_index_kgplus.llm._specs:describe_server_error",
        "embed_model_identity": "llama_index_kgplus.llm._specs:embed_model_identity",
        "format_usage": "llama_index_kgplus.llm._usage:format_usage",
        "is_llama_cpp": "llama_index_kgplus.llm._llama:is_llama_cpp",
        "is_metered": "llama_index_kgplus.llm._usage:is_metered",
        "llama_complete": "llama_index_kgplus.llm._llama:llama_complete",
        "llama_vocabulary": "llama_index_kgplus.llm._llama:llama_vocabulary",
        "LLMUsage": "llama_index_kgplus.llm._usage:LLMUsage",
        "local_llama": "llama_index_kgplus.llm._complete:local_llama",
        "ModelSpec": "llama_index_kgplus.llm._specs:ModelSpec",
        "parse_model_spec": "llama_index_kgplus.llm._specs:parse_model_spec",
        "repeats_itself": "llama_index_kgplus.llm._complete:repeats_itself",
        "TokenCounter": "llama_index_kgplus.llm._tokens:TokenCounter",
        "usage_meter": "llama_index_kgplus.llm._usage:usage_meter",
    },
)
