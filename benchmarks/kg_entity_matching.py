"""Entity recognition throughput: EntityMatcher (Aho-Corasick) vs a compiled-regex alternation.

For dictionaries of 10^4, 10^5 and 10^6 generated names, on about 1 MB of text in which about one token in
twenty belongs to a name: build time, load time of the saved dictionary, search throughput, and the same for
one compiled ``re`` pattern ``(?<!\\w)(?:name1|name2|...)(?!\\w)`` (IGNORECASE, longest names first, so it is
leftmost-longest too). The regex baseline runs in a child process with a time budget, because compiling a
million-way alternation can take very long; a run over budget is reported as such, not estimated.

    .venv/bin/python benchmarks/kg_entity_matching.py [--sizes 10000 100000 1000000] [--regex-budget 120]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import random
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kg_common import print_table, pseudo_names  # noqa: E402

from llama_index_kgplus.kg import EntityMatcher  # noqa: E402

FILLER = (
    "the of and to in is was for on that with as by at from this which are be or it an not have has patients "
    "protein gene cell study results expression level increased decreased binding receptor pathway role"
).split()


def make_text(names: list[str], size: int = 1_000_000, name_share: float = 0.05, random_state: int = 0) -> str:
    rng = random.Random(random_state)
    parts, length = [], 0
    while length < size:
        token = rng.choice(names) if rng.random() < name_share else rng.choice(FILLER)
        if rng.random() < 0.07:
            token += "."
        parts.append(token)
        length += len(token) + 1
    return " ".join(parts)[:size]


def _regex_worker(names: list[str], text: str, queue: mp.Queue) -> None:
    started = time.perf_counter()
    alternation = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    pattern = re.compile(rf"(?<!\w)(?:{alternation})(?!\w)", re.IGNORECASE)
    compiled = time.perf_counter()
    spans = [(m.start(), m.end()) for m in pattern.finditer(text)]
    searched = time.perf_counter()
    queue.put({"compile": compiled - started, "search": searched - compiled, "spans": spans})


def run_regex(names: list[str], text: str, budget: float) -> dict | None:
    queue: mp.Queue = mp.Queue()
    proc = mp.Process(target=_regex_worker, args=(names, text, queue))
    proc.start()
    try:
        return queue.get(timeout=budget)
    except Exception:  # noqa: BLE001 - queue.Empty: over budget
        return None
    finally:
        proc.kill()
        proc.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--text-bytes", type=int, default=1_000_000)
    parser.add_argument("--regex-budget", type=float, default=120.0, help="seconds per regex run (compile + search)")
    parser.add_argument("--repeats", type=int, default=3, help="searches per matcher (the best is reported)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()

    rows, records = [], []
    for n in args.sizes:
        names = pseudo_names(n, random_state=n)
        text = make_text(names, args.text_bytes, random_state=n)
        mb = len(text.encode()) / 1e6
        t0 = time.perf_counter()
        matcher = EntityMatcher.from_pairs((f"C{i}", name) for i, name in enumerate(names))
        matcher.find("")  # the automaton is finished on first use: count it in the build
        build = time.perf_counter() - t0
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "dict.pkl"
            matcher.save(path)
            t0 = time.perf_counter()
            matcher = EntityMatcher.load(path)
            load = time.perf_counter() - t0
        search = min(_timed(matcher.find, text) for _ in range(args.repeats))
        mentions = matcher.find(text)
        ac_spans = sorted({(m.start, m.end) for m in mentions})
        regex = run_regex(names, text, args.regex_budget)
        if regex is None:
            regex_cells = [f"> {args.regex_budget:.0f} s (stopped)", "-", "-", "-"]
            agree = "-"
        else:
            agree = "yes" if sorted(regex["spans"]) == ac_spans else f"no ({len(regex['spans'])} vs {len(ac_spans)})"
            regex_cells = [
                f"{regex['compile']:.2f} s",
                f"{regex['search']:.3f} s",
                f"{mb / regex['search']:.2f} MB/s",
                f"{regex['search'] / search:.1f}x",
            ]
        rows.append(
            [
                f"{n:,}",
                f"{len(mentions):,}",
                f"{build:.2f} s",
                f"{load:.2f} s",
                f"{search:.3f} s",
                f"{mb / search:.2f} MB/s",
                *regex_cells,
                agree,
            ]
        )
        records.append(
            {
                "names": n,
                "mentions": len(mentions),
                "build_s": build,
                "load_s": load,
                "search_s": search,
                "regex": None if regex is None else {k: regex[k] for k in ("compile", "search")},
            }
        )
        print(f"done: {n} names", file=sys.stderr, flush=True)
    print(f"Entity recognition on {args.text_bytes / 1e6:.1f} MB of text (best of {args.repeats} searches)\n")
    print_table(
        [
            "names",
            "mentions",
            "AC build",
            "AC load",
            "AC search",
            "AC throughput",
            "regex compile",
            "regex search",
            "regex throughput",
            "AC speed-up (search)",
            "same spans",
        ],
        rows,
    )
    if args.json:
        args.json.write_text(json.dumps(records, indent=1))


def _timed(fn, *args) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
