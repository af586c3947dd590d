"""GraphRAG with the real local LLM: LLM calls, tokens and time of a full index, of an update that adds one
document, and of one global query.

Corpus: ``--docs`` paragraphs of ``longdocs-squad`` (round-robin over its 12 SQuAD articles, CC BY-SA 4.0),
each cut to ``--chars`` characters; the update adds the next paragraph. Token figures are llama.cpp's own
``usage`` counts. The baseline for the update is a full rebuild of the grown corpus, whose call count is exact
without running it: one extraction per chunk plus one report per reportable community (no retries).

The machine is shared: the load average is printed before and after, and times are only indicative.

    .venv/bin/python benchmarks/graphrag_real_llm.py [--llm qwen2.5-coder-0.5b] [--docs 6] [--chars 500]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from graphrag_incremental import DATA, paragraphs  # noqa: E402
from llama_index.core import Document  # noqa: E402

from llama_index_kgplus import _defaults  # noqa: E402
from llama_index_kgplus.graphrag import CommunityReportGenerator, GraphExtractor, GraphRAGIndex  # noqa: E402
from llama_index_kgplus.llm import llm_from_spec


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llm", default=_defaults.FAST_LLM)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--docs", type=int, default=6)
    parser.add_argument("--chars", type=int, default=500)
    parser.add_argument(
        "--min-entities", type=int, default=1, help="GraphExtractor.min_entities (1 for the 0.5B model)"
    )
    parser.add_argument("--max-findings", type=int, default=5, help="CommunityReportGenerator.max_findings (5 to 10)")
    parser.add_argument("--max-chars", type=int, default=150, help="CommunityReportGenerator.max_chars (40 to 300)")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="llama.cpp threads (1: on a shared machine two spin-waiting threads are far slower)",
    )
    parser.add_argument("--question", default="What are the main themes of these documents?")
    parser.add_argument("--store", type=Path, default=None, help="keep the store here (default: a temporary folder)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    docs = [
        Document(id_=d.id_, text=d.text[: args.chars].rsplit(" ", 1)[0], metadata=d.metadata)
        for d in paragraphs(args.data)[: args.docs + 1]
    ]
    base, added = docs[: args.docs], docs[args.docs]
    store = args.store or Path(tempfile.mkdtemp(prefix="graphrag-real-"))
    load_before = os.getloadavg()
    llm = llm_from_spec(args.llm, context_window=4096, n_threads=args.threads)
    index = GraphRAGIndex.from_defaults(
        store,
        llm=llm,
        extractor=GraphExtractor(min_entities=args.min_entities),
        reporter=CommunityReportGenerator(min_findings=5, max_findings=args.max_findings, max_chars=args.max_chars),
    )
    rows = {}
    with index:
        rows["full index"] = index.build(base).as_dict()
        rows["update (+1 doc)"] = index.update([*base, added]).as_dict()
        t = time.perf_counter()
        response = index.as_query_engine(response_type="multiple paragraphs", show_progress=True).query(args.question)
        q = response.metadata
        rows["global query"] = {
            "documents": len(base) + 1,
            "llm_calls": q["llm_calls"],
            "prompt_tokens": q["prompt_tokens"],
            "completion_tokens": q["completion_tokens"],
            "seconds": round(time.perf_counter() - t, 1),
            "reports_regenerated": "",
            "reports_total": q["reports_read"],
        }
    up = rows["update (+1 doc)"]
    rebuild_calls = up["chunks"] + up["reports_total"]
    load_after = os.getloadavg()

    print(
        f"\nmodel {args.llm}; {args.docs} documents of <= {args.chars} characters + 1 added; reports of 5-"
        f"{args.max_findings} findings, explanations <= {args.max_chars} characters; store {store}"
    )
    print(
        f"load average before {load_before[0]:.1f}, after {load_after[0]:.1f} (2 cores, shared); "
        f"llama.cpp threads: {args.threads}\n"
    )
    print(
        f"{'step':<22} {'docs':>5} {'LLM calls':>10} {'prompt tok':>11} {'compl. tok':>11} {'seconds':>8} {'reports':>14}"
    )
    for name, r in rows.items():
        reports = (
            f"{r['reports_regenerated']} of {r['reports_total']}"
            if name != "global query"
            else f"{r['reports_total']} read"
        )
        print(
            f"{name:<22} {r['documents']:>5} {r['llm_calls']:>10} {r['prompt_tokens']:>11} {r['completion_tokens']:>11} "
            f"{r['seconds']:>8.1f} {reports:>14}"
        )
    print(
        f"{'rebuild (computed)':<22} {up['documents']:>5} {rebuild_calls:>10} {'':>11} {'':>11} {'':>8} "
        f"{up['reports_total']} of {up['reports_total']}"
    )
    full = rows["full index"]
    print(
        f"\nupdate / full index: {up['llm_calls'] / max(1, full['llm_calls']):.2f} of the LLM calls, "
        f"{up['seconds'] / max(1e-9, full['seconds']):.2f} of the time; update / rebuild: "
        f"{up['llm_calls']}/{rebuild_calls} calls"
    )
    print(f"\nquestion: {args.question}\nanswer: {response.response.strip()[:800]}")
    print("cited documents:", [(d["doc_id"], d["match_frequency"]) for d in q["documents"]])
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {
                    "rows": rows,
                    "rebuild_calls": rebuild_calls,
                    "answer": response.response,
                    "load": [load_before, load_after],
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
