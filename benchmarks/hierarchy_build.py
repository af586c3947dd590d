"""Build time, LLM calls and prompt tokens of hierarchical summaries: llama-index-packs-raptor 0.4.2
(RaptorPack) against this pack's RAPTOR and semantic builders, on the same corpus and models.

Corpus: the first 3 articles of longdocs-squad, SentenceSplitter(256, 20). Models: all-MiniLM-L6-v2 and
Qwen2.5-Coder-0.5B (llama.cpp, greedy, the defaults of ``llm_from_spec``). Calls and tokens come from
llama.cpp's own usage figures through a wrapping LLM (``CountingLLM``). Each system runs in a fresh process
(so each pays its own model loading and, where it uses UMAP, numba's first-call compilation); the build time
is measured from the documents to the finished nodes (chunking, embedding, clustering, summaries).

RaptorPack is installed only in a separate venv that sees the project's packages (it pins nothing we need,
and it imports ``llama_index.core.llama_pack``, removed from llama-index-core 0.14; this script registers
that 14-line module when it is missing)::

    python -m venv /tmp/raptorpack-venv
    .venv/bin/python -c "import site; print(f'import site; site.addsitedir({site.getsitepackages()[0]!r})')" \
        > /tmp/raptorpack-venv/lib/python3.11/site-packages/kgplus_main.pth
    /tmp/raptorpack-venv/bin/pip install --no-deps llama-index-packs-raptor==0.4.2
    .venv/bin/python benchmarks/hierarchy_build.py --raptorpack-python /tmp/raptorpack-venv/bin/python

``--variant before`` times the code from before issue 18 itself, with its own builder defaults, in the same way
(the package comes from ``PYTHONPATH``; the script refuses to run this variant on the current package, and
records which package ran)::

    git worktree add /tmp/before a759787
    PYTHONPATH=/tmp/before .venv/bin/python benchmarks/hierarchy_build.py --variant before --articles heldout \
        --llm qwen2.5-coder-1.5b --systems kgplus-semantic,kgplus-raptor

``--system NAME`` runs one system in this process and prints its figures as JSON. The built nodes go to
``benchmarks/results/hierarchy/<system>.jsonl`` for ``hierarchy_retrieval.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from hierarchy_common import (  # noqa: E402
    CHUNK_OVERLAP,
    CHUNK_SIZE,
    OUT_DIR,
    CountingLLM,
    copy_ratio,
    load_articles,
    results_dir,
    save_nodes,
)

SYSTEMS = ("raptorpack", "kgplus-raptor", "kgplus-raptor-pca", "kgplus-semantic")


def _register_llama_pack() -> None:
    """llama-index-core 0.14.21 removed ``llama_index.core.llama_pack``; RaptorPack still imports it."""
    try:
        import llama_index.core.llama_pack  # noqa: F401

        return
    except ImportError:
        pass
    from abc import abstractmethod
    from typing import Any

    class BaseLlamaPack:
        @abstractmethod
        def get_modules(self) -> dict[str, Any]: ...

        @abstractmethod
        def run(self, *args: Any, **kwargs: Any) -> Any: ...

    base = types.ModuleType("llama_index.core.llama_pack.base")
    base.BaseLlamaPack = BaseLlamaPack
    package = types.ModuleType("llama_index.core.llama_pack")
    package.BaseLlamaPack = BaseLlamaPack
    package.base = base
    package.__path__ = []
    sys.modules["llama_index.core.llama_pack"] = package
    sys.modules["llama_index.core.llama_pack.base"] = base


def file_tag(variant: str | None, cluster_size: int) -> str:
    """The suffix of a build's files: ``-legacy``, ``-before``, ``-k8``, ``-legacy-k8`` or nothing."""
    return "".join(f"-{part}" for part in (variant, f"k{cluster_size}" if cluster_size else "") if part)


