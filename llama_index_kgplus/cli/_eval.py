"""``kgplus eval``: compare pipelines on a dataset with RAGAS-style metrics; tables, per-question scores, plots."""

from __future__ import annotations

import argparse
from pathlib import Path

from llama_index_kgplus._paths import user_path
from llama_index_kgplus._redact import redact_url
from llama_index_kgplus.cli import _args, _compression


def _eval(args: argparse.Namespace) -> int:
    from llama_index.core import Settings

    from llama_index_kgplus import build_index, load_corpus, load_index
    from llama_index_kgplus._indexing import INGEST_FILE, require_index
    from llama_index_kgplus.errors import InputDataError
    from llama_index_kgplus.evaluation import EvalRunner, PipelineContext, build_pipelines, load_dataset, write_report
    from llama_index_kgplus.evaluation._report import markdown_table, summarize
    from llama_index_kgplus.llm import embed_model_from_spec, llm_from_spec

    names = [n.strip() for n in args.pipelines.split(",") if n.strip()]
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    samples = load_dataset(args.dataset)[: args.limit]
    if not args.corpus and not args.index:
        raise InputDataError("Give --corpus DOCS_PATH (ingested once) or an existing --index DIR.")
    if args.index:
        require_index(args.index)
    elif not Path(args.corpus).exists():
        raise InputDataError(f"Corpus {args.corpus} does not exist.")
    _args.check_output_dir(args.out, "--out", "cache")
    embed_model = embed_model_from_spec()
    llm = llm_from_spec(args.llm)
    judge = llm_from_spec(args.judge_llm) if args.judge_llm and args.judge_llm != args.llm else llm
    Settings.embed_model, Settings.llm = embed_model, llm

    index_dir = args.index or args.out / "index"
    if (index_dir / "docstore.json").is_file() or (index_dir / INGEST_FILE).is_file():
        index = load_index(index_dir, embed_model=embed_model)
    elif args.corpus:
        index = build_index(load_corpus(args.corpus), index_dir, embed_model=embed_model)
    else:
        raise InputDataError(f"{index_dir} holds no index and no --corpus was given to build one.")
    ctx = PipelineContext(
        index=index, llm=llm, embed_model=embed_model, top_k=args.top_k,
        glossary_path=args.glossary, kg_store_uri=args.kg_store, index_dir=index_dir,
        context_budget=args.context_budget if args.compress == "sentences" else None,
    )  # fmt: skip
    settings = {
        "llm": _model_name(llm),
        "judge_llm": _model_name(judge),
        "embed_model": embed_model.model_name,
        "top_k": args.top_k,
        "index": str(index_dir.resolve()),
        "glossary": str(args.glossary.resolve()) if args.glossary else None,
        "kg_store": redact_url(args.kg_store) if args.kg_store else None,
        "context_budget": ctx.context_budget or 0,  # 0: no compression (None would match any earlier run)
    }
    runner = EvalRunner(
        samples, build_pipelines(names, ctx), args.out, metrics=metrics, llm=judge, embed_model=embed_model,
        settings=settings, num_workers=args.workers,
    )  # fmt: skip
    records = runner.run()
    paths = write_report(records, names, args.out)
    print(markdown_table(summarize(records), names))
    print("\n" + "\n".join(f"{key}: {path}" for key, path in paths.items()))
    return 0


def _model_name(llm) -> str:
    """The GGUF file name of a local model; ``MODEL@URL`` of a served one (cached answers are keyed by it)."""
    inner = getattr(llm, "inner", llm)
    if getattr(inner, "model_path", None):
        return Path(inner.model_path).name
    server = getattr(inner, "api_base", None) or getattr(inner, "base_url", None)
    return f"{llm.metadata.model_name}@{redact_url(server)}" if server else Path(str(llm.metadata.model_name)).name


def register(commands: _args.Commands) -> None:
    from llama_index_kgplus.evaluation._runner import DEFAULT_METRICS

    cmd = commands.add("eval", help="compare pipelines on a dataset with RAGAS-style metrics")
    cmd.add_argument(
        "--dataset", required=True, type=user_path, help='JSONL: "question" and "ground_truth" and/or "gold_ids"'
    )
    cmd.add_argument("--corpus", type=user_path, help="DOCS_PATH to ingest once (folder or JSONL corpus)")
    cmd.add_argument("--index", type=user_path, help="reuse an existing index folder instead of ingesting")
    cmd.add_argument("--glossary", type=user_path, help="glossary.json for the glossary pipeline")
    cmd.add_argument("--kg-store", help="graph store URI for the kg pipeline")
    cmd.add_argument("--pipelines", required=True, help="comma-separated pipeline names, e.g. baseline,glossary")
    cmd.add_argument("--metrics", default=",".join(DEFAULT_METRICS), help="comma-separated metric names")
    cmd.add_argument("--out", required=True, type=user_path, help="output folder (tables, plots, cache)")
    cmd.add_argument("--top-k", type=_args.positive_int, default=5, help="retrieved nodes per question (default 5)")
    cmd.add_argument("--limit", type=_args.positive_int, default=None, help="only the first N questions")
    cmd.add_argument("--llm", default=None, help="model spec (answers, and judge by default); see `kgplus --help`")
    cmd.add_argument("--judge-llm", default=None, help="another model spec for the metrics' judge")
    cmd.add_argument(
        "--workers",
        type=_args.positive_int,
        default=1,
        help="questions answered and scored at once (default 1; more pays off with a served model)",
    )
    _compression.add_options(cmd, synthesize=False, compress="none")  # cached answers of earlier runs are uncompressed
    cmd.set_defaults(func=_eval)
