"""Global search: map over the community reports, reduce the best key points into one answer, cite sources.

Map: each report of the chosen level is read with the question, concurrently through the executor with a
bounded number of workers, and yields up to ``max_points`` key points, each scored 0-100 for importance
("cannot answer" scores 0). Filter: points scoring below ``min_score`` go. Sort: by score, then the report's
rating. Reduce: the best points that fit ``reduce_context_tokens`` go to the LLM, which writes the answer in
the free-text ``response_type`` ("multiple paragraphs", "bulleted report", "matrix table", ...). The response
carries the supporting passages as ``source_nodes`` and the reports, documents, key points and LLM usage in
its ``metadata`` (see :mod:`._citations`; ``usage`` holds the same figures as every engine of the pack).
``map_postprocessors`` (e.g. a :class:`~llama_index_kgplus.compression.ContextCompressor`) run on each report,
as one node, before its map prompt: with a compressor, a report keeps the sentences the question needs, within
the compressor's budget, instead of being cut at ``map_context_tokens``.

Example:

```python
engine = GlobalSearchEngine.from_index(index, response_type="bulleted report")
response = engine.query("What are the main themes of the collection?")
print(response.response, response.metadata["documents"])
```
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from functools import partial
from typing import Any

from llama_index.core.base.response.schema import Response
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.llms import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.query_engine import CustomQueryEngine
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from pydantic import BaseModel, Field, PrivateAttr

from llama_index_kgplus._structured import agenerate_json
from llama_index_kgplus._sync import run_sync
from llama_index_kgplus.compression._apply import arun_postprocessors
from llama_index_kgplus.errors import KGPlusError
from llama_index_kgplus.events import GlobalSearchMapEvent, GlobalSearchReduceEvent
from llama_index_kgplus.graphrag._citations import cite_sources
from llama_index_kgplus.graphrag._executor import AsyncioExecutor, BaseExecutor, LLMTask
from llama_index_kgplus.graphrag._prompts import MAP_PROMPT, NO_DATA_ANSWER, REDUCE_PROMPT
from llama_index_kgplus.graphrag._schema import bounded_text
from llama_index_kgplus.llm._complete import acomplete_text
from llama_index_kgplus.llm._usage import metered, usage_meter

dispatcher = get_dispatcher(__name__)
_CANNOT = re.compile(r"^\W*(cannot answer|can't answer|i do not know|i don't know|not relevant|no relevant)", re.I)


class KeyPoint(BaseModel):
    """One point of a map answer."""

    description: bounded_text(400) = Field(description="The point, as a complete statement.")  # type: ignore[valid-type]
    score: int = Field(ge=0, le=100, description="Importance for answering the question, 0 to 100.")


class MapAnswer(BaseModel):
    """The key points one report gives for the question."""

    points: list[KeyPoint] = Field(min_length=1, max_length=5)


@dataclass(frozen=True)
class ScoredPoint:
    community_id: str
    title: str
    rating: float
    description: str
    score: int


async def _map_task(max_points: int, max_tokens: int, question: str, report_text: str, llm: LLM) -> dict[str, Any]:
    prompt = MAP_PROMPT.format(question=question, report=report_text, max_points=max_points)
    answer = await agenerate_json(llm, prompt, MapAnswer, max_retries=1, max_tokens=max_tokens, repair_truncated=True)
    return answer.model_dump()


def _truncate(text: str, max_tokens: int) -> str:
    from llama_index.core.utils import get_tokenizer

    tokens = get_tokenizer()(text)
    if len(tokens) <= max_tokens:
        return text
    # Cut by characters in proportion, then on a line boundary (reports are Markdown).
    cut = text[: int(len(text) * max_tokens / len(tokens))]
    return cut[: cut.rfind("\n")] if "\n" in cut else cut


class GlobalSearchEngine(CustomQueryEngine):
    """Map-reduce question answering over the community reports of a :class:`GraphRAGIndex`.

    Example:

    ```python
    engine = index.as_query_engine(response_type="bulleted report", level=0)
    response = engine.query("What are the main themes?")
    [n.node.metadata["doc_id"] for n in response.source_nodes]
    ```
    """

    llm: LLM = Field(description="The LLM of the map and reduce steps.")
    executor: BaseExecutor = Field(default_factory=AsyncioExecutor, description="Runs the map step.")
    response_type: str = Field(default="multiple paragraphs", description="Free-text shape of the answer.")
    level: int = Field(
        default=1,
        ge=0,
        description="Community level whose reports are read (the leaves above it included); 0 is the coarsest.",
    )
    max_reports: int | None = Field(default=None, ge=1, description="Read only the highest-rated reports (None: all).")
    max_points: int = Field(default=3, ge=1, le=5, description="Most key points per report.")
    map_context_tokens: int = Field(default=1500, ge=100, description="Token budget of one report in the map prompt.")
    map_max_tokens: int = Field(default=400, ge=64, description="Token limit of one map reply.")
    min_score: int = Field(default=1, ge=0, le=100, description="Key points scoring below this are dropped.")
    reduce_context_tokens: int = Field(
        default=2000, ge=100, description="Token budget of the key points in the reduce prompt."
    )
    reduce_max_tokens: int = Field(default=600, ge=32, description="Token limit of the answer.")
    passages_per_document: int = Field(default=2, ge=1, description="Supporting passages cited per document.")
    show_progress: bool = Field(default=False, description="Show a progress bar for the map step.")
    map_postprocessors: list[BaseNodePostprocessor] = Field(
        default_factory=list, description="Run on each report (one node) before its map prompt, e.g. a compressor."
    )

    _index: Any = PrivateAttr(default=None)

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this component under."""
        return "GlobalSearchEngine"

    @classmethod
    def from_index(cls, index: Any, llm: LLM | None = None, **kwargs: Any) -> GlobalSearchEngine:
        """An engine over ``index`` with its LLM and executor unless given."""
        kwargs.setdefault("executor", index.executor)
        engine = cls(llm=metered(llm) if llm is not None else index.llm, **kwargs)
        engine._index = index
        return engine

    def custom_query(self, query_str: str) -> Response:
        """Answer ``query_str`` by map-reduce over the community reports (blocking :meth:`acustom_query`)."""
        return run_sync(self.acustom_query(query_str))

    async def acustom_query(self, query_str: str) -> Response:
        """Map: rate and summarize each batch of community reports; reduce: answer from the best key points, with
        citations and usage in the metadata."""
        started = time.perf_counter()
        meter = usage_meter(self.llm)
        before = meter.snapshot()
        index = self._index
        if index is None:
            raise KGPlusError(
                "This engine has no index: create it with GraphRAGIndex.as_query_engine() or "
                "GlobalSearchEngine.from_index(index)."
            )
        stored = [r for r in index.reports(level=self.level) if r.report is not None]
        stored.sort(key=lambda r: (-r.report.rating, r.community.id))
        if self.max_reports:
            stored = stored[: self.max_reports]
        by_id = {r.community.id: r for r in stored}
        kept, map_failures = await self._amap(query_str, stored)
        answer, used = await self._areduce(query_str, kept)
        used_ids = list(dict.fromkeys(p.community_id for p in used))
        citations = (
            cite_sources(
                used_ids,
                [answer, *(p.description for p in used)],
                {r.community.id: r.community for r in stored},
                index.entities(),
                index.relationships(),
                index.chunks,
                {d: rec.title for d, rec in index.documents().items()},
                passages_per_document=self.passages_per_document,
            )
            if used
            else None
        )
        usage = meter.snapshot() - before
        best: dict[str, float] = {}
        for p in used:
            best[p.community_id] = max(best.get(p.community_id, 0), p.score)
        metadata = {
            "question": query_str,
            "response_type": self.response_type,
            "level": self.level,
            "reports_read": len(stored),
            "reports": [
                {
                    "community_id": cid,
                    "title": by_id[cid].report.title,
                    "rating": by_id[cid].report.rating,
                    "importance": best[cid],
                }
                for cid in used_ids
            ],
            "key_points": [
                {"community_id": p.community_id, "score": p.score, "description": p.description} for p in used
            ],
            "documents": citations.documents if citations else [],
            "median_match_frequency": citations.median_match_frequency if citations else 0.0,
            "entities": citations.entity_ids if citations else [],
            "relationships": citations.relationship_ids if citations else [],
            "map_failures": map_failures,
            "llm_calls": usage.llm_calls,
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "tokens_estimated": usage.estimated,
            "seconds": round(time.perf_counter() - started, 2),
        }
        metadata["usage"] = {
            "prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
            "llm_calls": usage.llm_calls, "seconds": metadata["seconds"], "first_token_seconds": None,
            "estimated": usage.estimated,
        }  # fmt: skip
        return Response(response=answer, source_nodes=citations.source_nodes if citations else [], metadata=metadata)

    @dispatcher.span
    async def _amap(self, query_str: str, stored: list[Any]) -> tuple[list[ScoredPoint], list[dict[str, Any]]]:
        """Map: each report's key points for the question; the points that score at least ``min_score``, best
        first, and the reports whose call failed."""
        by_id = {r.community.id: r for r in stored}
        tasks = [
            LLMTask(
                r.community.id,
                partial(
                    _map_task,
                    self.max_points,
                    self.map_max_tokens,
                    query_str,
                    await self._report_context(r.community.id, r.report.to_text(), query_str),
                ),
            )
            for r in stored
        ]
        outcomes = await self.executor.arun(tasks, self.llm, desc="Map over reports", show_progress=self.show_progress)
        points, map_failures = [], []
        for outcome in outcomes:
            if not outcome.ok:
                map_failures.append({"community_id": outcome.key, "error": outcome.error})
                continue
            report = by_id[outcome.key].report
            for p in outcome.result["points"][: self.max_points]:
                score = 0 if _CANNOT.match(p["description"]) else int(p["score"])
                points.append(ScoredPoint(outcome.key, report.title, report.rating, p["description"].strip(), score))
        kept = sorted(
            (p for p in points if p.score >= max(self.min_score, 1)),
            key=lambda p: (-p.score, -p.rating, p.community_id),
        )
        dispatcher.event(
            GlobalSearchMapEvent(
                question=query_str, reports=[str(cid) for cid in by_id], points=len(points), points_kept=len(kept),
                failures=map_failures,
            )
        )  # fmt: skip
        return kept, map_failures

    @dispatcher.span
    async def _areduce(self, query_str: str, kept: list[ScoredPoint]) -> tuple[str, list[ScoredPoint]]:
        """Reduce: the answer from the best points that fit ``reduce_context_tokens``, and those points."""
        context, used = self._pack(kept)
        if not used:
            answer = NO_DATA_ANSWER
        else:
            prompt = REDUCE_PROMPT.format(question=query_str, points=context, response_type=self.response_type)
            answer = (
                await acomplete_text(self.llm, prompt, max_tokens=self.reduce_max_tokens)
            ).strip() or NO_DATA_ANSWER
        reports = [str(cid) for cid in dict.fromkeys(p.community_id for p in used)]
        dispatcher.event(
            GlobalSearchReduceEvent(question=query_str, points_used=len(used), reports=reports, answered=bool(used))
        )
        return answer, used

    async def _report_context(self, community_id: Any, text: str, query_str: str) -> str:
        """The report as the map prompt reads it: through ``map_postprocessors``, then cut to the token budget."""
        if self.map_postprocessors:
            node = NodeWithScore(node=TextNode(id_=f"community-report-{community_id}", text=text), score=1.0)
            [node] = await arun_postprocessors(self.map_postprocessors, [node], QueryBundle(query_str))
            text = node.node.get_content() or text
        return _truncate(text, self.map_context_tokens)

    def _pack(self, points: list[ScoredPoint]) -> tuple[str, list[ScoredPoint]]:
        """The reduce context: best points first, until the token budget is spent."""
        from llama_index.core.utils import get_tokenizer

        tokenizer = get_tokenizer()
        lines, used, spent = [], [], 0
        for p in points:
            line = f"- (importance {p.score}) {p.description}"
            cost = len(tokenizer(line)) + 1
            if spent + cost > self.reduce_context_tokens:
                break
            lines.append(line)
            used.append(p)
            spent += cost
        return "\n".join(lines), used