def run_system(
    name: str, smoke: bool = False, articles: str = "dev", llm_name: str = "", variant: str = "", cluster_size: int = 0
) -> dict:
    from llama_index.core.ingestion import IngestionPipeline
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.core.schema import NodeRelationship

    from llama_index_kgplus import _defaults
    from llama_index_kgplus.llm import embed_model_from_spec, llm_from_spec

    package = Path(_defaults.__file__).resolve().parent
    if (variant == "before") == (package.parent == Path(__file__).resolve().parents[1]):
        raise SystemExit(
            f"--variant before needs an older checkout on PYTHONPATH, the other variants this one's; imported: {package}"
        )
    embed_model = embed_model_from_spec()
    legacy, extractive = variant == "legacy", variant == "extractive"
    llm = None if extractive else CountingLLM(llm_from_spec(llm_name or _defaults.FAST_LLM, max_new_tokens=256))
    embed_model.get_text_embedding("warm up")  # model loading is not part of the build
    docs = load_articles(articles)
    if smoke:  # a quick check of the script itself: one short document
        docs = docs[:1]
        docs[0].set_content(docs[0].text[:3000])
    out_dir = OUT_DIR.with_name("hierarchy-smoke") if smoke else results_dir(articles)
    splitter = SentenceSplitter(chunk_size=CHUNK_SIZE, chunk_overlap=CHUNK_OVERLAP)

    start = time.perf_counter()
    if name == "raptorpack":
        _register_llama_pack()
        from llama_index.packs.raptor import RaptorPack

        pack = RaptorPack(docs, llm=llm, embed_model=embed_model, transformations=[splitter], verbose=False)
        build_s = time.perf_counter() - start
        index = pack.retriever.index
        nodes = list(index.docstore.docs.values())
        for node in nodes:  # the docstore copies have no embedding; the vector store keeps them
            node.embedding = index.vector_store.get(node.node_id)
        summaries = [n for n in nodes if "level" in n.metadata]
        chunks = [n for n in nodes if "level" not in n.metadata]
        by_parent: dict[str, list] = {}
        for node in nodes:
            if "parent_id" in node.metadata:
                by_parent.setdefault(node.metadata["parent_id"], []).append(node)
        children = {s.node_id: by_parent.get(s.node_id, []) for s in summaries}
        levels = sorted({int(s.metadata["level"]) + 1 for s in summaries})  # the pack counts from 0
        for s in summaries:  # store them the way this pack does, for the retrieval benchmark
            s.metadata["level"] = int(s.metadata["level"]) + 1
        for c in chunks:
            c.metadata["level"] = 0
        extra = {"tree_depth": 3}
    else:
        from llama_index_kgplus import RaptorSummaryNodeBuilder, SemanticChunkingSummaryNodeBuilder

        # legacy: the summaries before issue 18 (3 sentences per child, 100 words, no extractive fallback, no
        # bound on replies);
        # extractive: no LLM, 5 central sentences per cluster (for quick experiments, not a cost figure)
        settings: dict = {"max_sentences": 3, "max_words": 100} if legacy else {}
        if extractive:
            from llama_index_kgplus.summarizers import ExtractiveSummarizer

            settings = {"summarizer": ExtractiveSummarizer(max_sentences=5)}
        if name == "kgplus-semantic":
            settings.update({"cluster_size": cluster_size} if cluster_size else {})
            builder = SemanticChunkingSummaryNodeBuilder.from_defaults(llm=llm, embed_model=embed_model, **settings)
        else:
            reducer = "pca" if name.endswith("-pca") else "umap"
            builder = RaptorSummaryNodeBuilder.from_defaults(
                llm=llm, embed_model=embed_model, reducer=reducer, **settings
            )
        if legacy:  # and replies bounded only by the LLM's own max_new_tokens, as then
            builder.summarizer.extractive_fallback = False
            builder.summarizer.abstractive.max_tokens = 256
        builder.show_progress = False
        nodes = IngestionPipeline(transformations=[splitter, embed_model, builder]).run(documents=docs)
        build_s = time.perf_counter() - start
        by_id = {n.node_id: n for n in nodes}
        summaries = [n for n in nodes if n.metadata.get("level", 0) > 0]
        chunks = [n for n in nodes if n.metadata.get("level", 0) == 0]
        children = {s.node_id: [by_id[c.node_id] for c in s.relationships[NodeRelationship.CHILD]] for s in summaries}
        levels = sorted({int(s.metadata["level"]) for s in summaries})
        extra = {"n_clusters": builder.n_clusters_, "failed_clusters": len(builder.failed_clusters_)}
        if hasattr(builder, "reducers_"):
            extra["reducers"] = builder.reducers_
        if variant != "before":  # the code before issue 18 has no usage_ or level_stats_
            extra["summarizer_usage"] = builder.usage_
            extra["level_stats"] = builder.level_stats_

    ratios = [copy_ratio(s.get_content(), [c.get_content() for c in children[s.node_id]]) for s in summaries]
    tag = file_tag(variant, cluster_size)
    save_nodes(out_dir / f"{name}{tag}.jsonl", nodes)
    stats = llm.stats if llm else {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "seconds": 0.0}
    if stats["calls"] and not stats["seconds"]:  # bounded replies bypass CountingLLM.complete: time the levels
        stats["seconds"] = sum(level["seconds"] for level in extra.get("level_stats", []))
    return {
        "system": name + (f" ({tag[1:]})" if tag else ""),
        "articles": [d.id_ for d in docs],
        "package": str(package),  # which code ran
        "llm": llm.metadata.model_name if llm else None,
        "build_s": round(build_s, 1),
        "llm_s": round(stats["seconds"], 1),
        "other_s": round(build_s - stats["seconds"], 1),
        "llm_calls": stats["calls"],
        "prompt_tokens": stats["prompt_tokens"],
        "completion_tokens": stats["completion_tokens"],
        "chunks": len(chunks),
        "summaries": len(summaries),
        "levels": levels,
        "single_child_summaries": sum(1 for s in summaries if len(children[s.node_id]) == 1),
        "copies": sum(1 for r in ratios if r >= 0.8),
        "max_copy_ratio": round(max(ratios, default=0.0), 2),
        "example": max(summaries, key=lambda s: s.metadata["level"]).get_content()[:300] if summaries else "",
        **extra,
    }


