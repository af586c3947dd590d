"""llama-index-kgplus: structure-aware retrieval for LlamaIndex, offline by default."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("llama-index-kgplus")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0"

from llama_index.core.utils import get_tokenizer

from llama_index_kgplus._assembly import ENGINE_NAMES, KGPlusSources
from llama_index_kgplus.corpus import load_corpus
from llama_index_kgplus.entity_graph import EntityGraph, EntityGraphRetriever, EntityLinker
from llama_index_kgplus.errors import GraphStoreError, InputDataError, KGPlusError, KGPlusSetupError, NotFittedError
from llama_index_kgplus.glossary import (
    DriftGuard,
    Glossary,
    GlossaryEntry,
    GlossaryQueryEngine,
    GlossaryQueryRewriter,
    GlossaryTermSelector,
)
from llama_index_kgplus.graph_stores import GraphStoreURI, open_graph_store
from llama_index_kgplus.graphrag import GlobalSearchEngine, GraphRAGIndex, RayExecutor
from llama_index_kgplus.hierarchy import (
    HierarchicalRetriever,
    RaptorSummaryNodeBuilder,
    SemanticChunkingSummaryNodeBuilder,
)
from llama_index_kgplus.indexing import build_index, load_index
from llama_index_kgplus.kg import (
    EntityMatcher,
    KGAugmentedQueryEngine,
    KGPathFinder,
    KGPathRetriever,
    KGPathSubRetriever,
    KnowledgeGraph,
    import_kg,
)
from llama_index_kgplus.structured import StructuredOutputError, agenerate_json, generate_json
from llama_index_kgplus.summarizers import (
    AbstractiveSummarizer,
    ExtractiveSummarizer,
    SummarizationError,
    Summarizer,
    TwoStageSummarizer,
)

# A pickled LlamaIndex engine names its tiktoken encodings; a new process (a spawn worker) rebuilds them from
# tiktoken's registry, which downloads one it has not loaded: load LlamaIndex's bundled encoding now (0.1 s).
get_tokenizer()

__all__ = [
    "ENGINE_NAMES",
    "AbstractiveSummarizer",
    "DriftGuard",
    "EntityGraph",
    "EntityGraphRetriever",
    "EntityLinker",
    "EntityMatcher",
    "ExtractiveSummarizer",
    "GlobalSearchEngine",
    "Glossary",
    "GlossaryEntry",
    "GlossaryQueryEngine",
    "GlossaryQueryRewriter",
    "GlossaryTermSelector",
    "GraphRAGIndex",
    "GraphStoreError",
    "GraphStoreURI",
    "HierarchicalRetriever",
    "InputDataError",
    "KGAugmentedQueryEngine",
    "KGPathFinder",
    "KGPathRetriever",
    "KGPathSubRetriever",
    "KGPlusError",
    "KGPlusSources",
    "KGPlusSetupError",
    "NotFittedError",
    "KnowledgeGraph",
    "RaptorSummaryNodeBuilder",
    "RayExecutor",
    "SemanticChunkingSummaryNodeBuilder",
    "StructuredOutputError",
    "SummarizationError",
    "Summarizer",
    "TwoStageSummarizer",
    "__version__",
    "agenerate_json",
    "build_index",
    "generate_json",
    "import_kg",
    "load_corpus",
    "load_index",
    "open_graph_store",
]
