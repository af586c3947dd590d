"""Named pipelines: configurations of this pack's query engines over one shared index.

A pipeline factory takes a :class:`PipelineContext` and returns a LlamaIndex query engine. Register your own
with :func:`register_pipeline` to compare it in ``kgplus eval``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from llama_index.core import VectorStoreIndex
from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import LLM
from llama_index.core.query_engine import RetrieverQueryEngine

from llama_index_kgplus.errors import InputDataError


@dataclass
class PipelineContext:
    index: VectorStoreIndex
    llm: LLM
    embed_model: BaseEmbedding
    top_k: int = 5
    glossary_path: Path | None = None
    kg_store_uri: str | None = None


PipelineFactory = Callable[[PipelineContext], BaseQueryEngine]


def _baseline(ctx: PipelineContext) -> BaseQueryEngine:
    """Plain top-k vector retrieval and LlamaIndex's default synthesis."""
    return RetrieverQueryEngine.from_args(ctx.index.as_retriever(similarity_top_k=ctx.top_k), llm=ctx.llm)


PIPELINES: dict[str, PipelineFactory] = {"baseline": _baseline}


def register_pipeline(name: str, factory: PipelineFactory) -> None:
    PIPELINES[name] = factory


def build_pipelines(names: list[str], ctx: PipelineContext) -> dict[str, BaseQueryEngine]:
    unknown = [n for n in names if n not in PIPELINES]
    if unknown:
        raise InputDataError(f"Unknown pipeline(s) {', '.join(unknown)}; choose from {', '.join(PIPELINES)}.")
    return {name: PIPELINES[name](ctx) for name in names}
