"""Glossary-aware querying: load a glossary, pick the terms a query needs, rewrite it, retrieve, answer.

Example::

    from llama_index_kgplus.glossary import Glossary, GlossaryQueryEngine

    glossary = Glossary.load("glossary.json")
    engine = GlossaryQueryEngine.from_defaults(glossary, index=index, llm=llm, mode="fused")
    response = engine.query("How can I tell whether an object can be used as a dict key?")
    response.metadata["rewritten_query"], response.metadata["glossary_terms"]
"""

from llama_index_kgplus.glossary._engine import (
    DEFAULT_MODE,
    RETRIEVAL_MODES,
    GlossaryQueryEngine,
    GlossaryRetrieval,
    RetrievalMode,
)
from llama_index_kgplus.glossary._entry import GlossaryEntry
from llama_index_kgplus.glossary._fusion import reciprocal_rank_fusion
from llama_index_kgplus.glossary._guard import DriftGuard, GuardVerdict
from llama_index_kgplus.glossary._model import Glossary, load_glossary
from llama_index_kgplus.glossary._prompts import (
    DEFAULT_GLOSSARY_CONTEXT_PROMPT,
    DEFAULT_REWRITE_PROMPT,
    clean_rewrite,
)
from llama_index_kgplus.glossary._rewrite import GlossaryQueryRewriter, QueryRewrite, ReviewHook
from llama_index_kgplus.glossary._selection import GlossarySelection, GlossaryTermSelector, SelectedEntry

__all__ = [
    "DEFAULT_GLOSSARY_CONTEXT_PROMPT",
    "DEFAULT_MODE",
    "DEFAULT_REWRITE_PROMPT",
    "RETRIEVAL_MODES",
    "DriftGuard",
    "Glossary",
    "GlossaryEntry",
    "GlossaryQueryEngine",
    "GlossaryQueryRewriter",
    "GlossaryRetrieval",
    "GlossarySelection",
    "GlossaryTermSelector",
    "GuardVerdict",
    "QueryRewrite",
    "RetrievalMode",
    "ReviewHook",
    "SelectedEntry",
    "clean_rewrite",
    "load_glossary",
    "reciprocal_rank_fusion",
]
