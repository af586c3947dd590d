"""Knowledge-graph path retrieval.

Import a graph from neo4j-admin CSV files (:func:`import_kg`), find the entities a question mentions with a
dictionary matcher (:class:`EntityMatcher`), compute the bounded shortest paths between every pair of them in
one query or on an in-process snapshot of the graph (:class:`KGPathFinder`, :class:`KGPathRetriever`) and answer with those paths next to the retrieved passages
(:class:`KGAugmentedQueryEngine`). Works on Ladybug (embedded, default), FalkorDB and Neo4j.

Questions the path templates do not cover go to read-only text-to-Cypher (:class:`CypherQueryEngine`), whose
deterministic steps around the LLM's query are named repair policies (:class:`CypherRepair`; the defaults are
:meth:`CypherQueryEngine.default_repairs`, switch one off with
``repairs=CypherQueryEngine.default_repairs({"arrow_reversal"})``).
"""

from llama_index_kgplus._deprecation import deprecated_names
from llama_index_kgplus._public import set_public_module
from llama_index_kgplus.kg._cypher import CypherQueryEngine
from llama_index_kgplus.kg._cypher_policy import CypherRepair
from llama_index_kgplus.kg._finder import KGPathFinder
from llama_index_kgplus.kg._graph import KnowledgeGraph
from llama_index_kgplus.kg._import import import_kg
from llama_index_kgplus.kg._matcher import EntityMatcher
from llama_index_kgplus.kg._paths import KGPath
from llama_index_kgplus.kg._query_engine import KGAugmentedQueryEngine
from llama_index_kgplus.kg._retriever import KGPathRetriever, KGPathSubRetriever

__all__ = [
    "KnowledgeGraph",
    "import_kg",
    "KGPathFinder",
    "KGPathRetriever",
    "KGPathSubRetriever",
    "KGAugmentedQueryEngine",
    "CypherQueryEngine",
    "EntityMatcher",
    "KGPath",
    "CypherRepair",
]
set_public_module(__name__, globals(), __all__)

# Names that left the public API: importable for one more release, with a DeprecationWarning.
__getattr__ = deprecated_names(
    __name__,
    {
        "ImportReport": "llama_index_kgplus.kg._import:ImportReport",
        "ArrowReversal": "llama_index_kgplus.kg._cypher_repairs:ArrowReversal",
        "ChainCheck": "llama_index_kgplus.kg._cypher_checks:ChainCheck",
        "CountCheck": "llama_index_kgplus.kg._cypher_checks:CountCheck",
        "CypherAnswer": "llama_index_kgplus.kg._cypher:CypherAnswer",
        "CypherQueryCheck": "llama_index_kgplus.kg._cypher_policy:CypherQueryCheck",
        "CypherQueryRewrite": "llama_index_kgplus.kg._cypher_policy:CypherQueryRewrite",
        "CypherQuestion": "llama_index_kgplus.kg._cypher_policy:CypherQuestion",
        "CypherSecondTry": "llama_index_kgplus.kg._cypher_policy:CypherSecondTry",
        "DEFAULT_CYPHER_REPAIRS": "llama_index_kgplus.kg._cypher_repairs:DEFAULT_CYPHER_REPAIRS",
        "default_cypher_repairs": "llama_index_kgplus.kg._cypher_repairs:default_cypher_repairs",
        "describe_graph": "llama_index_kgplus.kg._cypher_schema:describe_graph",
        "EntitiesForGroups": "llama_index_kgplus.kg._cypher_repairs:EntitiesForGroups",
        "EntityMention": "llama_index_kgplus.kg._matcher:EntityMention",
        "GraphSnapshot": "llama_index_kgplus.kg._snapshot:GraphSnapshot",
        "GroupsReturnedCheck": "llama_index_kgplus.kg._cypher_checks:GroupsReturnedCheck",
        "GroupValueCheck": "llama_index_kgplus.kg._cypher_checks:GroupValueCheck",
        "KG_FACTS_SUMMARY_TEMPLATE": "llama_index_kgplus.kg._query_engine:KG_FACTS_SUMMARY_TEMPLATE",
        "KG_FACTS_TEXT_QA_TEMPLATE": "llama_index_kgplus.kg._query_engine:KG_FACTS_TEXT_QA_TEMPLATE",
        "KG_SUMMARY_TEMPLATE": "llama_index_kgplus.kg._query_engine:KG_SUMMARY_TEMPLATE",
        "KG_TEXT_QA_TEMPLATE": "llama_index_kgplus.kg._query_engine:KG_TEXT_QA_TEMPLATE",
        "KGData": "llama_index_kgplus.kg._csv:KGData",
        "KGManifest": "llama_index_kgplus.kg._graph:KGManifest",
        "KGPathResult": "llama_index_kgplus.kg._finder:KGPathResult",
        "KindAsPropertyRewrite": "llama_index_kgplus.kg._cypher_repairs:KindAsPropertyRewrite",
        "NameCheck": "llama_index_kgplus.kg._cypher_checks:NameCheck",
        "neo4j_admin_import_command": "llama_index_kgplus.kg._import:neo4j_admin_import_command",
        "OneChainFallback": "llama_index_kgplus.kg._cypher_repairs:OneChainFallback",
        "PathNode": "llama_index_kgplus.kg._paths:PathNode",
        "PathRelationship": "llama_index_kgplus.kg._paths:PathRelationship",
        "read_kg_csv": "llama_index_kgplus.kg._csv:read_kg_csv",
        "read_only_cypher": "llama_index_kgplus.kg._cypher_guard:read_only_cypher",
        "render_facts": "llama_index_kgplus.kg._paths:render_facts",
        "render_path": "llama_index_kgplus.kg._paths:render_path",
    },
)
