"""Context options of ``kgplus query`` and ``kgplus retrieve``: ``--compress``, ``--context-budget`` and (query)
``--stream``.

``--compress sentences`` keeps the sentences of the retrieved passages most similar to the question, within
``--context-budget`` tokens of the LLM's tokenizer (see :class:`~llama_index_kgplus.compression.ContextCompressor`);
each JSON source then carries ``compression`` (kept and total sentences, tokens before and after) and its ``text``
is what the LLM read. ``--compress none`` passes the passages whole.
"""

from __future__ import annotations

import argparse
from typing import Any

from llama_index_kgplus.cli import _args
from llama_index_kgplus.errors import InputDataError

COMPRESS_CHOICES = ("none", "sentences")
DEFAULT_COMPRESS = "sentences"


def add_options(parser: argparse.ArgumentParser, synthesize: bool, compress: str = DEFAULT_COMPRESS) -> None:
    from llama_index_kgplus.compression._compressor import DEFAULT_CONTEXT_BUDGET

    group = parser.add_argument_group("context compression")
    group.add_argument(
        "--compress", choices=COMPRESS_CHOICES, default=compress,
        help=f"keep the question's most relevant sentences of the passages (default {compress})",
    )  # fmt: skip
    group.add_argument(
        "--context-budget", type=_args.positive_int, default=DEFAULT_CONTEXT_BUDGET, metavar="TOKENS",
        help=f"with --compress sentences: tokens of passage text kept (default {DEFAULT_CONTEXT_BUDGET})",
    )  # fmt: skip
    if synthesize:
        group.add_argument("--stream", action="store_true", help="print the answer as it is generated (text output)")


def check(args: argparse.Namespace) -> None:
    """Refuse option combinations before any model loads."""
    if getattr(args, "stream", False) and (args.json or args.questions):
        raise InputDataError(
            "--stream prints the answer as text while it is generated; --json and --questions print one JSON "
            "record per answer when it is complete. Choose one."
        )


def postprocessors(args: argparse.Namespace, llm: Any | None, embed_model: Any | None = None) -> list[Any]:
    """The node postprocessors the options ask for (empty for ``--compress none``); the compressor embeds with
    ``embed_model``, by default the pack's local model (loaded only when needed)."""
    if args.compress == "none":
        return []
    from llama_index_kgplus.compression._apply import postprocessors_for
    from llama_index_kgplus.llm import embed_model_from_spec

    embed_model = embed_model or embed_model_from_spec()
    return postprocessors_for(None, args.context_budget, embed_model=embed_model, llm=llm)
