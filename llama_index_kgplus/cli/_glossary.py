"""Glossary options of ``kgplus query`` and ``kgplus retrieve``: ``--glossary FILE`` and ``--mode``.

With ``--glossary`` the question goes through :class:`~llama_index_kgplus.glossary.GlossaryQueryEngine` over the
command's retriever: the JSON record then carries the guarded ``rewritten_query``, the selected ``glossary_terms``,
and ``fallback_reason`` (null when the rewrite was used); ``retrieve`` skips synthesis but still rewrites.
Without ``--glossary`` the commands behave as before.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any


def add_options(parser: argparse.ArgumentParser, with_llm: bool) -> None:
    """The glossary options; ``with_llm``: also ``--llm`` (the rewrite needs an LLM; a command that answers has
    its own option already)."""
    from llama_index_kgplus.glossary._engine import DEFAULT_MODE, RETRIEVAL_MODES

    group = parser.add_argument_group("glossary query rewriting")
    group.add_argument(
        "--glossary",
        default=None,
        metavar="FILE",
        type=_glossary_file,
        help="glossary .json or .csv: rewrite queries with it (validated before any model loads)",
    )
    group.add_argument(
        "--mode",
        choices=RETRIEVAL_MODES,
        default=DEFAULT_MODE,
        help=f"with --glossary: retrieve with the rewritten, the original or both fused queries "
        f"(default {DEFAULT_MODE})",
    )
    if with_llm:
        group.add_argument(
            "--llm",
            default=None,
            help="model spec (name, .gguf, openai-like:M@URL, ollama:M, bedrock:ID); default $KGPLUS_LLM",
        )


def _glossary_file(path: str) -> Any:
    from llama_index_kgplus.errors import InputDataError
    from llama_index_kgplus.glossary import Glossary

    try:
        return Glossary.load(path)
    except InputDataError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def make_engine(
    args: argparse.Namespace, sources: Any, retriever: Any, llm: Any | None, postprocessors: list[Any]
) -> Any | None:
    """The glossary engine over ``retriever`` (streaming), or None without ``--glossary``."""
    if getattr(args, "glossary", None) is None:
        return None
    from llama_index_kgplus.glossary import GlossaryQueryEngine

    if llm is None:
        llm = sources.get_llm() if args.mode != "original" else _no_llm()
    return GlossaryQueryEngine.from_defaults(
        args.glossary, retriever=retriever, llm=llm, embed_model=sources.get_embed_model(), mode=args.mode,
        node_postprocessors=postprocessors, streaming=True,
    )  # fmt: skip


def _no_llm() -> Any:
    from llama_index.core.llms import MockLLM

    return MockLLM()  # retrieve --mode original: the rewrite step selects terms only and never calls an LLM


def run(
    engine: Any,
    question: str,
    answer: Callable[[Any], dict[str, Any]] | None,
    source_record: Callable[[Any], dict[str, Any]],
) -> dict[str, Any]:
    """One question through the engine, as the command's JSON record (``answer`` reads a response; None: no
    synthesis)."""
    if answer is not None:
        response = engine.query(question)
        record: dict[str, Any] = answer(response)
        meta, nodes = response.metadata, response.source_nodes
    else:
        retrieval = engine.rewrite_and_retrieve(question)
        meta, nodes, record = retrieval.to_metadata(), engine.postprocess(retrieval), {}
    record.update(
        original_query=meta["original_query"],
        rewritten_query=meta["rewritten_query"],
        glossary_terms=meta["glossary_terms"],
        fallback_reason=meta["fallback_reason"],
        retrieval_mode=meta["retrieval_mode"],
        sources=[source_record(h) for h in nodes],
    )
    if "usage" in meta:
        record["usage"] = meta["usage"]
    return record
