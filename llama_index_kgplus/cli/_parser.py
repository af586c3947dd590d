"""The ``kgplus`` argument parser, built from every command module's ``register(commands)``."""

from __future__ import annotations

import argparse
import importlib
from typing import NoReturn

from llama_index_kgplus import __version__
from llama_index_kgplus._redact import redact_text
from llama_index_kgplus.cli import _args

# Modules with a ``register(subparsers)`` function, in the order their commands appear in --help.
_COMMAND_MODULES = ("_setup", "_index", "_ask", "_eval", "_graphrag", "_kg", "_ui")


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``kgplus ingest: error: ... (see kgplus ingest --help)``, exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {redact_text(message)} (see `{self.prog} --help`)\n")


def _build() -> tuple[argparse.ArgumentParser, list[argparse.ArgumentParser]]:
    parser = _Parser(prog="kgplus", description="llama-index-kgplus: structure-aware RAG, offline.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an unexpected error")
    every_command = argparse.ArgumentParser(add_help=False)  # the options of every command
    every_command.add_argument(
        "--embed-model",
        default=None,
        metavar="SPEC",
        help="embedding model spec: local (default), multilingual-e5-small-q4 (stronger, slower), "
        "openai-like:MODEL@URL, ollama:MODEL[@URL] or bedrock:MODEL_ID; default $KGPLUS_EMBED_MODEL",
    )
    commands = _args.Commands(parser.add_subparsers(dest="command", required=True), [every_command], [])
    for name in _COMMAND_MODULES:
        importlib.import_module(f"llama_index_kgplus.cli.{name}").register(commands)
    return parser, commands.parsers


def build_parser() -> argparse.ArgumentParser:
    """The ``kgplus`` argument parser with every command's subparser."""
    return _build()[0]


def command_parsers() -> list[argparse.ArgumentParser]:
    """The parser of every command (``kgplus ingest``, ``kgplus kg import``, ...), in the order of ``--help``."""
    return _build()[1]
