"""Model specs: one string names the LLM or the embedding model of every command and of the library, and
:func:`llm_from_spec` / :func:`embed_model_from_spec` are the one way from such a string to a model.

=============================  ==============================================================================
``local:NAME`` or ``NAME``     a packaged local model (``qwen2.5-coder-1.5b``, ...) or a ``.gguf`` path; for
                               embeddings ``all-MiniLM-L6-v2-onnx-int8`` (the default, also ``local``: onnxruntime,
                               no torch), ``all-MiniLM-L6-v2-sbert`` (sentence-transformers, the ``sbert`` extra)
                               or ``multilingual-e5-small-q4`` (stronger, slower: the ``e5`` extra)
``openai-like:MODEL@URL``      any OpenAI-compatible server (vLLM, TGI, llama.cpp's server, LM Studio)
``ollama:MODEL[@URL]``         an Ollama server (default ``http://localhost:11434``)
``bedrock:MODEL_ID``           Amazon Bedrock (Converse for LLMs), region and credentials from the AWS chain
``module:factory``             a function of yours, called with no argument, that returns the model
=============================  ==============================================================================

No spec (None) means ``$KGPLUS_LLM`` / ``$KGPLUS_EMBED_MODEL``, else the packaged default.

Credentials come from the environment only (``OPENAI_API_KEY``; the AWS variables, profile and config files): a
spec that carries a key or a password is refused. Each remote backend is an optional extra.

Example:

```python
from llama_index_kgplus.llm import llm_from_spec, embed_model_from_spec

llm = llm_from_spec("openai-like:qwen2.5-coder-1.5b@http://127.0.0.1:8080/v1")
embed_model = embed_model_from_spec("ollama:nomic-embed-text@http://gpu-box:11434")
local = llm_from_spec()              # the packaged Qwen2.5-Coder-1.5B through llama.cpp
```
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from llama_index_kgplus._defaults import (
    DEFAULT_EMBED_MODEL,
    DEFAULT_LLM,
    E5_EMBED_MODEL,
    EMBED_CACHE_ENV,
    EMBED_MODEL_ENV,
    EMBED_ONNX,
    LLM_ENV,
    LLM_TIMEOUT_ENV,
    LOCAL_EMBED_MODELS,
    SBERT_EMBED_MODEL,
    local_embed_name,
    positive_env_number,
)
from llama_index_kgplus._redact import is_secret_name, redact_text, redact_url
from llama_index_kgplus.errors import KGPlusSetupError

if TYPE_CHECKING:
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.llms import LLM

SpecKind = Literal["local", "openai-like", "ollama", "bedrock", "factory"]
KINDS: tuple[str, ...] = ("local", "openai-like", "ollama", "bedrock")
# ``package.module:function``: a factory of the user's (a Windows drive ``C:`` or a ``.gguf`` path is not one)
_FACTORY_RE = re.compile(r"[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*")
OLLAMA_URL = "http://localhost:11434"
DEFAULT_TIMEOUT = 120.0
DEFAULT_MAX_RETRIES = 3
# Shapes of secrets that must never sit on a command line: OpenAI-style keys, AWS access key ids, bearer tokens.
_SECRET_RE = re.compile(r"\bsk-[A-Za-z0-9_-]{12,}|\bA(?:KIA|SIA)[0-9A-Z]{16}\b|\bBearer\s", re.IGNORECASE)
_CREDENTIALS_IN_URL = (
    "The model spec's URL carries credentials (not repeated here); set OPENAI_API_KEY (or the backend's variable) "
    "in the environment and give the URL without them."
)


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model spec: the backend ``kind``, the ``model`` name or id, and the server's ``base_url``."""

    kind: SpecKind
    model: str
    base_url: str | None = None

    @property
    def remote(self) -> bool:
        """True for a model behind a server (``openai-like``, ``ollama``, ``bedrock``)."""
        return self.kind not in ("local", "factory")

    def __str__(self) -> str:
        return f"{self.kind}:{self.model}" + (f"@{self.base_url}" if self.base_url else "")


