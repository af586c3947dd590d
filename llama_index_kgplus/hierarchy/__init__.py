"""Hierarchical summary nodes: builders (LlamaIndex TransformComponents) and a hierarchical retriever.

- :class:`SemanticChunkingSummaryNodeBuilder`: summaries of runs of consecutive, similar chunks of a document.
- :class:`RaptorSummaryNodeBuilder`: RAPTOR's tree of cluster summaries (UMAP + Gaussian mixture, recursive).
- :class:`HierarchicalRetriever`: *evidence* (summaries lead to the chunks under them; the default),
  *collapsed* (top-k over all levels) or *tree* (top-down) retrieval over any vector store plus docstore.

Chunks get ``metadata["level"] = 0``, summaries 1 and up; see ``_parents`` for the metadata of summaries.
UMAP is imported only when the RAPTOR builder clusters with it.

Example::

    builder = RaptorSummaryNodeBuilder.from_defaults(llm=llm, embed_model=embed_model)
    index = build_index(docs, "./index", embed_model=embed_model, extra_transformations=[builder])
    retriever = HierarchicalRetriever.from_index(index, mode="tree", similarity_top_k=5)
"""

from llama_index_kgplus.hierarchy._base import BaseSummaryNodeBuilder, FailedCluster
from llama_index_kgplus.hierarchy._parents import (
    CHILD_COUNT_KEY,
    DOC_IDS_KEY,
    LEVEL_KEY,
    PARENT_IDS_KEY,
    node_doc_ids,
    node_level,
)
from llama_index_kgplus.hierarchy._raptor import RaptorSummaryNodeBuilder
from llama_index_kgplus.hierarchy._retriever import (
    MANIFEST_FILE,
    HierarchicalRetriever,
    RetrievalMode,
    default_mode,
    manifest_root_ids,
    read_manifest,
    write_manifest,
)
from llama_index_kgplus.hierarchy._semantic import SemanticChunkingSummaryNodeBuilder, similarity_threshold

__all__ = [
    "CHILD_COUNT_KEY",
    "DOC_IDS_KEY",
    "LEVEL_KEY",
    "MANIFEST_FILE",
    "PARENT_IDS_KEY",
    "BaseSummaryNodeBuilder",
    "FailedCluster",
    "HierarchicalRetriever",
    "RaptorSummaryNodeBuilder",
    "RetrievalMode",
    "SemanticChunkingSummaryNodeBuilder",
    "default_mode",
    "node_doc_ids",
    "node_level",
    "manifest_root_ids",
    "read_manifest",
    "similarity_threshold",
    "write_manifest",
]
