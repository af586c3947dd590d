"""A ``kgplus eval`` output folder read for the Compare page: the summary table, the plots, and per question the
answers of two pipelines side by side with their scores and the judge's details (statements, verdicts)."""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from llama_index_kgplus._files import read_utf8
from llama_index_kgplus.errors import InputDataError

__all__ = ["EvalFolder"]


#: the columns of ``per_question.csv`` the Compare page reads
COLUMNS = ("pipeline", "sample_id", "metric", "score")


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    out = []
    for line in read_utf8(path, "Evaluation cache").split("\n"):
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):  # an empty or cut line (an interrupted run), a number too long
            continue
        if isinstance(record, dict):
            out.append(record)
    return out


def _score(value: str | None) -> float | None:
    try:
        return float(value) if value not in (None, "") else None
    except ValueError:
        return None


def _text(value: Any) -> str:
    """A field shown as text: a string as it is, a number or other JSON value as JSON, nothing as ``""``."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _read_scores(path: Path) -> list[dict[str, Any]]:
    """The rows of ``per_question.csv``, each with the four :data:`COLUMNS` as text (``score`` a float or None);
    a missing column or a malformed line is an :class:`InputDataError` of one line naming the file."""
    reader = csv.DictReader(io.StringIO(read_utf8(path, "Evaluation file"), newline=""))
    try:
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise InputDataError(
                f"{path}:1: the header lacks column(s) {', '.join(missing)}; a `kgplus eval` output has "
                f"{', '.join(COLUMNS)}, invalid_reason."
            )
        rows = [{**row, **{c: _text(row.get(c)) for c in COLUMNS}, "score": _score(row.get("score"))} for row in reader]
    except csv.Error as exc:
        raise InputDataError(f"{path}:{reader.line_num}: invalid CSV ({exc}).") from exc
    return rows


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
        self.scores: list[dict[str, Any]] = _read_scores(per_question)
        self.pipelines = list(dict.fromkeys(r["pipeline"] for r in self.scores))
        self.metrics = list(dict.fromkeys(r["metric"] for r in self.scores))
        self._answers = {
            (_text(r.get("pipeline")), _text(r.get("sample_id"))): r
            for r in _jsonl(self.root / "cache" / "answers.jsonl")
        }
        self._details = {
            (_text(r.get("pipeline")), _text(r.get("sample_id")), _text(r.get("metric"))): r["details"]
            for r in _jsonl(self.root / "cache" / "scores.jsonl")
            if isinstance(r.get("details"), dict) and r["details"]
        }

    def summary(self) -> list[dict[str, Any]]:
        """The rows of ``summary.csv`` (pipeline, metric, n, mean, ci_low, ci_high, invalid)."""
        path = self.root / "summary.csv"
        if not path.is_file():
            return []
        try:
            return list(csv.DictReader(io.StringIO(read_utf8(path, "Evaluation file"), newline="")))
        except csv.Error as exc:
            raise InputDataError(f"{path}: invalid CSV ({exc}).") from exc

    def summary_markdown(self) -> str:
        """``summary.md`` as written by the report (empty if missing)."""
        path = self.root / "summary.md"
        return read_utf8(path, "Evaluation file") if path.is_file() else ""

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
                "sample_id": sample_id, "question": _text(a.get("question")) or _text(b.get("question")),
                "first": self._side(first, a, scores, sample_id, metric),
                "second": self._side(second, b, scores, sample_id, metric),
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

    def _side(
        self, pipeline: str, answer: dict[str, Any], scores: dict[str, float | None], sample_id: str, metric: str
    ) -> dict[str, Any]:
        """One pipeline's side of a row: every field of the cached answer as the page shows it (text, a list of
        texts), whatever type the file gave it."""
        contexts = answer.get("contexts")
        return {
            "pipeline": pipeline,
            "answer": _text(answer.get("answer")),
            "score": scores.get(pipeline),
            "contexts": [_text(c) for c in contexts] if isinstance(contexts, list) else [],
            "details": self._details.get((pipeline, sample_id, metric), {}),
        }
