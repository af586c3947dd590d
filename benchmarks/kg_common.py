"""Shared helpers of the KG benchmarks: generated graphs in neo4j-admin CSV format, a local FalkorDB server,
timing and table printing."""

from __future__ import annotations

import csv
import random
import statistics
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "shared" / "bench-data"
if not BENCH.is_dir():
    BENCH = Path("/work/shared/bench-data")

_SYLLABLES = [c + v for c in "bcdfghjklmnprstvz" for v in "aeiou"] + ["qu", "th", "sh", "ch"]


def pseudo_names(n: int, random_state: int = 0) -> list[str]:
    """``n`` distinct pseudo-words of 1-3 words (2-4 syllables each), like entity names."""
    rng = random.Random(random_state)
    names, seen = [], set()
    while len(names) < n:
        words = [
            "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))) for _ in range(rng.choice((1, 1, 2, 3)))
        ]
        name = " ".join(words)
        if name not in seen:
            seen.add(name)
            names.append(name)
    return names


def write_random_graph(folder: Path, n_nodes: int, n_edges: int, random_state: int = 0) -> tuple[Path, Path]:
    """A uniform random multigraph (Erdős–Rényi style, no self-loops) in neo4j-admin CSV format."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(random_state)
    nodes, rels = folder / "nodes.csv", folder / "relationships.csv"
    names = pseudo_names(n_nodes, random_state)
    with nodes.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["cid:ID", "name", ":LABEL"])
        writer.writerows((f"N{i}", names[i], "Ent") for i in range(n_nodes))
    kinds = ["isa", "part_of", "treats", "causes", "interacts_with"]
    with rels.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow([":START_ID", ":END_ID", ":TYPE", "relname", "rank:int"])
        for _ in range(n_edges):
            a = rng.randrange(n_nodes)
            b = rng.randrange(n_nodes - 1)
            b += b >= a
            writer.writerow((f"N{a}", f"N{b}", "Rel", rng.choice(kinds), rng.randint(1, 5)))
    return nodes, rels


def ms(samples: list[float]) -> str:
    """Median (and mean) of seconds, in milliseconds."""
    if not samples:
        return "-"
    return f"{statistics.median(samples) * 1000:.2f} ({statistics.fmean(samples) * 1000:.2f})"


def print_table(headers: list[str], rows: list[list[object]]) -> None:
    """A Markdown table, so the output can be pasted into docs/benchmarks/index.md."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in cells:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |")
    print(flush=True)
