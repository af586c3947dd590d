"""RAGAS-style answer and context metrics as LlamaIndex evaluators.

Definitions (RAGAS, Es et al. 2023, arXiv:2309.15217; ragas metric docs):

- answer similarity: cosine of the embeddings of answer and ground truth.
- answer correctness: ``0.75 * F1 + 0.25 * similarity``; F1 over statements, TP = answer statements supported
  by the ground truth, FP = answer statements not supported, FN = ground-truth statements the answer does not
  support; ``F1 = TP / (TP + 0.5 * (FP + FN))``.
- answer relevance: mean cosine between the question and N questions generated from the answer; 0 if the
  answer is noncommittal.
- faithfulness: share of the answer's statements that the retrieved contexts support.
- context recall: share of the ground truth's sentences that the retrieved contexts support.
- context precision: average precision of the retrieved contexts ranked as retrieved, a context being relevant
  when it was useful to arrive at the ground truth: ``sum_k(precision@k * v_k) / #relevant``.

Each evaluator returns a :class:`MetricResult` (a LlamaIndex ``EvaluationResult``) whose ``details`` keep the
statements, verdicts and generated questions. A judge that keeps returning unusable output gives
``invalid_result=True`` with the reason and ``score=None``: never a silent 0 or 1.

Example:

```python
result = AnswerCorrectness(llm=llm, embed_model=embed).evaluate(
    query="Who wrote Hamlet?", response="Shakespeare wrote it.", reference="William Shakespeare.")
result.score, result.details["f1"], result.details["answer_verdicts"]
```
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np
from llama_index.core import Settings
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.evaluation import BaseEvaluator, EvaluationResult
from llama_index.core.llms import LLM
from llama_index.core.prompts.mixin import PromptDictType
from pydantic import Field

from llama_index_kgplus._structured import StructuredOutputError
from llama_index_kgplus._vectors import cosine
from llama_index_kgplus.evaluation import _judge


class MetricResult(EvaluationResult):
    """An ``EvaluationResult`` that names its metric and keeps the intermediate outputs."""

    metric: str = Field(description="metric name")
    details: dict[str, Any] = Field(default_factory=dict, description="statements, verdicts, questions ...")


def f1_from_counts(tp: int, fp: int, fn: int) -> float:
    """RAGAS' factuality F1: ``tp / (tp + 0.5 * (fp + fn))`` (1.0 when there is nothing to compare)."""
    denominator = tp + 0.5 * (fp + fn)
    return tp / denominator if denominator else 1.0


def average_precision(verdicts: Sequence[bool]) -> float:
    """Context precision from relevance verdicts in rank order (0.0 when none is relevant)."""
    hits, total = 0, 0.0
    for k, relevant in enumerate(verdicts, 1):
        if relevant:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


class _Metric(BaseEvaluator):
    """Shared plumbing: models from ``Settings`` by default, input checks, failures recorded not scored."""

    name = "metric"
    needs: tuple[str, ...] = ()

    def __init__(self, llm: LLM | None = None, embed_model: BaseEmbedding | None = None) -> None:
        self._llm = llm
        self._embed_model = embed_model

    @property
    def llm(self) -> LLM:
        return self._llm or Settings.llm

    @property
    def embed_model(self) -> BaseEmbedding:
        return self._embed_model or Settings.embed_model

    def _get_prompts(self) -> PromptDictType:
        return {}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        pass

    async def aevaluate(
        self,
        query: str | None = None,
        response: str | None = None,
        contexts: Sequence[str] | None = None,
        reference: str | None = None,
        **kwargs: Any,
    ) -> MetricResult:
        given = {"query": query, "response": response, "contexts": contexts, "reference": reference}
        missing = [k for k in self.needs if not given[k]]
        common: dict[str, Any] = {"metric": self.name, "query": query, "response": response, "contexts": contexts}
        if missing:
            return MetricResult(**common, invalid_result=True, invalid_reason=f"missing input: {', '.join(missing)}")
        try:
            score, details = await self._score(query=query, response=response, contexts=contexts, reference=reference)
        except StructuredOutputError as exc:
            return MetricResult(**common, invalid_result=True, invalid_reason=str(exc), details={"raw": exc.raw})
        return MetricResult(**common, score=score, details=details)

    # each metric names the inputs it reads (``needs``), so subclasses narrow this signature
    _score: Callable[..., Awaitable[tuple[float, dict[str, Any]]]]


class AnswerSimilarity(_Metric):
    """Cosine similarity of the answer's and the ground truth's embeddings.

    Example:

    ```python
    from llama_index_kgplus.evaluation import AnswerSimilarity

    result = AnswerSimilarity(embed_model=embed_model).evaluate(
        query="Who wrote Hamlet?", response="Shakespeare.", reference="William Shakespeare wrote Hamlet.")
    result.score
    ```
    """

    name, needs = "answer_similarity", ("response", "reference")

    async def _score(self, response: str, reference: str, **_: Any) -> tuple[float, dict[str, Any]]:
        return await _similarity(self.embed_model, response, reference), {}


async def _similarity(embed_model: BaseEmbedding, response: str, reference: str) -> float:
    a, b = await embed_model.aget_text_embedding_batch([response, reference])
    return cosine(a, b)


