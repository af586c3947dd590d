"""The ``kgplus`` command. Each capability registers its subcommands from its own module in this package."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from llama_index_kgplus import __version__
from llama_index_kgplus.errors import KGPlusError

# Modules with a ``register(subparsers)`` function, in the order their commands appear in --help.
_COMMAND_MODULES = ("_setup", "_index", "_eval", "_graphrag", "_kg")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kgplus", description="llama-index-kgplus: structure-aware RAG, offline.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in _COMMAND_MODULES:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except KGPlusError as exc:
        print(f"kgplus: error: {exc}", file=sys.stderr)
        return 2


__all__ = ["build_parser", "main"]