def table(results: list[dict]) -> str:
    base = next((r for r in results if r["system"] == "raptorpack"), None)
    head = (
        f"{'system':<18} {'build s':>8} {'LLM s':>7} {'other s':>8} {'calls':>6} {'prompt tok':>10} {'compl tok':>9} "
        f"{'chunks':>6} {'summaries':>9} {'levels':>7} {'1-child':>7} {'copies':>6} {'LLM tok/s':>9} {'time/RP':>7} "
        f"{'prompt/RP':>9}"
    )
    lines = [head, "-" * len(head)]  # LLM tok/s: (prompt + completion tokens) / LLM seconds, i.e. machine load
    for r in results:
        ratio_t = f"{r['build_s'] / base['build_s']:.2f}" if base else "-"
        ratio_p = f"{r['prompt_tokens'] / base['prompt_tokens']:.2f}" if base and base["prompt_tokens"] else "-"
        lines.append(
            f"{r['system']:<18} {r['build_s']:>8.1f} {r['llm_s']:>7.1f} {r['other_s']:>8.1f} {r['llm_calls']:>6} "
            f"{r['prompt_tokens']:>10} {r['completion_tokens']:>9} {r['chunks']:>6} {r['summaries']:>9} "
            f"{max(r['levels'], default=0):>7} {r['single_child_summaries']:>7} {r['copies']:>6} "
            f"{(r['prompt_tokens'] + r['completion_tokens']) / max(r['llm_s'], 1e-9):>9.1f} {ratio_t:>7} {ratio_p:>9}"
        )
    for r in results:
        for stat in r.get("level_stats", []):
            usage = stat["usage"]
            lines.append(
                f"  {r['system']} level {stat['level']}: {stat['clusters']} clusters, {stat['reused']} reused, "
                f"{stat['failed']} failed, {usage.get('calls', 0)} calls, {usage.get('prompt_tokens', 0)} prompt tok, "
                f"{usage.get('completion_tokens', 0)} compl tok, {usage.get('extractive_fallbacks', 0)} extractive "
                f"fallbacks, {stat['seconds']:.1f} s"
            )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--system", choices=SYSTEMS, help="run one system here and print its figures as JSON")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated systems to run (driver mode)")
    parser.add_argument(
        "--raptorpack-python", default=os.environ.get("RAPTORPACK_PYTHON", "/tmp/raptorpack-venv/bin/python")
    )
    parser.add_argument("--print-only", action="store_true", help="print the table of saved results (--results)")
    parser.add_argument("--results", type=Path, help="with --print-only: a build.json file (default: the last run's)")
    parser.add_argument(
        "--smoke", action="store_true", help="check the script on one short document (not a measurement)"
    )
    parser.add_argument("--articles", default="dev", help="dev (default), heldout, or comma-separated article ids")
    parser.add_argument("--llm", default="", help="model spec for the summaries (default: qwen2.5-coder-0.5b)")
    parser.add_argument(
        "--variant",
        choices=("legacy", "extractive", "before"),
        help="legacy: our builders with the summary settings from before issue 18; extractive: no LLM; before: the "
        "package on PYTHONPATH (the code before issue 18) with its builder defaults",
    )
    parser.add_argument(
        "--cluster-size", type=int, default=0, help="semantic builder: chunks per cluster (saved as variant kN)"
    )
    args = parser.parse_args()
    systems = [args.system] if args.system else args.systems.split(",")
    if args.cluster_size and (args.cluster_size < 2 or systems != ["kgplus-semantic"]):
        parser.error("--cluster-size N (N >= 2) is for the semantic builder: add --systems kgplus-semantic")
    out_dir = OUT_DIR.with_name("hierarchy-smoke") if args.smoke else results_dir(args.articles)
    tag = file_tag(args.variant, args.cluster_size)
    results_file = out_dir / f"build{tag}.json"
    if args.system:
        result = run_system(args.system, args.smoke, args.articles, args.llm, args.variant or "", args.cluster_size)
        print(json.dumps(result, ensure_ascii=False), flush=True)
        return 0
    if args.print_only:
        print(table(json.loads((args.results or results_file).read_text())))
        return 0
    out_dir.mkdir(parents=True, exist_ok=True)
    results = []
    for name in args.systems.split(","):
        python = args.raptorpack_python if name == "raptorpack" else sys.executable
        started = time.perf_counter()
        command = [python, __file__, "--system", name, "--articles", args.articles, "--llm", args.llm]
        command += ["--smoke"] if args.smoke else []
        command += ["--variant", args.variant] if args.variant else []
        command += ["--cluster-size", str(args.cluster_size)] if args.cluster_size else []
        proc = subprocess.run(command, capture_output=True, text=True)
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / f"{name}{tag}.log").write_text(proc.stdout + proc.stderr)
        if proc.returncode != 0:
            print(f"{name} failed (exit {proc.returncode}); see its log in {out_dir}", file=sys.stderr)
            continue
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        result["process_s"] = round(time.perf_counter() - started, 1)
        results.append(result)
        print(json.dumps(result, ensure_ascii=False), flush=True)
        results_file.write_text(json.dumps(results, indent=1, ensure_ascii=False))
    print()
    print(table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
