"""One entry point: route each question, then answer it with the engine configured for its route.

When the question's route has no engine, the configured route with the next best score answers, and the
response says so. Engines may be given as zero-argument factories: each is built on first use only, so a
session of table questions never loads a graph store.

Example:

```python
engine = RoutedQueryEngine.from_defaults(
    {"local": index.as_query_engine(), "sql": TableQueryEngine.from_defaults(tables)},
    router=QuestionRouter.from_defaults(features=[table_feature(tables)]),
)
response = engine.query("What was the total precipitation in 2014?")
response.metadata["route"], response.metadata["engine"], response.metadata["routing"]["reason"]
```
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Union

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.response.schema import RESPONSE_TYPE
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.query_engine import CustomQueryEngine
from pydantic import ConfigDict, Field, PrivateAttr

from llama_index_kgplus.errors import InputDataError
from llama_index_kgplus.events import RouteDecisionEvent
from llama_index_kgplus.llm import AnswerUsage, attach_usage
from llama_index_kgplus.llm._usage import is_metered
from llama_index_kgplus.router._router import ROUTES, QuestionRouter, RouteDecision

__all__ = ["EngineChoice", "RoutedQueryEngine", "choose_engine"]

dispatcher = get_dispatcher(__name__)
EngineChoice = Union[BaseQueryEngine, Callable[[], BaseQueryEngine]]


def choose_engine(decision: RouteDecision, available: Mapping[str, Any]) -> tuple[str | None, str]:
    """The route whose engine answers (``decision.route`` if available, else the available route with the best
    score) and a note on the choice; ``(None, note)`` when nothing is available."""
    if decision.route in available:
        return decision.route, ""
    ranked = sorted(available, key=lambda r: decision.scores.get(r, float("-inf")), reverse=True)
    if not ranked:
        return None, "no engine is configured"
    return ranked[0], f"no {decision.route} engine is configured; the {ranked[0]} engine answers instead"


class RoutedQueryEngine(CustomQueryEngine):
    """Routes each question with a :class:`QuestionRouter` and answers with the engine of its route; the
    response's metadata gains ``route`` (the kind of question), ``engine`` (the route whose engine answered) and
    ``routing`` (scores, features, reason, fallback note).

    Example:

    ```python
    engine = RoutedQueryEngine.from_defaults({"local": local_engine, "kg": lambda: kg_engine})
    engine.query("How is insulin related to diabetes?").metadata["engine"]     # 'kg'
    ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    router: Any = Field(description="the QuestionRouter")
    engines: dict[str, Any] = Field(description="route -> query engine, or a zero-argument factory of one")
    llm: Any = Field(
        default=None,
        description="the metered LLM the engines share (llama_index_kgplus.llm.metered): each response then gains "
        "metadata['usage'], its LLM calls, tokens and seconds, unless its engine reported its own",
    )
    _built: dict[str, BaseQueryEngine] = PrivateAttr(default_factory=dict)

    @classmethod
    def class_name(cls) -> str:
        """Class name."""
        return "RoutedQueryEngine"

    @classmethod
    def from_defaults(
        cls, engines: Mapping[str, EngineChoice], router: QuestionRouter | None = None, llm: Any = None
    ) -> RoutedQueryEngine:
        """An engine over ``engines`` (at least one; keys among ROUTES) with ``router`` (default: the shipped
        examples and ``Settings.embed_model``, no source features); ``llm``: see the field."""
        unknown = sorted(set(engines) - set(ROUTES))
        if unknown or not engines:
            raise InputDataError(f"Engines need keys among {', '.join(ROUTES)} (got {sorted(engines) or 'none'}).")
        return cls(router=router or QuestionRouter.from_defaults(), engines=dict(engines), llm=llm)

    def engine_for(self, route: str) -> BaseQueryEngine:
        """The engine of ``route``, built on first use if it was given as a factory."""
        if route not in self._built:
            choice = self.engines[route]
            self._built[route] = choice if isinstance(choice, BaseQueryEngine) else choice()
        return self._built[route]

    def _with_route(
        self, response: RESPONSE_TYPE, decision: RouteDecision, engine: str, note: str, usage: AnswerUsage
    ) -> RESPONSE_TYPE:
        response.metadata = {
            **(response.metadata or {}),
            "route": decision.route,
            "engine": engine,
            "routing": {**decision.model_dump(exclude={"question"}), "fallback": note or None},
        }
        if is_metered(self.llm) and "usage" not in response.metadata:
            attach_usage(response, usage)
        return response

    def _choose(self, decision: RouteDecision) -> tuple[str, str]:
        """The route whose engine answers and the note on it, reported as a :class:`RouteDecisionEvent`."""
        engine, note = choose_engine(decision, self.engines)
        assert engine is not None  # from_defaults requires one engine
        fields = decision.model_dump(include={"question", "route", "scores", "features", "reason", "decided_by"})
        dispatcher.event(RouteDecisionEvent(**fields, engine=engine, fallback=note or None))
        return engine, note

    def custom_query(self, query_str: str) -> RESPONSE_TYPE:
        """Route, then answer with the chosen engine."""
        usage = AnswerUsage(self.llm)
        decision = self.router.route(query_str)
        engine, note = self._choose(decision)
        return self._with_route(self.engine_for(engine).query(query_str), decision, engine, note, usage)

    async def acustom_query(self, query_str: str) -> RESPONSE_TYPE:
        """Async twin of :meth:`custom_query`."""
        usage = AnswerUsage(self.llm)
        decision = await self.router.aroute(query_str)
        engine, note = self._choose(decision)
        return self._with_route(await self.engine_for(engine).aquery(query_str), decision, engine, note, usage)
