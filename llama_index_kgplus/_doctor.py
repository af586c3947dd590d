"""``kgplus doctor``: check each embedded default for real and say how to fix what is missing."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, cast

from llama_index_kgplus import _defaults
from llama_index_kgplus._redact import redact_text
from llama_index_kgplus.graph_stores._uri import default_graph_store_uri
from llama_index_kgplus.llm import embed_model_from_spec, llm_from_spec, resolve_model_spec

__all__ = [
    "Check",
    "run_doctor",
]


@dataclass
class Check:
    """One line of ``kgplus doctor``: what was checked, whether it works, and the detail or the fix."""

    name: str
    ok: bool
    detail: str


def _run(name: str, fn: Callable[[], str]) -> Check:
    started = time.perf_counter()
    try:
        detail = fn()
        return Check(name, True, redact_text(f"{detail} ({time.perf_counter() - started:.1f} s)"))
    except Exception as exc:  # every failure becomes a line of the report, with its fix
        from llama_index_kgplus.llm._specs import describe_server_error

        return Check(name, False, describe_server_error(exc) or redact_text(f"{type(exc).__name__}: {exc}"))


def _data_folder() -> str:
    home = _defaults.ensure_writable_dir(_defaults.kgplus_home(), "data")
    return f"{home} is writable (set KGPLUS_HOME to move it)"


def _embedding(spec: str | None) -> Callable[[], str]:
    def check() -> str:
        model = embed_model_from_spec(spec, max_retries=0)  # a probe: a server that is down is reported at once
        vec = model.get_text_embedding("kgplus doctor")
        if not vec:
            raise RuntimeError(f"{model.model_name} returned an empty vector")
        chosen = resolve_model_spec(spec, "embed_model")
        local = _defaults.LOCAL_EMBED_MODELS.get(chosen.model) if chosen.kind == "local" else None
        source = f"{local.name} ({local.description})" if local else str(chosen)
        return f"{source} -> {len(vec)}-d vectors"

    return check


def _llm(spec: str | None) -> Callable[[], str]:
    def check() -> str:
        chosen = resolve_model_spec(spec, "llm")
        llm = llm_from_spec(spec, max_new_tokens=8, max_retries=0)
        text = llm.complete("Say OK.").text.strip()
        name = Path(cast(Any, llm).model_path).name if chosen.kind == "local" else str(chosen)  # a LlamaCPP
        if not text:
            raise RuntimeError(f"{name} generated no text")
        window = _served_context_window(chosen) if chosen.remote else llm.metadata.context_window
        reported = (
            f"context window {window}"
            if window
            else "the server reports no context window: pass --context-window where a command has it"
        )
        return f"{name} generated {text[:30]!r}; {reported}"

    return check


def _served_context_window(spec: Any) -> int | None:
    """The context window a server reports for the model (vLLM: max_model_len; llama.cpp / Ollama: n_ctx)."""
    import os

    import httpx

    try:
        if spec.kind == "openai-like":
            key = os.environ.get("OPENAI_API_KEY")
            headers = {"Authorization": f"Bearer {key}"} if key else {}
            for item in httpx.get(f"{spec.base_url}/models", headers=headers, timeout=10).json().get("data", []):
                if item.get("id") == spec.model:
                    meta = item.get("meta") or {}
                    window = item.get("max_model_len") or item.get("context_length") or meta.get("n_ctx_train")
                    return int(window) if window else None
        if spec.kind == "ollama":
            info = httpx.post(f"{spec.base_url}/api/show", json={"model": spec.model}, timeout=10).json()
            lengths = [v for k, v in (info.get("model_info") or {}).items() if k.endswith(".context_length")]
            return int(lengths[0]) if lengths else None
    except (httpx.HTTPError, ValueError, TypeError, AttributeError):
        return None
    return None


def _graph_store() -> str:
    from llama_index_kgplus.graph_stores import open_graph_store

    uri = default_graph_store_uri()
    store = open_graph_store(uri)
    store.structured_query("RETURN 1 AS ok")
    return f"opened {uri}"


def _optional(module: str, extra: str) -> Callable[[], str]:
    def check() -> str:
        import importlib

        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ImportError(f"optional: pip install 'llama-index-kgplus[{extra}]'") from exc
        return f"{module} importable"

    return check


def run_doctor(*, llm: str | None = None, embed_model: str | None = None, out: TextIO | None = None) -> bool:
    """Print one line per check; return True when every default works (optional backends only inform).
    ``llm`` and ``embed_model`` are model specs (default: ``$KGPLUS_LLM``, ``$KGPLUS_EMBED_MODEL``, the local
    models); a served model is checked for real: one short completion, one embedding. Prints to ``out``
    (default stdout)."""
    out = out or sys.stdout
    required = [
        _run("data folder", _data_folder),
        _run("embedding model", _embedding(embed_model)),
        _run("LLM", _llm(llm)),
        _run("graph store", _graph_store),
    ]
    optional = [
        _run("neo4j backend", _optional("llama_index.graph_stores.neo4j", "neo4j")),
        _run("falkordb backend", _optional("llama_index.graph_stores.falkordb", "falkordb")),
        _run("bedrock backend", _optional("llama_index.llms.bedrock_converse", "bedrock")),
        _run("openai-like backend", _optional("llama_index.llms.openai_like", "openai")),
        _run("ollama backend", _optional("llama_index.llms.ollama", "ollama")),
    ]
    for check in required:
        print(f"[{'ok' if check.ok else 'FAIL'}] {check.name}: {check.detail}", file=out)
    for check in optional:
        print(f"[{'ok' if check.ok else '--'}] {check.name}: {check.detail}", file=out)
    healthy = all(c.ok for c in required)
    print("all embedded defaults work" if healthy else "some defaults are broken: see the lines above", file=out)
    return healthy
