"""Tables (markdown and CSV) and plots (PNG) from score records."""

from __future__ import annotations

import csv
from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path

from llama_index_kgplus._paths import inside, user_path
from llama_index_kgplus.evaluation._runner import ScoreRecord
from llama_index_kgplus.evaluation._stats import mean_ci


def summarize(records: Sequence[ScoreRecord]) -> list[dict]:
    """One row per (pipeline, metric): n, mean, 95% CI, and how many scores were invalid."""
    grouped: dict[tuple[str, str], list[ScoreRecord]] = defaultdict(list)
    for r in records:
        grouped[(r.pipeline, r.metric)].append(r)
    rows = []
    for (pipeline, metric), group in grouped.items():
        scores = [r.score for r in group if r.score is not None]
        mean, low, high = mean_ci(scores, bounds=(0.0, 1.0)) if scores else (None, None, None)
        rows.append(
            {"pipeline": pipeline, "metric": metric, "n": len(scores), "mean": mean,
             "ci_low": low, "ci_high": high, "invalid": len(group) - len(scores)}
        )  # fmt: skip
    return rows


def paired_differences(records: Sequence[ScoreRecord], pipelines: Sequence[str]) -> list[dict]:
    """Per metric, each pipeline minus the first one on the questions both scored: mean difference and 95% CI.

    Pairing removes the question-to-question spread that makes the per-pipeline intervals overlap.
    """
    rows = []
    for metric, other, diffs in _differences(_scores_by_metric(records), pipelines):
        mean, low, high = mean_ci(diffs, bounds=(-1.0, 1.0))
        rows.append({"metric": metric, "pipeline": other, "versus": pipelines[0], "n": len(diffs),
                     "mean_diff": mean, "ci_low": low, "ci_high": high})  # fmt: skip
    return rows


def _differences(scores: dict, pipelines: Sequence[str]) -> Iterator[tuple[str, str, list[float]]]:
    """``(metric, pipeline, per-question differences to the first pipeline)`` where both have scores."""
    base = pipelines[0]
    for metric, per_pipeline in scores.items():
        for other in pipelines[1:]:
            common = sorted(set(per_pipeline.get(base, {})) & set(per_pipeline.get(other, {})))
            if common:
                yield metric, other, [per_pipeline[other][q] - per_pipeline[base][q] for q in common]


def _scores_by_metric(records: Sequence[ScoreRecord]) -> dict[str, dict[str, dict[str, float]]]:
    """``{metric: {pipeline: {sample_id: score}}}`` of the valid scores."""
    scores: dict[str, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for r in records:
        if r.score is not None:
            scores[r.metric][r.pipeline][r.sample_id] = r.score
    return scores


def _fmt(row: dict | None) -> str:
    if row is None or row["mean"] is None:
        return "n/a"
    invalid = f", {row['invalid']} invalid" if row["invalid"] else ""
    return f"{row['mean']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}] (n={row['n']}{invalid})"


def markdown_table(rows: Sequence[dict], pipelines: Sequence[str]) -> str:
    """Metrics as rows, pipelines as columns: ``mean [95% CI] (n)``."""
    by_key = {(r["pipeline"], r["metric"]): r for r in rows}
    metrics = list(dict.fromkeys(r["metric"] for r in rows))
    lines = ["| metric | " + " | ".join(pipelines) + " |", "|---|" + "---|" * len(pipelines)]
    for metric in metrics:
        lines.append(f"| {metric} | " + " | ".join(_fmt(by_key.get((p, metric))) for p in pipelines) + " |")
    return "\n".join(lines)


def write_report(records: Sequence[ScoreRecord], pipelines: Sequence[str], out_dir: str | Path) -> dict[str, Path]:
    """Write summary.md, summary.csv, per_question.csv and the plots; return their paths."""
    out = user_path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = summarize(records)
    paths = {
        "summary_md": _target(out, "summary.md"),
        "summary_csv": _target(out, "summary.csv"),
        "per_question": _target(out, "per_question.csv"),
    }
    text = (
        "# Evaluation\n\nMean score per metric and pipeline, with the 95% confidence interval (t distribution, "
        "clipped to [0, 1]).\n\n" + markdown_table(rows, pipelines) + "\n"
    )
    diffs = paired_differences(records, pipelines)
    if diffs:
        text += (
            f"\n## Paired differences vs {pipelines[0]}\n\nMean per-question difference on the questions both "
            "pipelines scored, with its 95% confidence interval; an interval excluding 0 is a difference these "
            "questions support.\n\n| metric | pipeline | n | difference [95% CI] |\n|---|---|---|---|\n"
            + "".join(
                f"| {d['metric']} | {d['pipeline']} | {d['n']} | "
                f"{d['mean_diff']:+.3f} [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}] |\n"
                for d in diffs
            )
        )
    paths["summary_md"].write_text(text, encoding="utf-8")
    _write_csv(paths["summary_csv"], rows, ["pipeline", "metric", "n", "mean", "ci_low", "ci_high", "invalid"])
    _write_csv(
        paths["per_question"],
        [{"pipeline": r.pipeline, "sample_id": r.sample_id, "metric": r.metric, "score": r.score,
          "invalid_reason": r.invalid_reason} for r in records],
        ["pipeline", "sample_id", "metric", "score", "invalid_reason"],
    )  # fmt: skip
    paths.update(_plots(records, pipelines, out))
    return paths


def _target(out: Path, name: str) -> Path:
    """A file of the report, refused when a symlink would take the write out of ``out``."""
    return inside(out, name, fix=f"remove the link {out / name} or give another --out folder")


def _write_csv(path: Path, rows: Sequence[dict], fields: Sequence[str]) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(fields))
        writer.writeheader()
        writer.writerows(rows)


def _plots(records: Sequence[ScoreRecord], pipelines: Sequence[str], out: Path) -> dict[str, Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scores = _scores_by_metric(records)
    paths = {}
    for metric, per_pipeline in scores.items():
        safe = metric.replace("@", "_at_")
        fig, ax = plt.subplots(figsize=(6, 3.5))
        for pipeline in pipelines:
            if per_pipeline.get(pipeline):
                ax.hist(list(per_pipeline[pipeline].values()), bins=10, range=(0, 1), alpha=0.5, label=pipeline)
        ax.set(title=f"{metric}: score distribution", xlabel="score", ylabel="questions")
        ax.legend()
        fig.tight_layout()
        paths[f"hist_{safe}"] = _target(out, f"hist_{safe}.png")
        fig.savefig(paths[f"hist_{safe}"], dpi=100)
        plt.close(fig)
    base = pipelines[0]
    for metric, other, diffs in _differences(scores, pipelines):
        safe = metric.replace("@", "_at_")
        diffs = sorted(diffs)
        fig, ax = plt.subplots(figsize=(6, 3.5))
        ax.bar(range(len(diffs)), diffs, color=["tab:green" if d >= 0 else "tab:red" for d in diffs])
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set(title=f"{metric}: {other} minus {base}, per question", xlabel="questions (sorted)", ylabel="difference")
        fig.tight_layout()
        key = f"diff_{safe}_{other}_vs_{base}"
        paths[key] = _target(out, f"{key}.png")
        fig.savefig(paths[key], dpi=100)
        plt.close(fig)
    return paths
