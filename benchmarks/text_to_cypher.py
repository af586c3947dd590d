"""Text-to-Cypher accuracy of a local model on written questions over the shared graphs (issue 13).

``text_to_cypher_questions.jsonl`` holds questions over three graphs in two sets: ``tuned`` (the UMLS semantic
network and FamPlex, the graphs the engine's repair rules were written against) and ``held-out`` (GeoNames
countries, ``benchmarks/data/kg-geonames``, written after the rules and never used to tune them). Each row has
``id``, ``graph`` (``umls`` | ``famplex`` | ``geonames``), ``kind`` (``count`` | ``list`` | ``exists`` | ``1hop`` |
``2hop``), ``question``, ``spec`` and ``answer``. The gold ``answer`` is computed from the graph's CSV files by
:func:`gold` from the row's ``spec`` (never typed by hand nor taken from a model); ``--check-gold`` recomputes
every one and fails on a mismatch, ``--write-gold`` fills them in. A spec, read by :func:`gold`:

- ``start``: a name (one entity), or ``where``: ``{"property": value}`` (every entity with it);
- ``path``: steps ``[kind, ">" | "<"]`` followed from there (``>`` from ``:START_ID`` to ``:END_ID``; the kind is
  the graph's relationship property ``relname``, or ``predicate`` on GeoNames);
  the entities reached by the last step (the start entities are dropped when ``"exclude_start": true``);
- ``end_where``: a filter on the entities reached;
- ``result``: ``count`` (how many entities), ``names`` (their names), ``exists`` (``target`` is among them, or
  any is reached without ``target``) or ``relnames`` (the kinds of relationship from ``start`` to ``target``).

Every question is imported into a temporary embedded Ladybug store and put to ``CypherQueryEngine``. Scoring, from
the rows the query returned (``ok``): a count is right when a number in the first row equals the gold; a list
when one column of the rows (values flattened, ids read as names, case ignored) holds exactly the gold set
(``contained``: it holds the gold set, perhaps with more; ``precision`` of that column); exists when the rows
read as a boolean (a boolean cell, else one row of numbers read as ``> 0``, else whether any row came back)
equal the gold. ``answer_ok`` says whether the final sentence holds the gold (the number, every name, or
yes/no).

    flock /tmp/kgplus-llm.lock .venv/bin/python benchmarks/text_to_cypher.py [--llm qwen2.5-coder-1.5b] \\
        [--out /tmp/text_to_cypher.jsonl] [--set tuned|held-out] [--exclude-repairs all|NAME,...] [--ids u01,f03] \\
        [--check-gold]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import networkx as nx
import pandas as pd
from kg_common import BENCH, print_table
from tqdm import tqdm

QUESTIONS = Path(__file__).with_name("text_to_cypher_questions.jsonl")
DATA = Path(__file__).with_name("data")
# each graph: its folder, its name property and the relationship property that holds a relationship's kind
GRAPHS = {
    "umls": (BENCH / "kg-umls-semnet", "cfname", "relname"),
    "famplex": (BENCH / "kg-famplex", "cfname", "relname"),
    "geonames": (DATA / "kg-geonames", "name", "predicate"),
}
SETS = {"tuned": ("umls", "famplex"), "held-out": ("geonames",)}
NUMBER_WORDS = "zero one two three four five six seven eight nine ten eleven twelve".split()


class Graph:
    """One graph read from its CSV files: a networkx multigraph keyed by id, names both ways; each edge's kind is
    its ``relname`` attribute."""

    def __init__(self, folder: Path, name: str, kind: str) -> None:
        nodes = pd.read_csv(folder / "nodes.csv", dtype=str, keep_default_na=False)
        rels = pd.read_csv(folder / "relationships.csv", dtype=str, keep_default_na=False)
        self.g = nx.MultiDiGraph()
        id_column = next(c for c in nodes.columns if c.endswith(":ID"))
        self.id_property = id_column.removesuffix(":ID")
        for row in nodes.to_dict("records"):
            self.g.add_node(row[id_column], **{k: v for k, v in row.items() if ":" not in k})
        for start, end, relname in zip(rels[":START_ID"], rels[":END_ID"], rels[kind]):
            self.g.add_edge(start, end, relname=relname)
        self.name_property = name
        self.name = {cid: data[name] for cid, data in self.g.nodes(data=True)}
        by_name = defaultdict(list)
        for cid, name in self.name.items():
            by_name[name].append(cid)
        self.cid = {name: cids[0] for name, cids in by_name.items() if len(cids) == 1}

    def step(self, cids: set[str], relname: str, direction: str) -> set[str]:
        """The entities one ``relname`` relationship away from ``cids`` (``>`` outgoing, ``<`` incoming)."""
        edges = self.g.out_edges if direction == ">" else self.g.in_edges
        far = 1 if direction == ">" else 0
        return {e[far] for e in edges(cids, data="relname") if e[2] == relname}

    def label(self, value: Any) -> str:
        """A returned value as a comparable name: an id or a node read as its name, lower case."""
        if isinstance(value, dict):
            value = value.get(self.name_property) or value.get(self.id_property) or value.get("name")
        text = str(value).strip()
        return self.name.get(text, text).lower()


def gold(graph: Graph, spec: dict[str, Any]) -> int | bool | list[str]:
    """The answer ``spec`` (see the module docstring) comes to on ``graph``."""
    if "start" in spec:
        if spec["start"] not in graph.cid:
            raise ValueError(f"{spec['start']!r} is not one unambiguous name of the graph")
        start = {graph.cid[spec["start"]]}
    else:
        start = {c for c, d in graph.g.nodes(data=True) if all(d[k] == v for k, v in spec["where"].items())}
    if spec["result"] == "relnames":
        target = graph.cid[spec["target"]]
        return sorted({d["relname"] for _, end, d in graph.g.out_edges(start, data=True) if end == target})
    reached = set(start)
    for relname, direction in spec.get("path", []):
        reached = graph.step(reached, relname, direction)
    if spec.get("exclude_start"):
        reached -= start
    reached = {c for c in reached if all(graph.g.nodes[c][k] == v for k, v in spec.get("end_where", {}).items())}
    if spec["result"] == "count":
        return len(reached)
    if spec["result"] == "exists":
        return graph.cid[spec["target"]] in reached if "target" in spec else bool(reached)
    return sorted(graph.name[c] for c in reached)


def _flat(value: Any) -> list[Any]:
    return [v for item in value for v in _flat(item)] if isinstance(value, list) else [value]


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def as_bool(rows: list[dict[str, Any]]) -> bool:
    """Rows read as a yes/no answer: a boolean cell, else one row of numbers (``> 0``), else any row."""
    if not rows:
        return False
    cells = [v for row in rows for v in _flat(list(row.values()))]
    booleans = [v for v in cells if isinstance(v, bool)]
    if booleans:
        return booleans[0]
    numbers = [_number(v) for v in rows[0].values()]
    if len(rows) == 1 and numbers and all(n is not None for n in numbers):
        return bool(numbers[0])
    return True


def score(graph: Graph, answer: Any, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """``ok`` (and for lists ``contained`` and ``precision``) of the rows against the gold ``answer``."""
    if isinstance(answer, bool):
        return {"ok": as_bool(rows) == answer}
    if isinstance(answer, int):
        first = rows[0].values() if rows else []
        return {"ok": any(_number(v) == answer for v in first)}
    want = {a.lower() for a in answer}
    if not want:
        return {"ok": not rows, "contained": not rows, "precision": 1.0}
    best: dict[str, Any] = {"ok": False, "contained": False, "precision": 0.0}
    for key in {k for row in rows for k in row}:
        got = {graph.label(v) for row in rows for v in _flat(row.get(key)) if v is not None}
        if want <= got:
            precision = len(want) / len(got) if got else 1.0
            if precision >= best["precision"]:
                best = {"ok": got == want, "contained": True, "precision": round(precision, 3)}
    return best


def answer_holds(text: str, answer: Any) -> bool:
    """Whether the final sentence holds the gold: yes/no, the number (digits or word), or every name."""
    text = text.lower()
    if isinstance(answer, bool):
        words = set(re.findall(r"[a-z']+", text))
        negative = bool(words & {"no", "not", "none", "doesn't", "isn't", "cannot"})
        return negative != answer
    if isinstance(answer, int):
        word = NUMBER_WORDS[answer] if answer < len(NUMBER_WORDS) else None
        return re.search(rf"(?<![\d.]){answer}(?![\d.])", text) is not None or (
            word is not None and re.search(rf"\b{word}\b", text) is not None
        )
    return all(name.lower() in text for name in answer)


def load(path: Path = QUESTIONS) -> list[dict[str, Any]]:
    """The question rows."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def check_gold(rows: list[dict[str, Any]], write: bool = False) -> int:
    """Recompute every gold answer from the CSV files; the number of mismatches (written over when ``write``)."""
    graphs = {name: Graph(*GRAPHS[name]) for name in sorted({row["graph"] for row in rows})}
    bad = 0
    for row in rows:
        value = gold(graphs[row["graph"]], row["spec"])
        if value != row.get("answer"):
            bad += 1
            print(f"{row['id']}: stored {row.get('answer')!r}, computed {value!r}")
            row["answer"] = value
    if write:
        QUESTIONS.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    print(f"{len(rows)} gold answers recomputed from the CSV files: {bad} differ" + (" (written)" if write else ""))
    return bad


