"""The ``kgplus`` command. Each capability registers its subcommands from its own module in this package."""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Iterator, Sequence

from llama_index_kgplus._deprecation import deprecated_names
from llama_index_kgplus._redact import redact_text
from llama_index_kgplus.cli import _args, _parser
from llama_index_kgplus.errors import KGPlusError


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


def _disk_full(exc: BaseException) -> str | None:
    """What to say when ``exc`` (or an error it came from) is a full disk or quota, else None."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        full = isinstance(cause, OSError) and cause.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))
        if full or "disk is full" in str(cause) or "No space left on device" in str(cause):
            where = f" writing {cause.filename}" if isinstance(cause, OSError) and cause.filename else ""
            return (
                f"the disk is full{where}: free some space and re-run the command (files are replaced whole, so "
                "what was there before is still there)."
            )
        cause = cause.__cause__ or cause.__context__
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command: 0 on success, 2 with one line for bad input or set-up, 1 with one line (and a hint to
    re-run with ``--debug``, accepted anywhere on the line) for anything unexpected."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    args = _parser.build_parser().parse_args(["--debug", *(a for a in argv if a != "--debug")] if debug else argv)
    from llama_index_kgplus._defaults import EMBED_MODEL_ENV

    try:
        with _env(EMBED_MODEL_ENV, getattr(args, "embed_model", None)):  # every command reads the default from it
            _args.check_specs(args)  # every model spec and store URI, before anything loads
            return int(args.func(args))
    except KGPlusError as exc:
        print(f"kgplus: error: {redact_text(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kgplus: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if debug:
            raise
        from llama_index_kgplus.llm._specs import describe_server_error

        served = describe_server_error(exc) or _disk_full(exc)
        if served is not None:
            print(f"kgplus: error: {served}", file=sys.stderr)
            return 2
        text = redact_text(exc).strip()
        detail = text.splitlines()[0] if text else ""
        print(f"kgplus: unexpected error: {type(exc).__name__}{': ' + detail if detail else ''} "
              "(re-run with --debug for the traceback)", file=sys.stderr)  # fmt: skip
        return 1


__all__ = ["main"]

# Names that left the public API: importable for one more release, with a DeprecationWarning.
__getattr__ = deprecated_names(
    __name__,
    {
        "build_parser": "llama_index_kgplus.cli._parser:build_parser",
        "command_parsers": "llama_index_kgplus.cli._parser:command_parsers",
    },
)
