"""GraphRAG-style global questions: LLM extraction into a graph, hierarchical Leiden communities, community
reports, map-reduce global search with citations, and incremental updates that regenerate only the reports of
communities that changed.

Example::

    from llama_index_kgplus import defaults, load_corpus
    from llama_index_kgplus.graphrag import GraphRAGIndex

    index = GraphRAGIndex.from_defaults("./grag", llm=llm_from_spec("qwen2.5-coder-0.5b"))
    index.build(load_corpus("docs.jsonl"))
    print(index.as_query_engine(response_type="bulleted report").query("What are the main themes?"))
"""

from llama_index_kgplus.graphrag._citations import Citations, cite_sources
from llama_index_kgplus.graphrag._communities import Community, CommunityDetector
from llama_index_kgplus.graphrag._executor import AsyncioExecutor, BaseExecutor, LLMTask, TaskOutcome
from llama_index_kgplus.graphrag._extraction import (
    ExtractedEntity,
    ExtractedRelationship,
    ExtractionResult,
    GraphExtractor,
)
from llama_index_kgplus.graphrag._graph_sink import GraphDiff, GraphSink, LadybugGraphSink, PropertyGraphStoreSink
from llama_index_kgplus.graphrag._index import GRAPH_FILE, STATE_FILE, GraphRAGIndex, require_store
from llama_index_kgplus.graphrag._merge import Entity, Relationship, merge_extractions, normalize_name
from llama_index_kgplus.graphrag._ray_executor import RayExecutor
from llama_index_kgplus.graphrag._reports import CommunityReport, CommunityReportGenerator, Finding, ReportContext
from llama_index_kgplus.graphrag._search import GlobalSearchEngine, KeyPoint, MapAnswer
from llama_index_kgplus.graphrag._stats import IndexStats, StoredReport
from llama_index_kgplus.llm._usage import LLMUsage, MeteredLLM, UsageMeter, metered, usage_meter
from llama_index_kgplus.structured import truncated_json_candidates

__all__ = [
    "GRAPH_FILE",
    "STATE_FILE",
    "AsyncioExecutor",
    "BaseExecutor",
    "Citations",
    "Community",
    "CommunityDetector",
    "CommunityReport",
    "CommunityReportGenerator",
    "Entity",
    "ExtractedEntity",
    "ExtractedRelationship",
    "ExtractionResult",
    "Finding",
    "GlobalSearchEngine",
    "GraphDiff",
    "GraphExtractor",
    "GraphRAGIndex",
    "GraphSink",
    "IndexStats",
    "KeyPoint",
    "LLMTask",
    "LLMUsage",
    "LadybugGraphSink",
    "MapAnswer",
    "MeteredLLM",
    "PropertyGraphStoreSink",
    "RayExecutor",
    "Relationship",
    "ReportContext",
    "StoredReport",
    "TaskOutcome",
    "UsageMeter",
    "cite_sources",
    "merge_extractions",
    "metered",
    "normalize_name",
    "require_store",
    "truncated_json_candidates",
    "usage_meter",
]
