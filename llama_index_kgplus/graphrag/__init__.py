"""GraphRAG-style global questions: LLM extraction into a graph, hierarchical Leiden communities, community
reports, map-reduce global search with citations, and incremental updates that regenerate only the reports of
communities that changed.

Example:

```python
from llama_index_kgplus import load_corpus
from llama_index_kgplus.graphrag import GraphRAGIndex
from llama_index_kgplus.llm import llm_from_spec

index = GraphRAGIndex.from_defaults("./grag", llm=llm_from_spec("qwen2.5-coder-0.5b"))
index.build(load_corpus("docs.jsonl"))
print(index.as_query_engine(response_type="bulleted report").query("What are the main themes?"))
```
"""

from llama_index_kgplus._deprecation import deprecated_names
from llama_index_kgplus._public import set_public_module
from llama_index_kgplus.graphrag._communities import CommunityDetector
from llama_index_kgplus.graphrag._executor import AsyncioExecutor, BaseExecutor
from llama_index_kgplus.graphrag._extraction import GraphExtractor
from llama_index_kgplus.graphrag._graph_sink import GraphSink, LadybugGraphSink, PropertyGraphStoreSink
from llama_index_kgplus.graphrag._index import GraphRAGIndex
from llama_index_kgplus.graphrag._ray_executor import RayExecutor
from llama_index_kgplus.graphrag._reports import CommunityReportGenerator
from llama_index_kgplus.graphrag._search import GlobalSearchEngine

__all__ = [
    "GraphRAGIndex",
    "GlobalSearchEngine",
    "GraphExtractor",
    "CommunityDetector",
    "CommunityReportGenerator",
    "BaseExecutor",
    "AsyncioExecutor",
    "RayExecutor",
    "GraphSink",
    "LadybugGraphSink",
    "PropertyGraphStoreSink",
]
set_public_module(__name__, globals(), __all__)

# Names that left the public API: importable for one more release, with a DeprecationWarning.
__getattr__ = deprecated_names(
    __name__,
    {
        "Citations": "llama_index_kgplus.graphrag._citations:Citations",
        "cite_sources": "llama_index_kgplus.graphrag._citations:cite_sources",
        "Community": "llama_index_kgplus.graphrag._communities:Community",
        "CommunityReport": "llama_index_kgplus.graphrag._reports:CommunityReport",
        "Entity": "llama_index_kgplus.graphrag._merge:Entity",
        "ExtractedEntity": "llama_index_kgplus.graphrag._extraction:ExtractedEntity",
        "ExtractedRelationship": "llama_index_kgplus.graphrag._extraction:ExtractedRelationship",
        "ExtractionResult": "llama_index_kgplus.graphrag._extraction:ExtractionResult",
        "Finding": "llama_index_kgplus.graphrag._reports:Finding",
        "GRAPH_FILE": "llama_index_kgplus.graphrag._index:GRAPH_FILE",
        "GraphDiff": "llama_index_kgplus.graphrag._graph_sink:GraphDiff",
        "IndexStats": "llama_index_kgplus.graphrag._stats:IndexStats",
        "KeyPoint": "llama_index_kgplus.graphrag._search:KeyPoint",
        "LLMTask": "llama_index_kgplus.graphrag._executor:LLMTask",
        "LLMUsage": "llama_index_kgplus.llm._usage:LLMUsage",
        "MapAnswer": "llama_index_kgplus.graphrag._search:MapAnswer",
        "merge_extractions": "llama_index_kgplus.graphrag._merge:merge_extractions",
        "metered": "llama_index_kgplus.llm:metered",
        "MeteredLLM": "llama_index_kgplus.llm:MeteredLLM",
        "normalize_name": "llama_index_kgplus.graphrag._merge:normalize_name",
        "Relationship": "llama_index_kgplus.graphrag._merge:Relationship",
        "ReportContext": "llama_index_kgplus.graphrag._reports:ReportContext",
        "require_store": "llama_index_kgplus.graphrag._index:require_store",
        "STATE_FILE": "llama_index_kgplus.graphrag._index:STATE_FILE",
        "StoredReport": "llama_index_kgplus.graphrag._stats:StoredReport",
        "TaskOutcome": "llama_index_kgplus.graphrag._executor:TaskOutcome",
        "truncated_json_candidates": "llama_index_kgplus._structured:truncated_json_candidates",
        "usage_meter": "llama_index_kgplus.llm._usage:usage_meter",
        "UsageMeter": "llama_index_kgplus.llm:UsageMeter",
    },
)
