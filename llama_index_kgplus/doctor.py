"""``kgplus doctor``: check each embedded default for real and say how to fix what is missing."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from llama_index_kgplus import defaults

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
        return Check(name, True, f"{detail} ({time.perf_counter() - started:.1f} s)")
    except Exception as exc:  # every failure becomes a line of the report, with its fix
        return Check(name, False, f"{type(exc).__name__}: {exc}")


def _data_folder() -> str:
    home = defaults.ensure_writable_dir(defaults.kgplus_home(), "data")
    return f"{home} is writable (set KGPLUS_HOME to move it)"


def _embedding() -> str:
    model = defaults.default_embed_model()
    vec = model.get_text_embedding("kgplus doctor")
    return f"all-MiniLM-L6-v2 from {defaults.embed_model_path()} -> {len(vec)}-d vectors"


def _llm(model: str | None) -> Callable[[], str]:
    def check() -> str:
        path = defaults.resolve_llm_path(model)
        llm = defaults.default_llm(model, max_new_tokens=8)
        text = llm.complete("Say OK.").text.strip()
        if not text:
            raise RuntimeError(f"{path} generated no text")
        return f"{path.name} generated {text[:30]!r}"

    return check


def _graph_store() -> str:
    from llama_index_kgplus.graph_stores import open_graph_store

    uri = defaults.default_graph_store_uri()
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


def run_doctor(*, llm: str | None = None, out: TextIO = sys.stdout) -> bool:
    """Print one line per check; return True when every default works (optional backends only inform)."""
    required = [
        _run("data folder", _data_folder),
        _run("embedding model", _embedding),
        _run("local LLM", _llm(llm)),
        _run("graph store", _graph_store),
    ]
    optional = [
        _run("neo4j backend", _optional("llama_index.graph_stores.neo4j", "neo4j")),
        _run("falkordb backend", _optional("llama_index.graph_stores.falkordb", "falkordb")),
        _run("bedrock LLM", _optional("llama_index.llms.bedrock_converse", "bedrock")),
    ]
    for check in required:
        print(f"[{'ok' if check.ok else 'FAIL'}] {check.name}: {check.detail}", file=out)
    for check in optional:
        print(f"[{'ok' if check.ok else '--'}] {check.name}: {check.detail}", file=out)
    healthy = all(c.ok for c in required)
    print("all embedded defaults work" if healthy else "some defaults are broken: see the lines above", file=out)
    return healthy