def run(args: argparse.Namespace, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Import both graphs into temporary Ladybug stores and answer every question; the per-question results.

    The queries are written first, question after question (the graph's description opens every prompt, so
    llama.cpp reuses its cached prefix), then the answers with the engine's own answer prompt."""
    from llama_index_kgplus.kg import CypherQueryEngine, KnowledgeGraph, import_kg
    from llama_index_kgplus.kg._cypher import CypherAnswer
    from llama_index_kgplus.llm import llm_from_spec

    llm = llm_from_spec(args.llm, max_new_tokens=256, context_window=4096, n_threads=args.threads)
    off = set(filter(None, args.exclude_repairs.split(",")))
    repairs = () if off == {"all"} else CypherQueryEngine.default_repairs(exclude=off)
    results = []
    with tempfile.TemporaryDirectory(prefix="text-to-cypher-") as tmp:
        engines, graphs = {}, {}
        for name in sorted({row["graph"] for row in rows}):
            folder, uri = GRAPHS[name][0], f"ladybug://{tmp}/{name}.lbug"
            synonyms = folder / "synonyms.csv"
            import_kg(uri, folder / "nodes.csv", folder / "relationships.csv", synonyms if synonyms.exists() else None)
            engines[name] = CypherQueryEngine.from_defaults(
                KnowledgeGraph.open(uri), llm=llm, max_rows=args.max_rows, repairs=repairs
            )
            graphs[name] = Graph(*GRAPHS[name])
        out = Path(args.out)
        out.write_text("")
        for row in tqdm(rows, desc="queries", unit="q"):
            start = time.perf_counter()
            meta = engines[row["graph"]].query_graph(row["question"]).model_dump()
            results.append(
                {
                    **{k: row[k] for k in ("id", "graph", "kind", "question", "answer")},
                    **{
                        k: meta[k]
                        for k in (
                            "cypher",
                            "rows",
                            "refused",
                            "repaired",
                            "arrows_reversed",
                            "chain_written",
                            "entities_returned",
                            "reworked_by",
                            "complaint",
                        )
                    },
                    **score(graphs[row["graph"]], row["answer"], meta["rows"]),
                    "query_seconds": round(time.perf_counter() - start, 2),
                }
            )
            with out.open("a") as fh:  # the queries alone, replaced by the full records below
                fh.write(json.dumps(results[-1], ensure_ascii=False, default=str) + "\n")
        out.write_text("")
        for result in tqdm(results if args.answers else [], desc="answers", unit="q"):
            start = time.perf_counter()
            fields = ("question", "cypher", "rows", "refused", "repaired", "complaint", "reworked_by")
            text = str(engines[result["graph"]].respond(CypherAnswer(**{k: result[k] for k in fields})))
            result.update(text=text, answer_ok=answer_holds(text, result["answer"]))
            result["seconds"] = round(result["query_seconds"] + time.perf_counter() - start, 2)
            with out.open("a") as fh:
                fh.write(json.dumps(result, ensure_ascii=False, default=str) + "\n")
        if not args.answers:
            out.write_text("".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in results))
        for engine in engines.values():
            engine.kg.close()
    return results


