"""How the pack's query engines run their node postprocessors (the compressor among them)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle


def query_with_hints(question: str, *hints: str | None) -> QueryBundle:
    """The question, plus what the engine knows about it (a rewrite, glossary terms, KG facts) as extra
    embedding strings that a query-aware postprocessor also scores against."""
    extra = [h for h in dict.fromkeys(hints) if h and h.strip() and h != question]
    return QueryBundle(question, custom_embedding_strs=[question, *extra] if extra else None)


def postprocessors_for(
    node_postprocessors: Sequence[BaseNodePostprocessor] | None,
    context_budget: int | None,
    *,
    embed_model: Any | None = None,
    llm: Any | None = None,
) -> list[BaseNodePostprocessor]:
    """``node_postprocessors``, then a :class:`ContextCompressor` of ``context_budget`` tokens when one is given."""
    from llama_index_kgplus.compression._compressor import ContextCompressor

    chain = list(node_postprocessors or [])
    if context_budget is not None:
        chain.append(ContextCompressor.from_defaults(context_budget, embed_model=embed_model, llm=llm))
    return chain


def run_postprocessors(
    postprocessors: Sequence[BaseNodePostprocessor], nodes: list[NodeWithScore], query: QueryBundle
) -> list[NodeWithScore]:
    for postprocessor in postprocessors:
        nodes = postprocessor.postprocess_nodes(nodes, query_bundle=query)
    return nodes


async def arun_postprocessors(
    postprocessors: Sequence[BaseNodePostprocessor], nodes: list[NodeWithScore], query: QueryBundle
) -> list[NodeWithScore]:
    for postprocessor in postprocessors:
        nodes = await postprocessor.apostprocess_nodes(nodes, query_bundle=query)
    return nodes
