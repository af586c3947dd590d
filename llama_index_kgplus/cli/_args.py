"""Argument types and checks shared by the commands, so that a bad value fails in one line (exit 2) before any
model loads."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from llama_index_kgplus.errors import InputDataError

#: the options whose value is a model spec, and the kind of model (None: the environment's, else the default)
SPEC_OPTIONS = {"llm": "llm", "judge_llm": "llm", "embed_model": "embed_model"}
#: the options whose value is a graph store URI (``--store`` of the ``kg`` commands; GraphRAG's is a folder)
URI_OPTIONS = ("store", "kg_store", "entity_store")


class Commands:
    """What a command module adds its commands to: each command (a parser that takes arguments) gets the options
    every command takes (``parents``), and is listed in :attr:`parsers`."""

    def __init__(
        self, subparsers: Any, parents: list[argparse.ArgumentParser], parsers: list[argparse.ArgumentParser]
    ) -> None:
        self._subparsers, self._parents, self.parsers = subparsers, parents, parsers

    def add(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        """A command ``name`` (``kwargs`` of ``add_parser``: help, ...)."""
        parser: argparse.ArgumentParser = self._subparsers.add_parser(name, parents=self._parents, **kwargs)
        self.parsers.append(parser)
        return parser

    def group(self, name: str, dest: str, **kwargs: Any) -> Commands:
        """A command ``name`` made of subcommands (``kgplus kg import``), whose choice goes to ``dest``."""
        parser = self._subparsers.add_parser(name, **kwargs)
        return Commands(parser.add_subparsers(dest=dest, required=True), self._parents, self.parsers)


def _int(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None


def positive_int(value: str) -> int:
    number = _int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"takes a number of at least 1, not {value}")
    return number


def non_negative_int(value: str) -> int:
    number = _int(value)
    if number < 0:
        raise argparse.ArgumentTypeError(f"takes a number of at least 0, not {value}")
    return number


def fraction(value: str) -> float:
    """A number in [0, 1)."""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if not 0.0 <= number < 1.0:
        raise argparse.ArgumentTypeError(f"takes a number from 0 up to (not including) 1, not {value}")
    return number


def check_chunking(chunk_size: int, chunk_overlap: int) -> None:
    if chunk_overlap >= chunk_size:
        raise InputDataError(f"--chunk-overlap ({chunk_overlap}) must be smaller than --chunk-size ({chunk_size}).")


def check_output_dir(path: Path, option: str, marker: str, *markers: str) -> None:
    """``path`` can hold this command's output: a folder (or a path that can become one) that is writable and
    either empty (but for what a first run killed early leaves: its writer lock, staging, LanceDB and docstore folders
    and the record an ingest resumes from) or already
    holds ``marker`` or one of ``markers`` (output of an earlier run): never ``/`` or a folder of other files."""
    from llama_index_kgplus._indexing import STAGING_DIR
    from llama_index_kgplus._lancedb import TABLE_DIR
    from llama_index_kgplus._lock import LOCK_FILE
    from llama_index_kgplus._sqlitedoc import KV_DIR
    from llama_index_kgplus._streaming import READINGS_FILE, RESUME_FILE

    if path.exists() and not path.is_dir():
        raise InputDataError(f"{option} {path} is a file; give a folder.")
    if (
        path.is_dir()
        and not any((path / name).exists() for name in (marker, *markers))
        and any(
            p.name not in {LOCK_FILE, STAGING_DIR, TABLE_DIR, KV_DIR, RESUME_FILE, READINGS_FILE}
            for p in path.iterdir()
        )
    ):
        raise InputDataError(
            f"{option} {path} is a folder of other files (it has no {marker}); give a new or empty folder."
        )
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not os.access(existing, os.W_OK) or (existing.stat().st_mode & 0o222) == 0:
        raise InputDataError(f"{option} {path}: {existing} is not writable.")


def check_specs(args: argparse.Namespace) -> None:
    """Every model spec (given, or the environment's or default one the command would use) and every graph store
    URI of the command, parsed and checked: a bad one fails in one line before any model loads or file is read.
    ``--embed-model`` is read from ``$KGPLUS_EMBED_MODEL``, where :func:`~llama_index_kgplus.cli.main` puts it."""
    from llama_index_kgplus.graph_stores._uri import GraphStoreURI
    from llama_index_kgplus.llm import resolve_model_spec

    for dest, kind in SPEC_OPTIONS.items():
        if hasattr(args, dest):
            resolve_model_spec(None if dest == "embed_model" else getattr(args, dest), kind)  # type: ignore[arg-type]
    for dest in URI_OPTIONS:
        value = getattr(args, dest, None)
        if isinstance(value, str):
            GraphStoreURI.parse(value)