def set_of(graph: str) -> str:
    """The set (``tuned`` or ``held-out``) a graph's questions belong to."""
    return next(name for name, graphs in SETS.items() if graph in graphs)


def report(results: list[dict[str, Any]], model: str) -> None:
    """One table per set of graphs: accuracy per kind and overall, refused, repaired, seconds per question; then
    the misses."""
    print(f"\nmodel: {model}")
    for name in SETS:
        part = [r for r in results if set_of(r["graph"]) == name]
        if part:
            print(f"\nset: {name} ({', '.join(SETS[name])})")
            _table(part)
    for r in results:
        if not r["ok"]:
            print(f"MISS {r['id']} [{r['kind']}] {r['question']}\n    {r['cypher'] or r['refused']}")
            print(f"    -> {json.dumps(r['rows'], default=str)[:160]} (gold {json.dumps(r['answer'])[:100]})")


def _table(results: list[dict[str, Any]]) -> None:
    table = []
    for kind in [*sorted({r["kind"] for r in results}), "all"]:
        part = [r for r in results if kind in ("all", r["kind"])]
        right = sum(r["ok"] for r in part)
        table.append(
            [
                kind,
                len(part),
                f"{right}/{len(part)} = {right / len(part):.2f}",
                sum(r.get("answer_ok", False) for r in part) if "text" in part[0] else "-",
                sum(r.get("contained", False) for r in part),
                sum(r["refused"] is not None for r in part),
                sum(r["repaired"] for r in part),
                f"{statistics.median(r['query_seconds'] for r in part):.1f}",
                f"{statistics.median(r.get('seconds', r['query_seconds']) for r in part):.1f}",
            ]
        )
    headers = [
        "kind",
        "n",
        "rows right",
        "answer holds gold",
        "list contained",
        "refused",
        "repaired",
        "query s",
        "total s",
    ]
    print_table(headers, table)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--llm", default="qwen2.5-coder-1.5b", help="model name, .gguf path or spec")
    parser.add_argument("--out", default="/tmp/text_to_cypher.jsonl", help="per-question results (JSONL)")
    parser.add_argument("--set", choices=sorted(SETS), default=None, help="only this set's questions")
    parser.add_argument("--ids", default=None, help="only these question ids (comma-separated)")
    parser.add_argument("--max-rows", type=int, default=100)
    parser.add_argument(
        "--exclude-repairs", default="", help="repair policies switched off (comma-separated names, or 'all')"
    )
    parser.add_argument("--no-answers", dest="answers", action="store_false", help="write and score the queries only")
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp threads (1: the machine is shared)")
    parser.add_argument("--check-gold", action="store_true", help="recompute the gold answers and stop")
    parser.add_argument("--write-gold", action="store_true", help="recompute and store the gold answers")
    parser.add_argument("--report", default=None, help="print the table of an earlier --out file and stop")
    args = parser.parse_args()
    rows = load()
    if args.check_gold or args.write_gold:
        return 1 if check_gold(rows, write=args.write_gold) and not args.write_gold else 0
    if args.report:
        report(load(Path(args.report)), args.llm)
        return 0
    if check_gold(rows):
        return 1
    if args.set:
        rows = [row for row in rows if set_of(row["graph"]) == args.set]
    if args.ids:
        rows = [row for row in rows if row["id"] in args.ids.split(",")]
    report(run(args, rows), args.llm)
    return 0


if __name__ == "__main__":
    sys.exit(main())
