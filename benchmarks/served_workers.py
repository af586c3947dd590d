"""GraphRAG indexing through a served model with 1, 2 and 4 workers, against the same model in process.

The server is llama.cpp's OpenAI-compatible server (``llama-cpp-python[server]``) on 127.0.0.1, reached with the
spec ``openai-like:qwen@URL``; the in-process runs use ``llm_from_spec``. Both run the same GGUF model with
the same llama.cpp thread count. Corpus: ``--docs`` paragraphs of ``longdocs-squad`` cut to ``--chars``
characters (as ``graphrag_real_llm.py``). Each run indexes into a fresh store; calls and tokens are the server's
``usage`` counts (llama.cpp's own in process).

llama-cpp-python's server answers one request at a time (it has no parallel slots, unlike llama.cpp's C++
server or vLLM): extra workers can only overlap the HTTP round trips and the client-side work, which this
benchmark measures honestly.

    .venv/bin/python benchmarks/served_workers.py [--docs 4] [--chars 400] [--threads 2] [--workers 1,2,4]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from graphrag_incremental import DATA, paragraphs  # noqa: E402
from llama_index.core import Document  # noqa: E402

from llama_index_kgplus import _defaults  # noqa: E402
from llama_index_kgplus._testing import llama_cpp_server  # noqa: E402
from llama_index_kgplus.graphrag import (  # noqa: E402
    AsyncioExecutor,
    CommunityReportGenerator,
    GraphExtractor,
    GraphRAGIndex,
)
from llama_index_kgplus.llm import llm_from_spec  # noqa: E402
from llama_index_kgplus.llm._local import local_model_path  # noqa: E402


def run(llm, docs: list[Document], workers: int) -> dict:
    """Index ``docs`` into a fresh store with ``workers`` LLM tasks in flight; the figures of the build."""
    with tempfile.TemporaryDirectory(prefix="served-workers-") as store:
        index = GraphRAGIndex.from_defaults(
            store,
            llm=llm,
            executor=AsyncioExecutor(num_workers=workers),
            extractor=GraphExtractor(min_entities=1),
            reporter=CommunityReportGenerator(min_findings=5, max_findings=5, max_chars=150),
            show_progress=False,
        )
        with index:
            started = time.perf_counter()
            stats = index.build(docs).as_dict()
            stats["seconds"] = round(time.perf_counter() - started, 1)
            return stats


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llm", default=_defaults.FAST_LLM, help="packaged model name or .gguf path")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--docs", type=int, default=4)
    parser.add_argument("--chars", type=int, default=400)
    parser.add_argument("--threads", type=int, default=2, help="llama.cpp threads, in process and in the server")
    parser.add_argument("--workers", default="1,2,4", help="worker counts for the served runs")
    args = parser.parse_args()
    worker_counts = [int(w) for w in args.workers.split(",")]

    docs = [
        Document(id_=d.id_, text=d.text[: args.chars].rsplit(" ", 1)[0], metadata=d.metadata)
        for d in paragraphs(args.data)[: args.docs]
    ]
    model = local_model_path(args.llm)
    load_before = os.getloadavg()
    print(
        f"model {model.name}; {len(docs)} documents of <= {args.chars} characters; llama.cpp threads "
        f"{args.threads} (in process and server); load average before {load_before[0]:.1f} (2 cores)\n"
    )
    print(
        f"{'run':<26} {'LLM calls':>9} {'prompt tok':>10} {'compl. tok':>10} {'failed':>7} {'seconds':>8} {'ratio':>6}"
    )
    served_one: list[float] = []

    def row(name: str, r: dict) -> None:
        if name == "served, 1 worker(s)":
            served_one.append(r["seconds"])
        ratio = f"{r['seconds'] / served_one[0]:.2f}" if served_one and name.startswith("served") else ""
        failed = r["chunks_failed"] + r["reports_failed"]
        print(
            f"{name:<26} {r['llm_calls']:>9} {r['prompt_tokens']:>10} {r['completion_tokens']:>10} {failed:>7} "
            f"{r['seconds']:>8.1f} {ratio:>6}",
            flush=True,
        )

    local = llm_from_spec(args.llm, context_window=4096, n_threads=args.threads)
    for workers in (1, max(worker_counts)):
        row(f"in process, {workers} worker(s)", run(local, docs, workers))
    del local
    with (
        tempfile.TemporaryDirectory() as logs,
        llama_cpp_server(model, logs, alias="qwen", n_threads=args.threads) as url,
    ):
        for workers in worker_counts:
            llm = llm_from_spec(f"openai-like:qwen@{url}", context_window=4096)
            row(f"served, {workers} worker(s)", run(llm, docs, workers))
    print(f"\nload average after {os.getloadavg()[0]:.1f}")
    print("\nratio: seconds / seconds of the served run with 1 worker (goal of issue 19: <= 0.6 with 4 workers)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
