"""MkDocs hook: the API reference pages list every public name (each module's ``__all__``) for mkdocstrings.

Each name is given by its public path (``llama_index_kgplus.kg.KGPath``); mkdocstrings (griffe) reads the source and
follows the re-export to the private module that defines it."""

from __future__ import annotations

import importlib
import re
from typing import Any

SUBPACKAGES = (
    "llm", "indexing", "errors", "summarizers", "hierarchy", "glossary", "kg", "entity_graph", "graphrag", "graph_stores",
    "tables", "router", "compression", "evaluation", "events", "sample", "ui", "cli",
)  # fmt: skip
_ONE = re.compile(r"<!-- api: ([\w.]+) -->")


def _entries(module_name: str, skip: frozenset[str] = frozenset()) -> str:
    module = importlib.import_module(module_name)
    names = [n for n in getattr(module, "__all__", []) if not n.startswith("_")]
    shared = [n for n in names if n in skip]
    listed = "\n\n".join(f"::: {module_name}.{name}" for name in names if name not in skip)
    also = f"Also here, documented on the top-level page: {', '.join(f'`{n}`' for n in shared)}.\n\n" if shared else ""
    return also + listed


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    """Fill ``<!-- api: MODULE -->`` with the module's public names and ``<!-- api-subpackages -->`` with every
    subpackage's."""
    markdown = _ONE.sub(lambda m: _entries(m.group(1)), markdown)
    if "<!-- api-subpackages -->" in markdown:
        parts = []
        top = frozenset(importlib.import_module("llama_index_kgplus").__all__)
        for name in SUBPACKAGES:
            module = importlib.import_module(f"llama_index_kgplus.{name}")
            doc = (module.__doc__ or "").strip().split("\n\n")[0]
            parts.append(f"## `llama_index_kgplus.{name}`\n\n{doc}\n\n{_entries(module.__name__, top)}")
        markdown = markdown.replace("<!-- api-subpackages -->", "\n\n".join(parts))
    return markdown
