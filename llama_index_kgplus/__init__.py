"""llama-index-kgplus: structure-aware retrieval for LlamaIndex, offline by default."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("llama-index-kgplus")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0"

from llama_index.core.utils import get_tokenizer

from llama_index_kgplus import (
    _ingesting,  # noqa: F401 - installs build_index's streaming of linkers and summaries
    _syncing,  # noqa: F401 - installs the folder-wide delete_ref_doc of load_index's indexes
)
from llama_index_kgplus._assembly import KGPlusSources
from llama_index_kgplus._corpus import load_corpus
from llama_index_kgplus._deprecation import deprecated_names
from llama_index_kgplus._indexing import build_index, load_index
from llama_index_kgplus._public import set_public_module
from llama_index_kgplus.compression import ContextCompressor
from llama_index_kgplus.entity_graph import EntityGraph, EntityGraphRetriever, EntityLinker
from llama_index_kgplus.errors import GraphStoreError, InputDataError, KGPlusError, KGPlusSetupError
from llama_index_kgplus.evaluation import EvalRunner
from llama_index_kgplus.glossary import Glossary, GlossaryQueryEngine
from llama_index_kgplus.graph_stores import open_graph_store
from llama_index_kgplus.graphrag import GlobalSearchEngine, GraphRAGIndex
from llama_index_kgplus.hierarchy import (
    HierarchicalRetriever,
    RaptorSummaryNodeBuilder,
    SemanticChunkingSummaryNodeBuilder,
)
from llama_index_kgplus.kg import KGAugmentedQueryEngine, KGPathRetriever, KnowledgeGraph, import_kg
from llama_index_kgplus.router import RoutedQueryEngine
from llama_index_kgplus.summarizers import AbstractiveSummarizer, ExtractiveSummarizer
from llama_index_kgplus.tables import TableQueryEngine

# A pickled LlamaIndex engine names its tiktoken encodings; a new process (a spawn worker) rebuilds them from
# tiktoken's registry, which downloads one it has not loaded: load LlamaIndex's bundled encoding now (0.1 s).
get_tokenizer()

__all__ = [
    "__version__",
    "KGPlusSources",
    "build_index",
    "load_index",
    "load_corpus",
    "SemanticChunkingSummaryNodeBuilder",
    "RaptorSummaryNodeBuilder",
    "HierarchicalRetriever",
    "ExtractiveSummarizer",
    "AbstractiveSummarizer",
    "Glossary",
    "GlossaryQueryEngine",
    "KnowledgeGraph",
    "import_kg",
    "open_graph_store",
    "KGPathRetriever",
    "KGAugmentedQueryEngine",
    "EntityGraph",
    "EntityLinker",
    "EntityGraphRetriever",
    "GraphRAGIndex",
    "GlobalSearchEngine",
    "RoutedQueryEngine",
    "TableQueryEngine",
    "ContextCompressor",
    "EvalRunner",
    "KGPlusError",
    "KGPlusSetupError",
    "InputDataError",
    "GraphStoreError",
]
set_public_module(__name__, globals(), __all__)

# Names that left the top level: importable for one more release, with a DeprecationWarning.
__getattr__ = deprecated_names(
    __name__,
    {
        "ENGINE_NAMES": "llama_index_kgplus._assembly:ENGINE_NAMES",
        "DriftGuard": "llama_index_kgplus.glossary:DriftGuard",
        "EntityMatcher": "llama_index_kgplus.kg:EntityMatcher",
        "GlossaryEntry": "llama_index_kgplus.glossary:GlossaryEntry",
        "GlossaryQueryRewriter": "llama_index_kgplus.glossary:GlossaryQueryRewriter",
        "GlossaryTermSelector": "llama_index_kgplus.glossary:GlossaryTermSelector",
        "GraphStoreURI": "llama_index_kgplus.graph_stores._uri:GraphStoreURI",
        "KGPathFinder": "llama_index_kgplus.kg:KGPathFinder",
        "KGPathSubRetriever": "llama_index_kgplus.kg:KGPathSubRetriever",
        "NotFittedError": "llama_index_kgplus.errors:NotFittedError",
        "RayExecutor": "llama_index_kgplus.graphrag:RayExecutor",
        "StructuredOutputError": "llama_index_kgplus.errors:StructuredOutputError",
        "SummarizationError": "llama_index_kgplus.errors:SummarizationError",
        "Summarizer": "llama_index_kgplus.summarizers._base:Summarizer",
        "TwoStageSummarizer": "llama_index_kgplus.summarizers:TwoStageSummarizer",
        "agenerate_json": "llama_index_kgplus._structured:agenerate_json",
        "generate_json": "llama_index_kgplus._structured:generate_json",
    },
)
