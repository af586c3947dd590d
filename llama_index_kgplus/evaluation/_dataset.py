"""Evaluation datasets: JSONL with ``question`` and any of ``ground_truth``, ``answers`` (short gold answers, for
the judge-free ``exact_match``, ``token_f1`` and ``answer_contains``), ``gold_ids`` (and optional ``id``)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from llama_index_kgplus._jsonl import id_field, iter_jsonl, text_field
from llama_index_kgplus.errors import InputDataError


@dataclass(frozen=True)
class EvalSample:
    """One question of an evaluation dataset and what it is scored against: a ``ground_truth`` answer (RAGAS-style
    metrics), short ``answers`` (exact match, token F1) and/or the ``gold_ids`` of the documents that hold the
    answer (retrieval metrics). :func:`load_dataset` reads them from JSON Lines.

    Example:

    ```python
    from llama_index_kgplus.evaluation import EvalSample

    sample = EvalSample(question="Who wrote Hamlet?", id="q1", ground_truth="William Shakespeare wrote Hamlet.",
                        gold_ids=("hamlet",))
    ```
    """

    question: str
    id: str
    ground_truth: str | None = None
    gold_ids: tuple[str, ...] = field(default_factory=tuple)
    answers: tuple[str, ...] = field(default_factory=tuple)


def load_dataset(path: str | Path) -> list[EvalSample]:
    """Read and validate a dataset; every problem names its line."""
    samples, seen = [], set()
    for where, record in iter_jsonl(path, "Dataset"):
        if not (text_field(record, "question", where, required=False) or "").strip():
            raise InputDataError(f'{where}: a line needs a non-empty "question".')
        truth = record.get("ground_truth")
        gold = record.get("gold_ids") or []
        answers = record.get("answers") or []
        if truth is None and not gold and not answers:
            raise InputDataError(f'{where}: a line needs "ground_truth", "answers" or "gold_ids" to be scored.')
        if truth is not None and not isinstance(truth, str):
            raise InputDataError(f'{where}: "ground_truth" must be a string.')
        if not isinstance(gold, list) or not all(isinstance(g, str) for g in gold):
            raise InputDataError(f'{where}: "gold_ids" must be a list of strings.')
        if not isinstance(answers, list) or not all(isinstance(a, str) and a.strip() for a in answers):
            raise InputDataError(f'{where}: "answers" must be a list of non-empty strings.')
        question = record["question"].strip()
        sample_id = id_field(record, "id", where) if record.get("id") is not None else None
        sample_id = sample_id or hashlib.sha1(question.encode()).hexdigest()[:12]
        if sample_id in seen:
            raise InputDataError(f"{where}: duplicate id {sample_id!r}.")
        seen.add(sample_id)
        samples.append(
            EvalSample(
                question=question, id=sample_id, ground_truth=truth, gold_ids=tuple(gold), answers=tuple(answers)
            )
        )
    if not samples:
        raise InputDataError(f"Dataset {path} holds no question.")
    return samples
