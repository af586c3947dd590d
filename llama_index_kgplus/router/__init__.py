"""One entry point for every kind of question: a zero-LLM router (local, multihop, global, kg, sql) and a query
engine that answers each question with the engine of its route.

Example:

```python
from llama_index_kgplus.router import QuestionRouter, RoutedQueryEngine, table_feature

router = QuestionRouter.from_defaults(features=[table_feature(tables)])
engine = RoutedQueryEngine.from_defaults({"local": local_engine, "sql": table_engine}, router=router)
response = engine.query("What was the total precipitation in 2014?")
response.metadata["route"], response.metadata["routing"]["scores"]
```
"""

from llama_index_kgplus._deprecation import deprecated_names
from llama_index_kgplus._public import set_public_module
from llama_index_kgplus.router._engine import RoutedQueryEngine
from llama_index_kgplus.router._router import QuestionRouter, RouteFeature

__all__ = [
    "RoutedQueryEngine",
    "QuestionRouter",
    "RouteFeature",
]
set_public_module(__name__, globals(), __all__)

# Names that left the public API: importable for one more release, with a DeprecationWarning.
__getattr__ = deprecated_names(
    __name__,
    {
        "choose_engine": "llama_index_kgplus.router._engine:choose_engine",
        "EngineChoice": "llama_index_kgplus.router._engine:EngineChoice",
        "EXAMPLES_PATH": "llama_index_kgplus.router._router:EXAMPLES_PATH",
        "JSONSingleSelector": "llama_index_kgplus.router._selector:JSONSingleSelector",
        "kg_entity_feature": "llama_index_kgplus.router._features:kg_entity_feature",
        "load_examples": "llama_index_kgplus.router._router:load_examples",
        "ROUTE_DESCRIPTIONS": "llama_index_kgplus.router._selector:ROUTE_DESCRIPTIONS",
        "RouteDecision": "llama_index_kgplus.router._router:RouteDecision",
        "ROUTES": "llama_index_kgplus.router._router:ROUTES",
        "table_feature": "llama_index_kgplus.router._features:table_feature",
    },
)
