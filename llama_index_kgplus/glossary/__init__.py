"""Glossary-aware querying: load a glossary, pick the terms a query needs, rewrite it, retrieve, answer.

Example:

```python
from llama_index_kgplus.glossary import Glossary, GlossaryQueryEngine

glossary = Glossary.load("glossary.json")
engine = GlossaryQueryEngine.from_defaults(glossary, index=index, llm=llm, mode="fused")
response = engine.query("How can I tell whether an object can be used as a dict key?")
response.metadata["rewritten_query"], response.metadata["glossary_terms"]
```
"""

from llama_index_kgplus._deprecation import deprecated_names
from llama_index_kgplus._public import set_public_module
from llama_index_kgplus.glossary._engine import GlossaryQueryEngine, GlossaryRetrievalMode
from llama_index_kgplus.glossary._entry import GlossaryEntry
from llama_index_kgplus.glossary._guard import DriftGuard
from llama_index_kgplus.glossary._model import Glossary
from llama_index_kgplus.glossary._rewrite import GlossaryQueryRewriter
from llama_index_kgplus.glossary._selection import GlossaryTermSelector

__all__ = [
    "Glossary",
    "GlossaryEntry",
    "GlossaryQueryEngine",
    "GlossaryQueryRewriter",
    "GlossaryTermSelector",
    "DriftGuard",
    "GlossaryRetrievalMode",
]
set_public_module(__name__, globals(), __all__)

# Names that left the public API: importable for one more release, with a DeprecationWarning.
__getattr__ = deprecated_names(
    __name__,
    {
        "clean_rewrite": "llama_index_kgplus.glossary._prompts:clean_rewrite",
        "DEFAULT_GLOSSARY_CONTEXT_PROMPT": "llama_index_kgplus.glossary._prompts:DEFAULT_GLOSSARY_CONTEXT_PROMPT",
        "DEFAULT_MODE": "llama_index_kgplus.glossary._engine:DEFAULT_MODE",
        "DEFAULT_REWRITE_PROMPT": "llama_index_kgplus.glossary._prompts:DEFAULT_REWRITE_PROMPT",
        "GlossaryRetrieval": "llama_index_kgplus.glossary._engine:GlossaryRetrieval",
        "GlossarySelection": "llama_index_kgplus.glossary._selection:GlossarySelection",
        "GuardVerdict": "llama_index_kgplus.glossary._guard:GuardVerdict",
        "load_glossary": "llama_index_kgplus.glossary._model:load_glossary",
        "QueryRewrite": "llama_index_kgplus.glossary._rewrite:QueryRewrite",
        "reciprocal_rank_fusion": "llama_index_kgplus.glossary._fusion:reciprocal_rank_fusion",
        "RETRIEVAL_MODES": "llama_index_kgplus.glossary._engine:RETRIEVAL_MODES",
        "RetrievalMode": "llama_index_kgplus.glossary:GlossaryRetrievalMode",
        "ReviewHook": "llama_index_kgplus.glossary._rewrite:ReviewHook",
        "SelectedEntry": "llama_index_kgplus.glossary._selection:SelectedEntry",
    },
)
