"""Knowledge-graph path retrieval.

Import a graph from neo4j-admin CSV files (:func:`import_kg`), find the entities a question mentions with a
dictionary matcher (:class:`EntityMatcher`), compute the bounded shortest paths between every pair of them in
one query or on an in-process snapshot of the graph (:class:`GraphSnapshot`; :class:`KGPathFinder`,
:class:`KGPathRetriever`) and answer with those paths next to the retrieved passages
(:class:`KGAugmentedQueryEngine`). Works on Ladybug (embedded, default), FalkorDB and Neo4j.

Questions the path templates do not cover go to read-only text-to-Cypher (:class:`CypherQueryEngine`), whose
deterministic steps around the LLM's query are named repair policies (:data:`DEFAULT_CYPHER_REPAIRS`; switch one
off with ``repairs=default_cypher_repairs(exclude={"arrow_reversal"})``; write your own on
:class:`CypherQueryRewrite`, :class:`CypherQueryCheck` or :class:`CypherSecondTry`).
"""

from llama_index_kgplus.kg._csv import KGData, read_kg_csv
from llama_index_kgplus.kg._cypher import CypherAnswer, CypherQueryEngine, describe_graph
from llama_index_kgplus.kg._cypher_checks import ChainCheck, CountCheck, GroupsReturnedCheck, GroupValueCheck, NameCheck
from llama_index_kgplus.kg._cypher_guard import read_only_cypher
from llama_index_kgplus.kg._cypher_policy import (
    CypherQueryCheck,
    CypherQueryRewrite,
    CypherQuestion,
    CypherRepair,
    CypherSecondTry,
)
from llama_index_kgplus.kg._cypher_repairs import (
    DEFAULT_CYPHER_REPAIRS,
    ArrowReversal,
    EntitiesForGroups,
    KindAsPropertyRewrite,
    OneChainFallback,
    default_cypher_repairs,
)
from llama_index_kgplus.kg._finder import KGPathFinder, KGPathResult
from llama_index_kgplus.kg._graph import KGManifest, KnowledgeGraph
from llama_index_kgplus.kg._import import ImportReport, import_kg, neo4j_admin_import_command
from llama_index_kgplus.kg._matcher import EntityMatcher, EntityMention
from llama_index_kgplus.kg._paths import KGPath, PathNode, PathRelationship, render_facts, render_path
from llama_index_kgplus.kg._query_engine import (
    KG_FACTS_SUMMARY_TEMPLATE,
    KG_FACTS_TEXT_QA_TEMPLATE,
    KG_SUMMARY_TEMPLATE,
    KG_TEXT_QA_TEMPLATE,
    KGAugmentedQueryEngine,
)
from llama_index_kgplus.kg._retriever import KGPathRetriever, KGPathSubRetriever
from llama_index_kgplus.kg._snapshot import GraphSnapshot

__all__ = [
    "DEFAULT_CYPHER_REPAIRS",
    "KG_FACTS_SUMMARY_TEMPLATE",
    "KG_FACTS_TEXT_QA_TEMPLATE",
    "KG_SUMMARY_TEMPLATE",
    "KG_TEXT_QA_TEMPLATE",
    "ArrowReversal",
    "ChainCheck",
    "CountCheck",
    "CypherAnswer",
    "CypherQueryCheck",
    "CypherQueryEngine",
    "CypherQueryRewrite",
    "CypherQuestion",
    "CypherRepair",
    "CypherSecondTry",
    "EntitiesForGroups",
    "EntityMatcher",
    "EntityMention",
    "GraphSnapshot",
    "GroupValueCheck",
    "GroupsReturnedCheck",
    "ImportReport",
    "KGAugmentedQueryEngine",
    "KGData",
    "KGManifest",
    "KGPath",
    "KGPathFinder",
    "KGPathResult",
    "KGPathRetriever",
    "KGPathSubRetriever",
    "KindAsPropertyRewrite",
    "KnowledgeGraph",
    "NameCheck",
    "OneChainFallback",
    "PathNode",
    "PathRelationship",
    "default_cypher_repairs",
    "describe_graph",
    "import_kg",
    "neo4j_admin_import_command",
    "read_kg_csv",
    "read_only_cypher",
    "render_facts",
    "render_path",
]
