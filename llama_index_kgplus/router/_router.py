"""The question router: which kind of question is this (local, multihop, global, kg, sql), with no LLM call.

A question is embedded once and compared with short labelled example sets shipped with the pack
(``router/examples.json``): each route's similarity is the mean of its ``k`` nearest examples. Features of the
configured sources then add evidence: entities of the knowledge graph found in the question (two or more point
to a path question), table columns and values (a table question). The route is the best score; every score and
every feature that fired is kept, so each decision explains itself.

Example:

```python
router = QuestionRouter.from_defaults(features=[table_feature(tables)])
decision = router.route("What was the total precipitation in 2014?")
decision.route, decision.scores, decision.reason
```
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core import Settings
from llama_index.core.instrumentation import get_dispatcher
from pydantic import BaseModel, Field

from llama_index_kgplus._files import read_utf8
from llama_index_kgplus._vectors import unit_rows
from llama_index_kgplus.errors import InputDataError, NotFittedError

__all__ = ["EXAMPLES_PATH", "ROUTES", "QuestionRouter", "RouteDecision", "RouteFeature", "load_examples"]

#: The five kinds of question, in the order of the scores
ROUTES = ("local", "multihop", "global", "kg", "sql")
EXAMPLES_PATH = Path(__file__).with_name("examples.json")
dispatcher = get_dispatcher(__name__)


def load_examples(path: str | Path = EXAMPLES_PATH) -> dict[str, list[str]]:
    """``{route: [question, ...]}`` from a JSON file of that shape (keys starting with ``_`` are comments)."""
    text = read_utf8(path, "Router examples")  # a regular file under the size limit
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise InputDataError(f"Router examples {path}: {exc}") from exc
    examples = {k: v for k, v in data.items() if not k.startswith("_")} if isinstance(data, dict) else None
    if (
        not examples
        or any(k not in ROUTES for k in examples)
        or any(
            not isinstance(v, list) or not v or not all(isinstance(q, str) and q.strip() for q in v)
            for v in examples.values()
        )
    ):
        raise InputDataError(
            f"Router examples {path}: need an object whose keys are routes ({', '.join(ROUTES)}) and whose values "
            "are non-empty lists of questions."
        )
    return examples


@dataclass(frozen=True)
class RouteFeature:
    """Evidence from a configured source: ``find(question)`` returns what it recognised; with at least
    ``min_hits`` of them, ``weight`` is added to ``route``'s score, else ``absent_weight`` (zero or negative:
    e.g. a table question that names nothing of the tables is unlikely).

    Example:

    ```python
    RouteFeature("kg", "knowledge-graph entities", lambda q: [m.text for m in matcher.find(q)], min_hits=2)
    ```
    """

    route: str
    name: str
    find: Callable[[str], list[str]]
    weight: float = 0.15
    min_hits: int = 1
    absent_weight: float = 0.0


class RouteDecision(BaseModel):
    """One routing decision with its explanation.

    Example:

    ```python
    from llama_index_kgplus.router import QuestionRouter

    decision = QuestionRouter.from_defaults(embed_model=embed_model).route("What are the main themes?")
    decision.route, decision.scores, decision.reason  # ('global', {...}, '...')
    ```
    """

    question: str
    route: str = Field(description="the kind of question: one of ROUTES")
    scores: dict[str, float] = Field(description="score per route: example similarity plus fired features")
    features: dict[str, list[str]] = Field(default_factory=dict, description="what each fired feature recognised")
    reason: str = ""
    decided_by: str = Field(default="examples", description="'examples' (no LLM) or 'llm' (the selector)")


class QuestionRouter:
    """Zero-LLM question classifier over the routes ``local``, ``multihop``, ``global``, ``kg`` and ``sql``.

    ``fit()`` (called on first use) embeds the examples; ``example_vectors_`` holds them per route. With a
    ``selector`` (e.g. :class:`~llama_index_kgplus.router.JSONSingleSelector`), a close call (the best scores
    within ``ambiguity_margin`` of each other) is put to the LLM among those routes.

    Example:

    ```python
    router = QuestionRouter.from_defaults()
    router.route("How is insulin related to diabetes?").route        # 'kg'
    [d.route for d in router.route_many(["What are the main themes?", "Who founded it?"])]
    ```
    """

    def __init__(
        self,
        embed_model: Any,
        examples: dict[str, list[str]] | None = None,
        features: Sequence[RouteFeature] = (),
        k: int = 3,
        selector: Any | None = None,
        ambiguity_margin: float = 0.03,
    ) -> None:
        self.embed_model = embed_model
        self.examples = examples
        self.features = list(features)
        self.k = k
        self.selector = selector
        self.ambiguity_margin = ambiguity_margin

    @classmethod
    def from_defaults(
        cls,
        embed_model: Any | None = None,
        features: Sequence[RouteFeature] = (),
        examples: dict[str, list[str]] | None = None,
        k: int = 3,
        selector: Any | None = None,
        ambiguity_margin: float = 0.03,
    ) -> QuestionRouter:
        """A router with ``embed_model`` (default ``Settings.embed_model``) and the shipped examples."""
        return cls(
            embed_model or Settings.embed_model,
            examples=examples,
            features=features,
            k=k,
            selector=selector,
            ambiguity_margin=ambiguity_margin,
        )

    def fit(self) -> QuestionRouter:
        """Embed the examples (the shipped ones unless others were given)."""
        examples = self.examples if self.examples is not None else load_examples()
        unknown = sorted({f.route for f in self.features} - set(ROUTES))
        if unknown:
            raise InputDataError(f"Route features name unknown routes {unknown}; routes are {', '.join(ROUTES)}.")
        texts = [q for route in ROUTES for q in examples.get(route, [])]
        vectors = unit_rows(np.asarray(self.embed_model.get_text_embedding_batch(texts), dtype=np.float32))
        self.example_vectors_: dict[str, np.ndarray] = {}
        start = 0
        for route in ROUTES:
            n = len(examples.get(route, []))
            self.example_vectors_[route] = vectors[start : start + n]
            start += n
        return self

    def _vectors(self) -> dict[str, np.ndarray]:
        if not hasattr(self, "example_vectors_"):
            self.fit()
        return self.example_vectors_

    def _decide(self, question: str, vector: np.ndarray) -> RouteDecision:
        scores = {}
        for route, examples in self._vectors().items():
            sims = np.sort(examples @ vector)[::-1][: self.k] if len(examples) else np.zeros(1)
            scores[route] = float(sims.mean())
        fired: dict[str, list[str]] = {}
        evidence = []
        for feature in self.features:
            hits = list(dict.fromkeys(feature.find(question)))
            if len(hits) >= feature.min_hits:
                fired[feature.name] = hits
                scores[feature.route] += feature.weight
                evidence.append(f"{feature.name}: {', '.join(hits[:5])} ({feature.weight:+g} {feature.route})")
            elif feature.absent_weight:
                scores[feature.route] += feature.absent_weight
                evidence.append(f"no {feature.name} ({feature.absent_weight:+g} {feature.route})")
        scores = {r: round(s, 4) for r, s in scores.items()}
        route = max(ROUTES, key=lambda r: scores[r])
        runner_up = max((r for r in ROUTES if r != route), key=lambda r: scores[r])
        why = [f"best {route} {scores[route]:.3f}, next {runner_up} {scores[runner_up]:.3f}", *evidence]
        return RouteDecision(question=question, route=route, scores=scores, features=fired, reason="; ".join(why))

    def _close_call(self, decision: RouteDecision) -> list[str]:
        """The routes within ``ambiguity_margin`` of the best, when there are several and a selector to ask."""
        if self.selector is None:
            return []
        best = decision.scores[decision.route]
        close = [r for r in ROUTES if best - decision.scores[r] <= self.ambiguity_margin]
        return close if len(close) > 1 else []

    @staticmethod
    def _selected(decision: RouteDecision, close: list[str], result: Any) -> RouteDecision:
        route = close[result.ind]
        reason = f"{decision.reason}; close call among {', '.join(close)}: the LLM chose {route} ({result.reason})"
        return decision.model_copy(update={"route": route, "reason": reason, "decided_by": "llm"})

    def _descriptions(self, close: list[str]) -> list[str]:
        from llama_index_kgplus.router._selector import ROUTE_DESCRIPTIONS

        return [ROUTE_DESCRIPTIONS[r] for r in close]

    def route(self, question: str) -> RouteDecision:
        """The decision for one question."""
        return self.route_many([question])[0]

    @dispatcher.span
    def route_many(self, questions: Iterable[str]) -> list[RouteDecision]:
        """Decisions for many questions, embedded in one batch."""
        questions = list(questions)
        if not questions:
            return []
        if any(not q.strip() for q in questions):
            raise InputDataError("Cannot route an empty question.")
        self._vectors()
        vectors = unit_rows(np.asarray(self.embed_model.get_text_embedding_batch(questions), dtype=np.float32))
        decisions = [self._decide(q, v) for q, v in zip(questions, vectors)]
        for i, decision in enumerate(decisions):
            close = self._close_call(decision)
            if close and self.selector is not None:
                result = self.selector.select(self._descriptions(close), decision.question)
                decisions[i] = self._selected(decision, close, result)
        return decisions

    @dispatcher.span
    async def aroute(self, question: str) -> RouteDecision:
        """Async twin of :meth:`route`."""
        if not question.strip():
            raise InputDataError("Cannot route an empty question.")
        self._vectors()
        vectors = await self.embed_model.aget_text_embedding_batch([question])
        decision = self._decide(question, unit_rows(np.asarray(vectors, dtype=np.float32))[0])
        close = self._close_call(decision)
        if close and self.selector is not None:
            result = await self.selector.aselect(self._descriptions(close), question)
            decision = self._selected(decision, close, result)
        return decision

    def __getattr__(self, name: str) -> Any:
        if name.endswith("_") and not name.startswith("_"):
            raise NotFittedError(f"{type(self).__name__}.{name} is set by fit().")
        raise AttributeError(name)
