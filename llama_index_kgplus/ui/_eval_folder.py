"""A ``kgplus eval`` output folder read for the Compare page: the summary table, the plots, and per question the
answers of two pipelines side by side with their scores and the judge's details (statements, verdicts)."""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from llama_index_kgplus.errors import InputDataError

__all__ = ["EvalFolder"]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").split("\n"):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:  # an empty or cut line (an interrupted run)
            continue
        if isinstance(record, dict):
            out.append(record)
    return out


def _score(value: str | None) -> float | None:
    try:
        return float(value) if value not in (None, "") else None
    except ValueError:
        return None


class EvalFolder:
    """The files of one ``kgplus eval --out`` folder; only files inside it are ever read.

    Example:

    ```python
    folder = EvalFolder("eval-out")
    folder.pipelines, folder.metrics
    rows = folder.compare("baseline", "glossary", "answer_correctness", order="worst")
    ```
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).resolve()
        per_question = self.root / "per_question.csv"
        if not per_question.is_file():
            raise InputDataError(f"{root} is not a `kgplus eval` output folder (no per_question.csv).")
        with per_question.open(encoding="utf-8", newline="") as fh:
            self.scores: list[dict[str, Any]] = [
                {**row, "score": _score(row.get("score"))} for row in csv.DictReader(fh)
            ]  # fmt: skip
        self.pipelines = list(dict.fromkeys(r["pipeline"] for r in self.scores))
        self.metrics = list(dict.fromkeys(r["metric"] for r in self.scores))
        self._answers = {
            (r.get("pipeline"), r.get("sample_id")): r for r in _jsonl(self.root / "cache" / "answers.jsonl")
        }
        self._details = {
            (r.get("pipeline"), r.get("sample_id"), r.get("metric")): r.get("details") or {}
            for r in _jsonl(self.root / "cache" / "scores.jsonl")
        }

    def summary(self) -> list[dict[str, Any]]:
        """The rows of ``summary.csv`` (pipeline, metric, n, mean, ci_low, ci_high, invalid)."""
        path = self.root / "summary.csv"
        if not path.is_file():
            return []
        with path.open(encoding="utf-8", newline="") as fh:
            return list(csv.DictReader(fh))

    def summary_markdown(self) -> str:
        """``summary.md`` as written by the report (empty if missing)."""
        path = self.root / "summary.md"
        return path.read_text(encoding="utf-8") if path.is_file() else ""

    def plots(self) -> list[Path]:
        """The PNG plots of the folder (listed here, never named by the browser)."""
        return sorted(p for p in self.root.glob("*.png") if p.is_file() and p.resolve().parent == self.root)

    def compare(self, first: str, second: str, metric: str, order: str = "worst") -> list[dict[str, Any]]:
        """Per question: both answers and scores on ``metric`` and the judge's details. ``order``: ``worst``
        (lowest mean score first), ``difference`` (largest gap first) or ``question``."""
        for name in (first, second):
            if name not in self.pipelines:
                raise InputDataError(f"No pipeline {name!r} in {self.root} (it has {', '.join(self.pipelines)}).")
        by_question: dict[str, dict[str, float | None]] = defaultdict(dict)
        for r in self.scores:
            if r["metric"] == metric and r["pipeline"] in (first, second):
                by_question[r["sample_id"]][r["pipeline"]] = r["score"]
        rows: list[dict[str, Any]] = []
        for sample_id, scores in by_question.items():
            a, b = self._answers.get((first, sample_id), {}), self._answers.get((second, sample_id), {})
            rows.append({
                "sample_id": sample_id, "question": a.get("question") or b.get("question") or "",
                "first": {"pipeline": first, "answer": a.get("answer", ""), "score": scores.get(first),
                          "contexts": a.get("contexts", []), "details": self._details.get((first, sample_id, metric), {})},
                "second": {"pipeline": second, "answer": b.get("answer", ""), "score": scores.get(second),
                           "contexts": b.get("contexts", []), "details": self._details.get((second, sample_id, metric), {})},
            })  # fmt: skip
        valid = [s for r in rows for s in (r["first"]["score"], r["second"]["score"]) if s is not None]
        low = min(valid, default=0.0)

        def value(side: dict[str, Any]) -> float:
            return side["score"] if side["score"] is not None else low - 1.0  # an invalid score sorts first

        if order == "worst":
            rows.sort(key=lambda r: (value(r["first"]) + value(r["second"]), r["sample_id"]))
        elif order == "difference":
            rows.sort(key=lambda r: (-abs(value(r["first"]) - value(r["second"])), r["sample_id"]))
        else:
            rows.sort(key=lambda r: r["sample_id"])
        return rows
