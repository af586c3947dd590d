"""Pipeline comparisons with `kgplus eval` on the bench-data sets (issue: evaluation harness).

Three comparisons, each a baseline against the pipeline the data set is made for:

- ``kg``: questions "How are X and Y related?" from ``kg-umls-semnet/pairs.jsonl``; ground truth = the pair's gold
  paths written as sentences (at most 3), one clause per relationship in its own direction. The text corpus is the bundled Python tutorial, which says nothing about
  the UMLS semantic network: the comparison measures what the KG paths alone add to a RAG pipeline whose corpus
  lacks the relations (the motivating result had a relevant corpus too).
- ``glossary``: the Python FAQ questions of ``glossary-pydocs`` with their gold pages, over the 488 doc pages.
- ``hierarchy``: SQuAD questions (first annotator answer as ground truth) on the first 3 ``longdocs-squad``
  articles, baseline (flat chunks) vs hierarchy (collapsed) vs hierarchy-tree over a semantic-builder index.

Usage::

    python benchmarks/eval_comparisons.py --which kg,hierarchy,glossary --limit 10 --llm qwen2.5-coder-0.5b

Data sets, stores and indexes are kept under ``benchmarks/results/eval/<name>``, answers, scores and tables under
``benchmarks/results/eval/<name>/<llm>`` (``<llm>_judged-by_<judge>`` with ``--judge-llm``, which scores the
answers of the ``--llm`` run again); rerun to resume. The tables are printed and written to ``summary.md``.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1].parent / "shared" / "bench-data"
OUT = Path(__file__).resolve().parent / "results" / "eval"
KGPLUS = [sys.executable, "-m", "llama_index_kgplus.cli"]
REL = re.compile(r"-\[(.+)\]->|<-\[(.+)\]-")


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _run(*args: str) -> None:
    print("$ kgplus " + " ".join(args), flush=True)
    subprocess.run([*KGPLUS, *args], check=True)


def _eval(out: Path, llm: str, judge: str | None, *args: str) -> Path:
    """``kgplus eval`` into ``out/<llm>`` (or ``out/<llm>_judged-by_<judge>``, starting from that model's answers)."""
    run = out / (llm if judge in (None, llm) else f"{llm}_judged-by_{judge}")
    answers = out / llm / "cache" / "answers.jsonl"
    if run.name != llm and answers.is_file() and not (run / "cache" / "answers.jsonl").exists():
        (run / "cache").mkdir(parents=True)
        shutil.copy(answers, run / "cache" / "answers.jsonl")
    _run("eval", *args, "--out", str(run), "--llm", llm, *(["--judge-llm", judge] if judge else []))
    return run


def _path_sentence(path: list[str], names: dict[str, str]) -> str:
    """One clause per hop in the edge's own direction: ``A <-[isa]- B`` reads "B is a A"."""
    clauses = []
    for i in range(1, len(path), 2):
        left, right, m = names[path[i - 1]], names[path[i + 1]], REL.fullmatch(path[i])
        rel = (m.group(1) or m.group(2)).replace("_", " ").replace("isa", "is a")
        clauses.append(f"{left} {rel} {right}" if m.group(1) else f"{right} {rel} {left}")
    text = ", and ".join(clauses).replace("_", " ")
    return text[0].upper() + text[1:] + "."


def kg(limit: int, llm: str, judge: str | None) -> Path:
    out = OUT / "kg"
    data = BENCH / "kg-umls-semnet"
    names = {}
    for line in (data / "nodes.csv").read_text().splitlines()[1:]:
        cid, name = line.split(",")[:2]
        names[cid] = name
    rows = []
    for line in (data / "pairs.jsonl").read_text().splitlines():
        pair = json.loads(line)
        truth = " ".join(_path_sentence(p, names) for p in pair["gold_paths"][:3])
        relations = sorted({REL.fullmatch(step).group(1) or REL.fullmatch(step).group(2)
                            for path in pair["gold_paths"][:3] for step in path[1::2]})  # fmt: skip
        rows.append({"id": f"{pair['lhs']}|{pair['rhs']}", "question": f"How are {pair['text']} related?",
                     "ground_truth": truth, "gold_relations": relations})  # fmt: skip
    # every 10th pair: a spread over the distance-1 and distance-2 buckets
    dataset = _write_jsonl(out / "dataset.jsonl", rows[::10][:limit])
    store = f"ladybug://{out / 'kg.lbug'}"
    if not (out / "kg.lbug").exists():
        _run("kg", "import", "--nodes", str(data / "nodes.csv"), "--relationships", str(data / "relationships.csv"),
             "--store", store)  # fmt: skip
    from llama_index_kgplus.sample import SAMPLE_DOCS

    run = _eval(out, llm, judge, "--dataset", str(dataset), "--corpus", str(SAMPLE_DOCS), "--kg-store", store,
                "--pipelines", "baseline,kg,kg-facts", "--metrics", "answer_correctness,answer_similarity,answer_relevance",
                "--top-k", "3")  # fmt: skip
    gold = {r["id"]: r["gold_relations"] for r in rows}

    def names_a_relation(answer: dict) -> bool:  # "part_of" as "part_of" or "part of", "isa" also as "is a"
        forms = {
            f for rel in gold[answer["sample_id"]] for f in (rel, rel.replace("_", " "), rel.replace("isa", "is a"))
        }
        return any(re.search(rf"\b{re.escape(f)}\b", answer["answer"].lower()) for f in forms)

    _count_answers(run, "Answers naming a gold relationship (no judge)", names_a_relation)
    return run


def glossary(limit: int, llm: str, judge: str | None) -> Path:
    out = OUT / "glossary"
    data = BENCH / "glossary-pydocs"
    # the index glossary_retrieval.py builds (same chunking) saves re-ingesting 488 pages
    from llama_index_kgplus import _defaults

    index = _defaults.kgplus_home() / "bench" / "glossary-pydocs-index"
    source = (
        ["--index", str(index)] if (index / "docstore.json").is_file() else ["--corpus", str(data / "corpus.jsonl")]
    )
    return _eval(out, llm, judge, "--dataset", str(data / "questions.jsonl"), *source, "--glossary",
                 str(data / "glossary.json"), "--pipelines", "baseline,glossary", "--metrics",
                 "hit@5,recall@5,recall@10,mrr,answer_relevance,faithfulness", "--limit", str(limit), "--top-k", "10")  # fmt: skip


def hierarchy(limit: int, llm: str, judge: str | None) -> Path:
    out = OUT / "hierarchy"
    data = BENCH / "longdocs-squad"
    docs = [json.loads(line) for line in (data / "docs.jsonl").read_text().splitlines()][:3]
    corpus = _write_jsonl(out / "corpus.jsonl", docs)
    keep = {d["id"] for d in docs}
    questions = [json.loads(line) for line in (data / "questions.jsonl").read_text().splitlines()]
    questions = [q for q in questions if q["doc_id"] in keep][::40][:limit]  # spread over the 3 articles
    dataset = _write_jsonl(
        out / "dataset.jsonl",
        [{"id": q["id"], "question": q["question"], "ground_truth": q["answers"][0], "gold_ids": [q["doc_id"]]}
         for q in questions],
    )  # fmt: skip
    index = out / "index"
    if not (index / "docstore.json").is_file():
        _run("ingest", str(corpus), "--index", str(index), "--hierarchy", "semantic", "--summarizer", "extractive",
             "--chunk-size", "256")  # fmt: skip
    run = _eval(out, llm, judge, "--dataset", str(dataset), "--index", str(index), "--pipelines",
                "baseline,hierarchy,hierarchy-tree", "--metrics", "answer_correctness,answer_similarity", "--top-k", "4")  # fmt: skip
    truths = {q["id"]: q["answers"] for q in questions}
    _count_answers(run, "Answers containing a gold SQuAD answer (no judge)",
                   lambda a: any(t.lower() in a["answer"].lower() for t in truths[a["sample_id"]]))  # fmt: skip
    return run


def _count_answers(run: Path, title: str, passes: Callable[[dict], bool]) -> None:
    """A judge-free check per pipeline: how many answers pass, appended to summary.md."""
    counts: dict[str, list[bool]] = {}
    for line in (run / "cache" / "answers.jsonl").read_text(encoding="utf-8").splitlines():
        answer = json.loads(line)
        counts.setdefault(answer["pipeline"], []).append(passes(answer))
    table = "".join(f"| {p} | {sum(v)} / {len(v)} |\n" for p, v in counts.items())
    with (run / "summary.md").open("a", encoding="utf-8") as fh:
        fh.write(f"\n## {title}\n\n| pipeline | answers |\n|---|---|\n" + table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--which", default="kg,hierarchy,glossary")
    parser.add_argument("--limit", type=int, default=10, help="questions per comparison")
    parser.add_argument("--llm", default="qwen2.5-coder-0.5b", help="answers (and judge by default)")
    parser.add_argument("--judge-llm", default=None, help="another judge; reuses the --llm run's answers")
    args = parser.parse_args()
    runs = {"kg": kg, "glossary": glossary, "hierarchy": hierarchy}
    for name in args.which.split(","):
        out = runs[name](args.limit, args.llm, args.judge_llm)
        print(f"\n## {name}\n\n" + (out / "summary.md").read_text().split("\n\n", 2)[-1])


if __name__ == "__main__":
    main()
