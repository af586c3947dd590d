"""One entry point for every kind of question: a zero-LLM router (local, multihop, global, kg, sql) and a query
engine that answers each question with the engine of its route.

Example::

    from llama_index_kgplus.router import QuestionRouter, RoutedQueryEngine, table_feature

    router = QuestionRouter.from_defaults(features=[table_feature(tables)])
    engine = RoutedQueryEngine.from_defaults({"local": local_engine, "sql": table_engine}, router=router)
    response = engine.query("What was the total precipitation in 2014?")
    response.metadata["route"], response.metadata["routing"]["scores"]
"""

from llama_index_kgplus.router._engine import EngineChoice, RoutedQueryEngine, choose_engine
from llama_index_kgplus.router._features import kg_entity_feature, table_feature
from llama_index_kgplus.router._router import (
    EXAMPLES_PATH,
    ROUTES,
    QuestionRouter,
    RouteDecision,
    RouteFeature,
    load_examples,
)
from llama_index_kgplus.router._selector import ROUTE_DESCRIPTIONS, JSONSingleSelector

__all__ = [
    "EXAMPLES_PATH",
    "ROUTES",
    "ROUTE_DESCRIPTIONS",
    "EngineChoice",
    "JSONSingleSelector",
    "QuestionRouter",
    "RouteDecision",
    "RouteFeature",
    "RoutedQueryEngine",
    "choose_engine",
    "kg_entity_feature",
    "load_examples",
    "table_feature",
]
