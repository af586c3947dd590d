"""The ``kgplus`` command. Each capability registers its subcommands from its own module in this package."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Iterator, Sequence
from typing import NoReturn

from llama_index_kgplus import __version__
from llama_index_kgplus.cli import _args
from llama_index_kgplus.errors import KGPlusError

# Modules with a ``register(subparsers)`` function, in the order their commands appear in --help.
_COMMAND_MODULES = ("_setup", "_index", "_ask", "_eval", "_graphrag", "_kg", "_ui")


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``kgplus ingest: error: ... (see kgplus ingest --help)``, exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def _build() -> tuple[argparse.ArgumentParser, list[argparse.ArgumentParser]]:
    parser = _Parser(prog="kgplus", description="llama-index-kgplus: structure-aware RAG, offline.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an unexpected error")
    every_command = argparse.ArgumentParser(add_help=False)  # the options of every command
    every_command.add_argument(
        "--embed-model",
        default=None,
        metavar="SPEC",
        help="embedding model spec: local (default), openai-like:MODEL@URL, ollama:MODEL[@URL] or "
        "bedrock:MODEL_ID; default $KGPLUS_EMBED_MODEL",
    )
    commands = _args.Commands(parser.add_subparsers(dest="command", required=True), [every_command], [])
    for name in _COMMAND_MODULES:
        importlib.import_module(f"{__name__}.{name}").register(commands)
    return parser, commands.parsers


def build_parser() -> argparse.ArgumentParser:
    """The ``kgplus`` argument parser with every command's subparser."""
    return _build()[0]


def command_parsers() -> list[argparse.ArgumentParser]:
    """The parser of every command (``kgplus ingest``, ``kgplus kg import``, ...), in the order of ``--help``."""
    return _build()[1]


@contextlib.contextmanager
def _env(name: str, value: str | None) -> Iterator[None]:
    """``$name`` set to ``value`` for one command (unchanged when ``value`` is None)."""
    old = os.environ.get(name)
    if value is not None:
        os.environ[name] = value
    try:
        yield
    finally:
        if value is not None:
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command: 0 on success, 2 with one line for bad input or set-up, 1 with one line (and a hint to
    re-run with ``--debug``, accepted anywhere on the line) for anything unexpected."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    args = build_parser().parse_args(["--debug", *(a for a in argv if a != "--debug")] if debug else argv)
    from llama_index_kgplus.defaults import EMBED_MODEL_ENV

    try:
        with _env(EMBED_MODEL_ENV, getattr(args, "embed_model", None)):  # every command reads the default from it
            return int(args.func(args))
    except KGPlusError as exc:
        print(f"kgplus: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kgplus: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if debug:
            raise
        from llama_index_kgplus.llm import describe_server_error

        served = describe_server_error(exc)
        if served is not None:
            print(f"kgplus: error: {served}", file=sys.stderr)
            return 2
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        print(f"kgplus: unexpected error: {type(exc).__name__}{': ' + detail if detail else ''} "
              "(re-run with --debug for the traceback)", file=sys.stderr)  # fmt: skip
        return 1


__all__ = ["build_parser", "command_parsers", "main"]
