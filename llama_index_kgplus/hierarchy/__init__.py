"""Hierarchical summary nodes: builders (LlamaIndex TransformComponents) and a hierarchical retriever.

- :class:`SemanticChunkingSummaryNodeBuilder`: summaries of runs of consecutive, similar chunks of a document.
- :class:`RaptorSummaryNodeBuilder`: RAPTOR's tree of cluster summaries (UMAP + Gaussian mixture, recursive).
- :class:`HierarchicalRetriever`: *evidence* (summaries lead to the chunks under them; the default),
  *collapsed* (top-k over all levels) or *tree* (top-down) retrieval over any vector store plus docstore.

Chunks get ``metadata["level"] = 0``, summaries 1 and up; see ``_parents`` for the metadata of summaries.
UMAP is imported only when the RAPTOR builder clusters with it.

Example:

```python
builder = RaptorSummaryNodeBuilder.from_defaults(llm=llm, embed_model=embed_model)
index = build_index(docs, "./index", embed_model=embed_model, extra_transformations=[builder])
retriever = HierarchicalRetriever.from_index(index, mode="tree", similarity_top_k=5)
```
"""

from llama_index_kgplus._deprecation import deprecated_names
from llama_index_kgplus._public import set_public_module
from llama_index_kgplus.hierarchy._base import BaseSummaryNodeBuilder
from llama_index_kgplus.hierarchy._raptor import RaptorSummaryNodeBuilder
from llama_index_kgplus.hierarchy._retriever import HierarchicalRetrievalMode, HierarchicalRetriever
from llama_index_kgplus.hierarchy._semantic import SemanticChunkingSummaryNodeBuilder

__all__ = [
    "BaseSummaryNodeBuilder",
    "SemanticChunkingSummaryNodeBuilder",
    "RaptorSummaryNodeBuilder",
    "HierarchicalRetriever",
    "HierarchicalRetrievalMode",
]
set_public_module(__name__, globals(), __all__)

# Names that left the public API: importable for one more release, with a DeprecationWarning.
__getattr__ = deprecated_names(
    __name__,
    {
        "CHILD_COUNT_KEY": "llama_index_kgplus.hierarchy._parents:CHILD_COUNT_KEY",
        "default_mode": "llama_index_kgplus.hierarchy._retriever:default_mode",
        "DOC_IDS_KEY": "llama_index_kgplus.hierarchy._parents:DOC_IDS_KEY",
        "FailedCluster": "llama_index_kgplus.hierarchy._base:FailedCluster",
        "LEVEL_KEY": "llama_index_kgplus.hierarchy._parents:LEVEL_KEY",
        "MANIFEST_FILE": "llama_index_kgplus.hierarchy._retriever:MANIFEST_FILE",
        "manifest_root_ids": "llama_index_kgplus.hierarchy._retriever:manifest_root_ids",
        "node_doc_ids": "llama_index_kgplus.hierarchy._parents:node_doc_ids",
        "node_level": "llama_index_kgplus.hierarchy._parents:node_level",
        "PARENT_IDS_KEY": "llama_index_kgplus.hierarchy._parents:PARENT_IDS_KEY",
        "read_manifest": "llama_index_kgplus.hierarchy._retriever:read_manifest",
        "RetrievalMode": "llama_index_kgplus.hierarchy:HierarchicalRetrievalMode",
        "similarity_threshold": "llama_index_kgplus.hierarchy._semantic:similarity_threshold",
        "write_manifest": "llama_index_kgplus.hierarchy._retriever:write_manifest",
    },
)