class AnswerCorrectness(_Metric):
    """``w_f1 * statement F1 + w_sim * answer similarity`` (RAGAS weights 0.75 / 0.25 by default).

    Example:

    ```python
    from llama_index_kgplus.evaluation import AnswerCorrectness

    result = AnswerCorrectness(llm=llm, embed_model=embed_model).evaluate(
        query="Who wrote Hamlet?", response="Shakespeare.", reference="William Shakespeare wrote Hamlet.")
    print(result.score, result.details["answer_verdicts"])
    ```
    """

    name, needs = "answer_correctness", ("query", "response", "reference")

    def __init__(self, llm: LLM | None = None, embed_model: BaseEmbedding | None = None, weights=(0.75, 0.25)):
        super().__init__(llm, embed_model)
        self.weights = weights

    async def _score(self, query: str, response: str, reference: str, **_: Any) -> tuple[float, dict[str, Any]]:
        answer_statements = await _judge.extract_statements(self.llm, query, response)
        truth_statements = await _judge.extract_statements(self.llm, query, reference)
        answer_verdicts = await _judge.judge_statements(
            self.llm, answer_statements.kept, reference, reference_name="ground truth"
        )
        truth_verdicts = await _judge.judge_statements(
            self.llm, truth_statements.kept, response, reference_name="answer"
        )
        tp = sum(v["verdict"] for v in answer_verdicts)
        fp = len(answer_verdicts) - tp
        fn = sum(not v["verdict"] for v in truth_verdicts)
        f1 = f1_from_counts(tp, fp, fn)
        similarity = await _similarity(self.embed_model, response, reference)
        w_f1, w_sim = self.weights
        score = (w_f1 * f1 + w_sim * similarity) / (w_f1 + w_sim)
        details = {
            "f1": f1, "similarity": similarity, "tp": tp, "fp": fp, "fn": fn,
            "answer_verdicts": answer_verdicts, "ground_truth_verdicts": truth_verdicts,
            "dropped_statements": {"answer": answer_statements.dropped, "ground_truth": truth_statements.dropped},
        }  # fmt: skip
        return score, details


class AnswerRelevance(_Metric):
    """Mean cosine between the question and questions generated back from the answer; 0 if noncommittal.

    Example:

    ```python
    from llama_index_kgplus.evaluation import AnswerRelevance

    metric = AnswerRelevance(llm=llm, embed_model=embed_model)
    print(metric.evaluate(query="Who wrote Hamlet?", response="Shakespeare wrote it.").score)
    ```
    """

    name, needs = "answer_relevance", ("query", "response")

    def __init__(self, llm: LLM | None = None, embed_model: BaseEmbedding | None = None, n_questions: int = 3):
        super().__init__(llm, embed_model)
        self.n_questions = n_questions

    async def _score(self, query: str, response: str, **_: Any) -> tuple[float, dict[str, Any]]:
        questions, noncommittal = await _judge.generate_questions(self.llm, response, self.n_questions)
        vectors = await self.embed_model.aget_text_embedding_batch([query, *questions])
        sims = [cosine(vectors[0], v) for v in vectors[1:]]
        score = 0.0 if noncommittal else float(np.mean(sims))
        return score, {"generated_questions": questions, "similarities": sims, "noncommittal": noncommittal}


class Faithfulness(_Metric):
    """Share of the answer's statements supported by the retrieved contexts.

    Example:

    ```python
    from llama_index_kgplus.evaluation import Faithfulness

    contexts = ["Hamlet is a tragedy written by William Shakespeare."]
    score = Faithfulness(llm=llm).evaluate(query="Who wrote Hamlet?", response="Shakespeare.", contexts=contexts).score
    ```
    """

    name, needs = "faithfulness", ("query", "response", "contexts")

    async def _score(self, query: str, response: str, contexts: Sequence[str], **_: Any) -> tuple[float, dict]:
        statements = await _judge.extract_statements(self.llm, query, response)
        if not statements.kept:
            raise StructuredOutputError("No statements could be extracted from the answer.", response)
        verdicts = await _judge.judge_statements(self.llm, statements.kept, "\n\n".join(contexts))
        score = sum(v["verdict"] for v in verdicts) / len(verdicts)
        return score, {"verdicts": verdicts, "dropped_statements": statements.dropped}


class ContextRecall(_Metric):
    """Share of the ground truth's sentences supported by the retrieved contexts.

    Example:

    ```python
    from llama_index_kgplus.evaluation import ContextRecall

    result = ContextRecall(llm=llm).evaluate(
        query="Who wrote Hamlet?", contexts=["Hamlet is a tragedy by Shakespeare."], reference="Shakespeare wrote Hamlet.")
    ```
    """

    name, needs = "context_recall", ("contexts", "reference")

    async def _score(self, contexts: Sequence[str], reference: str, **_: Any) -> tuple[float, dict]:
        from llama_index_kgplus._text import split_sentences

        sentences = split_sentences(reference) or [reference]
        verdicts = await _judge.judge_statements(self.llm, sentences, "\n\n".join(contexts))
        return sum(v["verdict"] for v in verdicts) / len(verdicts), {"verdicts": verdicts}


class ContextPrecision(_Metric):
    """Average precision of the retrieved contexts, relevance judged against the ground truth.

    Example:

    ```python
    from llama_index_kgplus.evaluation import ContextPrecision

    hits = [n.node.get_content() for n in retriever.retrieve("Who wrote Hamlet?")]
    result = ContextPrecision(llm=llm).evaluate(query="Who wrote Hamlet?", contexts=hits, reference="Shakespeare.")
    ```
    """

    name, needs = "context_precision", ("query", "contexts", "reference")

    async def _score(self, query: str, contexts: Sequence[str], reference: str, **_: Any) -> tuple[float, dict]:
        verdicts = await _judge.judge_contexts(self.llm, query, list(contexts), reference)
        return average_precision([v["verdict"] for v in verdicts]), {"verdicts": verdicts}


METRICS: dict[str, type[_Metric]] = {
    cls.name: cls
    for cls in (AnswerCorrectness, AnswerSimilarity, AnswerRelevance, Faithfulness, ContextRecall, ContextPrecision)
}