def parse_model_spec(spec: str) -> ModelSpec:
    """Parse ``spec`` (see the module docstring); a bare name or path is ``local``.

    >>> parse_model_spec("openai-like:qwen@http://127.0.0.1:8080/v1")
    ModelSpec(kind='openai-like', model='qwen', base_url='http://127.0.0.1:8080/v1')
    """
    spec = str(spec).strip()
    if not spec:
        raise KGPlusSetupError(
            "The model spec is empty: give local:NAME, openai-like:MODEL@URL, ollama:MODEL or bedrock:MODEL_ID."
        )
    if _SECRET_RE.search(spec):
        raise KGPlusSetupError(
            "The model spec holds what looks like a key or token: never put credentials in a spec or on the "
            "command line; set OPENAI_API_KEY (or the AWS variables / profile) in the environment instead."
        )
    kind, sep, rest = spec.partition(":")
    if sep and kind not in KINDS and _FACTORY_RE.fullmatch(spec) and not os.path.exists(spec):
        return ModelSpec("factory", spec)
    if not sep or kind not in KINDS:
        return ModelSpec("local", spec)
    if kind == "local":
        return ModelSpec("local", _required(rest, kind, "local:NAME"))
    if kind == "bedrock":
        return ModelSpec("bedrock", _required(rest, kind, "bedrock:MODEL_ID"))
    model, at, url = rest.partition("@")
    if "@" in url:  # user:password@host: never repeated in a message
        raise KGPlusSetupError(_CREDENTIALS_IN_URL)
    model = _required(model, kind, f"{kind}:MODEL@URL")
    if not at:
        if kind == "ollama":
            return ModelSpec("ollama", model, OLLAMA_URL)
        raise KGPlusSetupError(
            f"The {kind} spec names no server: write {kind}:MODEL@URL, e.g. {kind}:{model}@http://127.0.0.1:8080/v1."
        )
    return ModelSpec(kind, model, _checked_url(url, kind))  # type: ignore[arg-type]


def _required(value: str, kind: str, form: str) -> str:
    if not value.strip():
        raise KGPlusSetupError(f"The {kind} spec names no model: write {form}.")
    return value.strip()


def _checked_url(url: str, kind: str) -> str:
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - a port that is not a number, or out of range, raises here
    except ValueError as exc:  # "Invalid IPv6 URL", "Port out of range 0-65535"
        raise KGPlusSetupError(f"The {kind} spec's server is not a valid URL ({exc}).") from None
    names = [pair.partition("=")[0] for pair in re.split(r"[&;]", f"{parts.query}&{parts.fragment}")]
    if "@" in parts.netloc or any(is_secret_name(name) for name in names):
        raise KGPlusSetupError(_CREDENTIALS_IN_URL)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise KGPlusSetupError(f"The {kind} spec's server is not an http(s) URL (http://host:port/...).")
    return url.strip().rstrip("/")


