"""The browser workbench (``kgplus ui``, optional extra ``ui``): ask with the routed engines and see why, browse an
index, a knowledge graph and GraphRAG communities, compare ``kgplus eval`` runs.

The logic lives here in plain classes and functions (:class:`Workbench`, :class:`EvalFolder`, the evidence and
escaping helpers); ``app.py`` is the Streamlit page code, run by ``streamlit run`` in a process that ``kgplus ui``
starts with the checked :class:`WorkbenchConfig` in ``$KGPLUS_UI_CONFIG``.

Example::

    bench = Workbench(WorkbenchConfig(index="./index").check())
    bench.documents()[:3]
"""

from llama_index_kgplus.ui._config import CONFIG_ENV, WorkbenchConfig
from llama_index_kgplus.ui._eval_folder import EvalFolder
from llama_index_kgplus.ui._evidence import (
    EvidenceItem,
    evidence_items,
    glossary_view,
    matching_sentences,
    paths_dot,
    walk_dot,
    why_line,
)
from llama_index_kgplus.ui._safety import escape_label, escape_text, highlight_html, safe_path
from llama_index_kgplus.ui._workbench import Answer, Workbench

__all__ = [
    "CONFIG_ENV",
    "Answer",
    "EvalFolder",
    "EvidenceItem",
    "Workbench",
    "WorkbenchConfig",
    "escape_label",
    "escape_text",
    "evidence_items",
    "glossary_view",
    "highlight_html",
    "matching_sentences",
    "paths_dot",
    "safe_path",
    "walk_dot",
    "why_line",
]
