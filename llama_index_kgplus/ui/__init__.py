"""The browser workbench (``kgplus ui``, optional extra ``ui``): ask with the routed engines and see why, browse an
index, a knowledge graph and GraphRAG communities, compare ``kgplus eval`` runs.

The logic lives in plain classes and functions (:class:`Workbench`, and in this package's private modules the
eval-folder reader and the evidence and escaping helpers); ``app.py`` is the Streamlit page code, run by
``streamlit run`` in a process that ``kgplus ui`` starts with the checked :class:`WorkbenchConfig` in
``$KGPLUS_UI_CONFIG``.

Example:

```python
bench = Workbench(WorkbenchConfig(index="./index").check())
bench.documents()[:3]
```
"""

from llama_index_kgplus._deprecation import deprecated_names
from llama_index_kgplus._public import set_public_module
from llama_index_kgplus.ui._config import WorkbenchConfig
from llama_index_kgplus.ui._workbench import Workbench

__all__ = [
    "Workbench",
    "WorkbenchConfig",
]
set_public_module(__name__, globals(), __all__)

# Names that left the public API: importable for one more release, with a DeprecationWarning.
__getattr__ = deprecated_names(
    __name__,
    {
        "Answer": "llama_index_kgplus.ui._workbench:Answer",
        "CONFIG_ENV": "llama_index_kgplus.ui._config:CONFIG_ENV",
        "escape_label": "llama_index_kgplus.ui._safety:escape_label",
        "escape_text": "llama_index_kgplus.ui._safety:escape_text",
        "EvalFolder": "llama_index_kgplus.ui._eval_folder:EvalFolder",
        "evidence_items": "llama_index_kgplus.ui._evidence:evidence_items",
        "EvidenceItem": "llama_index_kgplus.ui._evidence:EvidenceItem",
        "glossary_view": "llama_index_kgplus.ui._evidence:glossary_view",
        "highlight_html": "llama_index_kgplus.ui._safety:highlight_html",
        "matching_sentences": "llama_index_kgplus.ui._evidence:matching_sentences",
        "paths_dot": "llama_index_kgplus.ui._evidence:paths_dot",
        "safe_path": "llama_index_kgplus.ui._safety:safe_path",
        "walk_dot": "llama_index_kgplus.ui._evidence:walk_dot",
        "why_line": "llama_index_kgplus.ui._evidence:why_line",
    },
)