def _import(module: str, extra: str, what: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise KGPlusSetupError(f"{what} needs the {extra!r} extra: pip install 'llama-index-kgplus[{extra}]'.") from exc


def _openai_key() -> str:
    # Local OpenAI-compatible servers (llama.cpp, vLLM without --api-key) accept any key; the client needs one.
    return os.environ.get("OPENAI_API_KEY") or "not-needed"


def _aws_region() -> str | None:
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if region:
        return region
    boto3 = _import("boto3", "bedrock", "bedrock:")
    region = boto3.session.Session().region_name
    if not region:
        raise KGPlusSetupError("bedrock: no AWS region: set AWS_REGION (or a region in the AWS profile).")
    return str(region)


def resolve_model_spec(
    spec: str | os.PathLike | ModelSpec | None = None, kind: Literal["llm", "embed_model"] = "llm"
) -> ModelSpec:
    """The spec a model of ``kind`` comes from, parsed and checked (no model loads): ``spec``, else
    ``$KGPLUS_LLM`` / ``$KGPLUS_EMBED_MODEL``, else the packaged default. An empty spec is an error, never the
    default.

    Example:

    ```python
    resolve_model_spec(None, "embed_model")   # ModelSpec(kind='local', model='all-MiniLM-L6-v2-onnx-int8')
    ```

    A local embedding spec comes back under its model's own name (``local`` is ``all-MiniLM-L6-v2-onnx-int8``).
    """
    if isinstance(spec, ModelSpec):
        parsed = spec
        if parsed.base_url is not None:  # made by hand: held to the rules of a parsed one
            _checked_url(parsed.base_url, parsed.kind)
    else:
        env, default = (LLM_ENV, DEFAULT_LLM) if kind == "llm" else (EMBED_MODEL_ENV, DEFAULT_EMBED_MODEL)
        if spec is None:
            spec = os.environ.get(env)
        parsed = parse_model_spec(default if spec is None else str(spec))
    if kind == "embed_model" and parsed.kind == "local":
        name = local_embed_name(parsed.model)
        if name is None:
            raise KGPlusSetupError(
                f"Unknown embedding model spec {parsed.model!r}: the local ones are {DEFAULT_EMBED_MODEL} (the "
                f"default, also 'local'), {SBERT_EMBED_MODEL} and {E5_EMBED_MODEL}; served ones are "
                "openai-like:MODEL@URL, ollama:MODEL[@URL] or bedrock:MODEL_ID."
            )
        parsed = ModelSpec("local", name)
    if kind == "llm" and parsed.kind == "local":
        from llama_index_kgplus.llm._local import local_model_file

        local_model_file(parsed.model)  # a packaged name or a .gguf file: checked now, before any model loads
    return parsed


def embed_model_identity(spec: str | os.PathLike | ModelSpec | None = None) -> dict[str, Any] | None:
    """What the embedding model of ``spec`` will be known by, without loading it: ``{"model_name", "server"}``
    (and ``class`` for a packaged model) as an index records them (None for a ``module:factory`` spec, known
    only once called)."""
    parsed = resolve_model_spec(spec, "embed_model")
    if parsed.kind == "factory":
        return None
    if parsed.kind == "local":
        model = LOCAL_EMBED_MODELS[parsed.model]
        return {"class": model.record_class, "model_name": model.record_name, "server": None}
    return {"model_name": parsed.model, "server": redact_url(parsed.base_url) if parsed.base_url else None}


def _from_factory(spec: ModelSpec, expected: type, what: str) -> Any:
    """The model a ``module:factory`` spec returns, checked to be a LlamaIndex ``expected``."""
    import importlib

    module, _, attr = spec.model.partition(":")
    try:
        factory = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise KGPlusSetupError(f"Model spec {spec.model}: cannot import {attr!r} from {module!r} ({exc}).") from exc
    model = factory()
    if not isinstance(model, expected):
        raise KGPlusSetupError(
            f"Model spec {spec.model}: the factory returned a {type(model).__name__}, not a LlamaIndex {what}."
        )
    return model


def llm_from_spec(
    spec: str | os.PathLike | ModelSpec | None = None,
    *,
    temperature: float = 0.0,
    max_new_tokens: int = 512,
    context_window: int | None = None,
    timeout: float | None = None,
    max_retries: int = DEFAULT_MAX_RETRIES,
    **local_kwargs: Any,
) -> LLM:
    """The LlamaIndex LLM that ``spec`` names (None: ``$KGPLUS_LLM``, else the packaged
    ``qwen2.5-coder-1.5b``). ``context_window`` defaults to the packaged model's, or to 4096 for servers that do
    not report theirs; ``timeout`` (seconds per request; None: ``$KGPLUS_LLM_TIMEOUT``, else 120) and ``max_retries`` (with backoff, on 429 and 5xx) apply
    to servers; ``local_kwargs`` (``n_threads``, ``seed``, ``model_kwargs``, ...) to a local model.

    Example:

    ```python
    llm = llm_from_spec("qwen2.5-coder-0.5b", max_new_tokens=256)
    ```
    """
    from llama_index.core.llms import LLM

    parsed = resolve_model_spec(spec, "llm")
    window = context_window or 4096
    timeout = timeout or positive_env_number(LLM_TIMEOUT_ENV, DEFAULT_TIMEOUT)
    if parsed.kind == "factory":
        return _from_factory(parsed, LLM, "LLM")  # type: ignore[no-any-return]
    if parsed.kind == "local":
        from llama_index_kgplus.llm._local import local_llm

        return local_llm(
            parsed.model,
            temperature=temperature,
            max_new_tokens=max_new_tokens,
            context_window=context_window,
            **local_kwargs,
        )
    if parsed.kind == "openai-like":
        _import("llama_index.llms.openai_like", "openai", "openai-like:")
        from llama_index_kgplus.llm._openai_like import ServedOpenAILike

        return ServedOpenAILike(
            model=parsed.model,
            api_base=parsed.base_url,
            api_key=_openai_key(),
            is_chat_model=True,
            context_window=window,
            max_tokens=max_new_tokens,
            temperature=temperature,
            timeout=timeout,
            max_retries=max_retries,
            # usage figures at the end of a stream, where the server offers them (OpenAI, vLLM); LlamaIndex drops
            # the option from calls that do not stream
            additional_kwargs={"stream_options": {"include_usage": True}},
        )
    if parsed.kind == "ollama":
        _import("llama_index.llms.ollama", "ollama", "ollama:")
        from llama_index_kgplus.llm._ollama import ServedOllama

        return ServedOllama(
            model=parsed.model,
            base_url=parsed.base_url or OLLAMA_URL,
            temperature=temperature,
            context_window=window,
            request_timeout=timeout,
            additional_kwargs={"num_predict": max_new_tokens},
        )
    module = _import("llama_index.llms.bedrock_converse", "bedrock", "bedrock:")
    return module.BedrockConverse(  # type: ignore[no-any-return]
        model=parsed.model,
        region_name=_aws_region(),
        temperature=temperature,
        max_tokens=max_new_tokens,
        timeout=timeout,
        max_retries=max_retries,
    )


def embed_model_from_spec(
    spec: str | ModelSpec | None = None,
    *,
    timeout: float | None = None,
    max_retries: int = DEFAULT_MAX_RETRIES,
    cache: str | os.PathLike[str] | None = None,
    **kwargs: Any,
) -> BaseEmbedding:
    """The LlamaIndex embedding model that ``spec`` names (None: ``$KGPLUS_EMBED_MODEL``, else the packaged
    all-MiniLM-L6-v2 as int8 ONNX on onnxruntime, ``all-MiniLM-L6-v2-onnx-int8``). ``cache`` (None:
    ``$KGPLUS_EMBED_CACHE``, else no cache): a SQLite file of the vectors already computed, which this model
    reads before it computes (LlamaIndex's ``embeddings_cache``, kept apart per model); processes may share it.

    Example:

    ```python
    embed_model = embed_model_from_spec()            # all-MiniLM-L6-v2, 384-d, from its PyPI package, no torch
    exact = embed_model_from_spec("all-MiniLM-L6-v2-sbert")  # sentence-transformers (the sbert extra, torch)
    stronger = embed_model_from_spec("multilingual-e5-small-q4")  # e5-small in 4 bits (the e5 extra)
    cached = embed_model_from_spec(cache="~/.cache/kgplus-embeddings.sqlite")  # a re-ingest embeds only new text
    ```
    """
    model = _embed_model(spec, timeout, max_retries, **kwargs)
    cache = cache or os.environ.get(EMBED_CACHE_ENV) or None
    if cache is not None:
        from llama_index_kgplus._kvstore import SQLiteKVStore

        model.embeddings_cache = SQLiteKVStore(path=os.fspath(cache), namespace=_cache_namespace(model))
    return model


def _cache_namespace(model: BaseEmbedding) -> str:
    """What tells the vectors of one model from another's in a shared cache: its class, name and the settings
    that change its vectors (the default model's pinned weights, its ONNX file and length, a server)."""
    parts = [model.class_name(), str(model.model_name)]
    for field in ("onnx_file", "max_length", "api_base", "base_url", "dimensions"):
        value = getattr(model, field, None)
        if value is not None:
            parts.append(f"{field}={value}")
    if model.class_name() == "OnnxMiniLMEmbedding" and getattr(model, "onnx_file", None) is None:
        parts.append(EMBED_ONNX.sha256)
    return "|".join(parts)


def _embed_model(spec: str | ModelSpec | None, timeout: float | None, max_retries: int, **kwargs: Any) -> BaseEmbedding:
    from llama_index.core.base.embeddings.base import BaseEmbedding

    parsed = resolve_model_spec(spec, "embed_model")
    timeout = timeout or positive_env_number(LLM_TIMEOUT_ENV, DEFAULT_TIMEOUT)
    if parsed.kind == "factory":
        return _from_factory(parsed, BaseEmbedding, "embedding model")  # type: ignore[no-any-return]
    if parsed.kind == "local":
        from llama_index_kgplus.llm._local import local_embed_model

        return local_embed_model(parsed.model, **kwargs)
    if parsed.kind == "openai-like":
        _import("llama_index.embeddings.openai", "openai", "openai-like:")
        from llama_index_kgplus.llm._openai_embedding import ServedOpenAIEmbedding

        return ServedOpenAIEmbedding(
            model_name=parsed.model,
            api_base=parsed.base_url,
            api_key=_openai_key(),
            timeout=timeout,
            max_retries=max_retries,
            **kwargs,
        )
    if parsed.kind == "ollama":
        _import("llama_index.embeddings.ollama", "ollama", "ollama:")
        from llama_index_kgplus.llm._ollama import ServedOllamaEmbedding

        return ServedOllamaEmbedding(model_name=parsed.model, base_url=parsed.base_url, **kwargs)
    module = _import("llama_index.embeddings.bedrock", "bedrock", "bedrock:")
    return module.BedrockEmbedding(  # type: ignore[no-any-return]
        model_name=parsed.model, region_name=_aws_region(), timeout=timeout, max_retries=max_retries, **kwargs
    )


_UNREACHABLE = {"APIConnectionError", "ConnectError", "ConnectTimeout", "EndpointConnectionError",
                "ConnectTimeoutError"}  # fmt: skip
_TIMED_OUT = {"APITimeoutError", "ReadTimeout", "ReadTimeoutError", "TimeoutException"}


def describe_server_error(exc: BaseException) -> str | None:
    """One line that says what went wrong between this pack and a model server (unreachable, timed out, rate
    limited after the retries, unknown model, an error reply, no AWS credentials), or None for other errors; the
    server's URL and what it said are redacted (:mod:`llama_index_kgplus._redact`)."""
    described = _describe_server_error(exc)
    return None if described is None else redact_text(described)


def _describe_server_error(exc: BaseException) -> str | None:
    seen: set[int] = set()
    err: BaseException | None = exc
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        name = type(err).__name__
        request = getattr(err, "request", None)
        where = f" at {getattr(request, 'url', '')}" if request is not None else ""
        status = getattr(err, "status_code", None)
        if name in _UNREACHABLE:
            return f"cannot reach the model server{where} ({name}): check that it runs and that the spec's URL is right"
        if name == "RateLimitError":
            return f"the model server{where} kept answering 429 (rate limit) after {DEFAULT_MAX_RETRIES} retries"
        if name == "NotFoundError" and status == 404:
            return f"the model server{where} answered 404: wrong model name or URL ({_first_line(err)})"
        if isinstance(status, int) and status >= 400:
            return f"the model server{where} answered {status}: {_first_line(err)}"
        if name in ("NoCredentialsError", "PartialCredentialsError"):
            return "no AWS credentials: set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
        if name == "ConnectionError" and "ollama" in str(err).lower():
            return f"cannot reach the Ollama server: {_first_line(err)}"
        err = err.__cause__  # only what the error was raised from, not what was being handled around it
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
