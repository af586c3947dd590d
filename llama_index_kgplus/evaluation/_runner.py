"""Run named query-engine pipelines over a dataset, score them, and cache every (pipeline, question, metric).

When every metric asked for is a retrieval metric (hit@5, recall@k, mrr), a pipeline that can retrieve on its own
(``aretrieve``, as ``RetrieverQueryEngine`` has) only retrieves: no LLM call, no answer.

The cache is two append-only JSONL files under ``<out>/cache``: an interrupted run resumes where it stopped
(a half-written last line is ignored and recomputed). An answer is reused while its question is unchanged, a score
while its question, ground truth, gold ids and short answers are. ``settings.json`` there records what the cached answers
depend on (model, top-k, index, ...): a run with different settings is refused instead of mixing results.

Example:

```python
runner = EvalRunner(samples, {"baseline": engine_a, "glossary": engine_b}, out_dir="eval-out",
                    metrics=["answer_correctness", "answer_similarity"])
results = runner.run()          # or: await runner.arun()
```
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import LLM
from llama_index.core.schema import NodeWithScore, QueryBundle
from tqdm.auto import tqdm

from llama_index_kgplus._files import atomic_write_json
from llama_index_kgplus._paths import inside, user_path
from llama_index_kgplus._sync import run_sync
from llama_index_kgplus.errors import InputDataError
from llama_index_kgplus.evaluation._dataset import EvalSample
from llama_index_kgplus.evaluation._metrics import METRICS
from llama_index_kgplus.evaluation._retrieval import hit_at_k, mrr, recall_at_k
from llama_index_kgplus.evaluation._short_answer import SHORT_ANSWER_METRICS

RETRIEVAL_METRICS = ("hit@5", "recall@5", "recall@10", "mrr")
DEFAULT_METRICS = ("answer_correctness", "answer_similarity", "answer_relevance", "faithfulness", *RETRIEVAL_METRICS)


@dataclass
class ScoreRecord:
    pipeline: str
    sample_id: str
    metric: str
    score: float | None
    invalid_reason: str | None = None
    details: dict[str, Any] | None = None


def _read_jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    records = []
    for line in path.read_text(encoding="utf-8").split("\n"):  # not splitlines: U+2028 may sit in a string
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:  # a line cut short by an interruption: recomputed
            continue
    return records


def _append_jsonl(path: Path, record: dict) -> None:
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(record, ensure_ascii=False) + "\n")


def _sample_key(sample: EvalSample) -> str:
    """What a cached score depends on in the dataset line."""
    parts: list[Any] = [sample.question, sample.ground_truth, list(sample.gold_ids)]
    if sample.answers:  # older caches (no answers) keep their keys
        parts.append(list(sample.answers))
    text = json.dumps(parts, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _source_doc_ids(source_nodes: Sequence[Any]) -> list[str]:
    ids: list[str] = []
    for hit in source_nodes:
        meta = hit.node.metadata
        ids.extend(meta.get("doc_ids") or [meta.get("doc_id") or hit.node.ref_doc_id])
    return [i for i in ids if i]


class _Stopped(Exception):
    """Carries a Ctrl-C (or exit) out of a worker task, to be raised again once the other tasks are cancelled."""


class EvalRunner:
    """Answers every sample with every pipeline, then scores each answer with each applicable metric.

    Example:

    ```python
    from llama_index_kgplus import EvalRunner
    from llama_index_kgplus.evaluation import load_dataset, write_report

    records = EvalRunner(load_dataset("questions.jsonl"), {"baseline": engine_a, "mine": engine_b}, "out").run()
    write_report(records, ["baseline", "mine"], "out")
    ```
    """

    def __init__(
        self,
        samples: Sequence[EvalSample],
        pipelines: Mapping[str, BaseQueryEngine],
        out_dir: str | Path,
        *,
        metrics: Sequence[str] = DEFAULT_METRICS,
        llm: LLM | None = None,
        embed_model: BaseEmbedding | None = None,
        settings: Mapping[str, Any] | None = None,
        show_progress: bool = True,
        num_workers: int = 1,
    ) -> None:
        if num_workers < 1:
            raise InputDataError(f"num_workers must be at least 1, not {num_workers}.")
        known = [*METRICS, *SHORT_ANSWER_METRICS, *RETRIEVAL_METRICS]
        unknown = [m for m in metrics if m not in known]
        if unknown:
            raise InputDataError(f"Unknown metric(s) {', '.join(unknown)}; choose from {', '.join(known)}.")
        self.samples = list(samples)
        self.pipelines = dict(pipelines)
        self.metrics = list(metrics)
        self.out_dir = user_path(out_dir)
        self.llm = llm
        self.embed_model = embed_model
        self.settings = dict(settings or {})
        self.show_progress = show_progress
        self.num_workers = num_workers

    def _check_settings(self) -> None:
        """Refuse a cache made with other settings; settings one run left unset (None) may be set by the next."""
        path = self._cache_file("settings.json")
        cached = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        changed = {
            key: (cached[key], value)
            for key, value in self.settings.items()
            if cached.get(key) is not None and value is not None and cached[key] != value
        }
        if changed:
            diff = "; ".join(f"{key}: {old!r} -> {new!r}" for key, (old, new) in changed.items())
            raise InputDataError(
                f"{self.out_dir} holds results made with other settings ({diff}). Use another output folder, "
                f"or delete {self._cache_dir} to start over."
            )
        merged = {**cached, **{k: v for k, v in self.settings.items() if v is not None}}
        atomic_write_json(path, merged, indent=2, sort_keys=True)

    @property
    def _cache_dir(self) -> Path:
        path = inside(self.out_dir, "cache", fix=f"remove the link {self.out_dir / 'cache'} or give another --out")
        path.mkdir(parents=True, exist_ok=True)
        return path

    def _cache_file(self, name: str) -> Path:
        """A file of the cache, refused when a symlink would take the write out of the output folder."""
        folder = self._cache_dir
        return inside(folder, name, fix=f"remove the link {folder / name} or give another --out folder")

    async def _retrieved_only(self, name: str, question: str) -> list[NodeWithScore] | None:
        """The pipeline's hits without an answer, when the metrics need none and the engine can retrieve alone."""
        retrieve = getattr(self.pipelines[name], "aretrieve", None)
        if retrieve is None or any(m not in RETRIEVAL_METRICS for m in self.metrics):
            return None
        try:
            return list(await retrieve(QueryBundle(question)))
        except NotImplementedError:  # BaseQueryEngine's own: answer instead
            return None

    async def _answers(self) -> dict[tuple[str, str], dict]:
        path = self._cache_file("answers.jsonl")
        questions = {s.id: s.question for s in self.samples}
        needs_answers = any(m not in RETRIEVAL_METRICS for m in self.metrics)
        answers = {
            (r["pipeline"], r["sample_id"]): r
            for r in _read_jsonl(path)
            if r.get("question") == questions.get(r["sample_id"]) and (r.get("answer") is not None or not needs_answers)
        }
        todo = [(p, s) for p in self.pipelines for s in self.samples if (p, s.id) not in answers]

        async def answer(name: str, sample: EvalSample) -> None:
            retrieved = await self._retrieved_only(name, sample.question)
            response = None if retrieved is not None else await self.pipelines[name].aquery(sample.question)
            hits = response.source_nodes if response is not None else retrieved or []
            record = {
                "pipeline": name,
                "sample_id": sample.id,
                "question": sample.question,
                "answer": None if response is None else str(response),  # None: retrieved only
                "contexts": [hit.node.get_content() for hit in hits],
                "retrieved_ids": _source_doc_ids(hits),
                "metadata": {k: v for k, v in ((response and response.metadata) or {}).items() if _jsonable(v)},
            }
            _append_jsonl(path, record)
            answers[(name, sample.id)] = record

        await self._bounded(todo, answer, "answering")
        return answers

    async def _bounded(self, todo: list[tuple[Any, ...]], job: Any, desc: str) -> None:
        """Run ``job(*item)`` for every item, ``num_workers`` at a time (a served model answers requests in
        parallel; an in-process llama.cpp model takes them one at a time anyway), with a progress bar. The first
        failure (or Ctrl-C) cancels the rest; what finished is already cached."""
        bar = tqdm(total=len(todo), desc=desc, disable=not self.show_progress or not todo)
        try:
            if self.num_workers == 1:
                for item in todo:
                    await job(*item)
                    bar.update()
                return
            gate = asyncio.Semaphore(self.num_workers)

            async def one(item: tuple[Any, ...]) -> None:
                async with gate:
                    try:
                        await job(*item)
                    except (KeyboardInterrupt, SystemExit) as exc:  # out of a task, these would skip the cleanup
                        raise _Stopped() from exc
                bar.update()

            tasks = [asyncio.ensure_future(one(item)) for item in todo]
            await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            failed = next((t.exception() for t in tasks if not t.cancelled() and t.exception()), None)
            if isinstance(failed, _Stopped) and failed.__cause__ is not None:
                raise failed.__cause__
            if failed is not None:
                raise failed
        finally:
            bar.close()

    def _applicable(self, metric: str, sample: EvalSample) -> bool:
        if metric in RETRIEVAL_METRICS:
            return bool(sample.gold_ids)
        if metric in SHORT_ANSWER_METRICS:
            return bool(sample.answers)
        needs_truth = metric in ("answer_correctness", "answer_similarity", "context_recall", "context_precision")
        return sample.ground_truth is not None or not needs_truth

    async def _score_one(self, metric: str, sample: EvalSample, answer: dict) -> ScoreRecord:
        name = answer["pipeline"]
        if metric in RETRIEVAL_METRICS:
            retrieved, gold = answer["retrieved_ids"], sample.gold_ids
            value = {
                "hit@5": lambda: hit_at_k(retrieved, gold, 5),
                "recall@5": lambda: recall_at_k(retrieved, gold, 5),
                "recall@10": lambda: recall_at_k(retrieved, gold, 10),
                "mrr": lambda: mrr(retrieved, gold),
            }[metric]()
            return ScoreRecord(name, sample.id, metric, value, details={"retrieved_ids": retrieved})
        if metric in SHORT_ANSWER_METRICS:
            value = SHORT_ANSWER_METRICS[metric](answer["answer"], sample.answers)
            return ScoreRecord(name, sample.id, metric, value, details={"answers": list(sample.answers)})
        evaluator = METRICS[metric](llm=self.llm, embed_model=self.embed_model)
        result = await evaluator.aevaluate(
            query=sample.question, response=answer["answer"], contexts=answer["contexts"], reference=sample.ground_truth
        )
        return ScoreRecord(name, sample.id, metric, result.score, result.invalid_reason, result.details)

    async def arun(self) -> list[ScoreRecord]:
        """Answer and score everything not yet cached; return all score records."""
        self._check_settings()
        answers = await self._answers()
        path = self._cache_file("scores.jsonl")
        keys = {s.id: _sample_key(s) for s in self.samples}
        done = {
            (r["pipeline"], r["sample_id"], r["metric"]): ScoreRecord(**r)
            for r in _read_jsonl(path)
            if r.pop("sample_key", None) == keys.get(r["sample_id"])
        }
        todo = [
            (name, sample, metric)
            for name in self.pipelines
            for sample in self.samples
            for metric in self.metrics
            if self._applicable(metric, sample) and (name, sample.id, metric) not in done
        ]

        async def score(name: str, sample: EvalSample, metric: str) -> None:
            record = await self._score_one(metric, sample, answers[(name, sample.id)])
            _append_jsonl(path, {**record.__dict__, "sample_key": keys[sample.id]})
            done[(name, sample.id, metric)] = record

        await self._bounded(todo, score, "scoring")
        keep = {s.id for s in self.samples}
        return [r for k, r in done.items() if k[0] in self.pipelines and k[1] in keep and k[2] in self.metrics]

    def run(self) -> list[ScoreRecord]:
        """Run every pipeline on every sample and score it (blocking :meth:`arun`); returns one record per sample,
        pipeline and metric."""
        return run_sync(self.arun())


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True
