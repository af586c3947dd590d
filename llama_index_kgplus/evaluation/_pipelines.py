"""Named pipelines: configurations of this pack's query engines over one shared index.

- ``baseline``: top-k vector retrieval over the chunks, LlamaIndex's default synthesis.
- ``glossary``: :class:`GlossaryQueryEngine` (fused retrieval with the glossary-rewritten query; needs a glossary).
- ``kg`` / ``kg-facts``: :class:`KGAugmentedQueryEngine`, the baseline's passages plus the KG paths between the
  question's entities, written as arrows / as plain facts (needs a graph store with an imported KG).
- ``hierarchy`` / ``hierarchy-tree`` / ``hierarchy-evidence``: :class:`HierarchicalRetriever` collapsed / tree
  traversal / evidence (needs an index built with summary nodes, e.g. ``kgplus ingest --hierarchy semantic``).

With ``context_budget`` every pipeline compresses its retrieved passages to that many tokens before synthesis
(:class:`~llama_index_kgplus.compression.ContextCompressor`). When the index holds summary nodes, ``baseline``, ``glossary`` and ``kg`` retrieve chunks only (``level`` 0), so
every pipeline sees the same chunks. A factory takes a :class:`PipelineContext` and returns a LlamaIndex query
engine; register your own with :func:`register_pipeline` to compare it in ``kgplus eval``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from llama_index.core import VectorStoreIndex
from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.vector_stores import MetadataFilter, MetadataFilters

from llama_index_kgplus.errors import InputDataError


@dataclass
class PipelineContext:
    """What a pipeline factory builds its query engine from: the shared index, the models and the optional sources
    (glossary, knowledge graph store, the index folder for summary nodes, a context budget for compression).

    Example:

    ```python
    from llama_index_kgplus.evaluation import PipelineContext, build_pipelines

    ctx = PipelineContext(index=index, llm=llm, embed_model=embed_model, top_k=5, context_budget=1024)
    engines = build_pipelines(["baseline", "hierarchy-evidence"], ctx)
    ```
    """

    index: VectorStoreIndex
    llm: LLM
    embed_model: BaseEmbedding
    top_k: int = 5
    glossary_path: Path | None = None
    kg_store_uri: str | None = None
    index_dir: Path | None = None
    context_budget: int | None = None

    @property
    def hierarchical(self) -> bool:
        """Whether the index folder has summary nodes (a ``hierarchy.json`` manifest)."""
        from llama_index_kgplus.hierarchy._retriever import read_manifest

        return self.index_dir is not None and bool(read_manifest(self.index_dir))

    def chunk_retriever(self) -> BaseRetriever:
        """Top-k over the chunks (level 0) of the index."""
        if not self.hierarchical:
            return self.index.as_retriever(similarity_top_k=self.top_k)
        chunks_only = MetadataFilters(filters=[MetadataFilter(key="level", value=0)])
        return self.index.as_retriever(similarity_top_k=self.top_k, filters=chunks_only)

    def postprocessors(self) -> list[BaseNodePostprocessor]:
        """A ContextCompressor of ``context_budget`` tokens, or nothing."""
        from llama_index_kgplus.compression._apply import postprocessors_for

        return postprocessors_for(None, self.context_budget, embed_model=self.embed_model, llm=self.llm)


PipelineFactory = Callable[[PipelineContext], BaseQueryEngine]


def _baseline(ctx: PipelineContext) -> BaseQueryEngine:
    return RetrieverQueryEngine.from_args(ctx.chunk_retriever(), llm=ctx.llm, node_postprocessors=ctx.postprocessors())


def _glossary(ctx: PipelineContext) -> BaseQueryEngine:
    from llama_index_kgplus.glossary import GlossaryQueryEngine

    if ctx.glossary_path is None:
        raise InputDataError("The glossary pipeline needs --glossary FILE.")
    return GlossaryQueryEngine.from_defaults(
        ctx.glossary_path, retriever=ctx.chunk_retriever(), llm=ctx.llm, embed_model=ctx.embed_model,
        node_postprocessors=ctx.postprocessors(),
    )  # fmt: skip


def _kg(path_format: Literal["arrows", "facts"]) -> PipelineFactory:
    def factory(ctx: PipelineContext) -> BaseQueryEngine:
        from llama_index_kgplus.kg import KGAugmentedQueryEngine, KGPathRetriever

        kg_retriever = KGPathRetriever.from_defaults(ctx.kg_store_uri)
        return KGAugmentedQueryEngine.from_defaults(
            kg_retriever, ctx.chunk_retriever(), llm=ctx.llm, path_format=path_format,
            node_postprocessors=ctx.postprocessors(),
        )  # fmt: skip

    return factory


def _hierarchy(mode: str) -> PipelineFactory:
    def factory(ctx: PipelineContext) -> BaseQueryEngine:
        from llama_index_kgplus.hierarchy import HierarchicalRetriever
        from llama_index_kgplus.hierarchy._retriever import read_manifest

        if not ctx.hierarchical:
            raise InputDataError(
                "The hierarchy pipelines need an index with summary nodes: "
                "`kgplus ingest DOCS --index DIR --hierarchy semantic|raptor`, then `kgplus eval --index DIR`."
            )
        manifest = read_manifest(ctx.index_dir) if ctx.index_dir is not None else None
        retriever = HierarchicalRetriever.from_index(
            ctx.index, mode=mode, similarity_top_k=ctx.top_k, root_ids=(manifest or {}).get("root_ids")
        )
        return RetrieverQueryEngine.from_args(retriever, llm=ctx.llm, node_postprocessors=ctx.postprocessors())

    return factory


PIPELINES: dict[str, PipelineFactory] = {
    "baseline": _baseline,
    "glossary": _glossary,
    "kg": _kg("arrows"),
    "kg-facts": _kg("facts"),
    "hierarchy": _hierarchy("collapsed"),
    "hierarchy-tree": _hierarchy("tree"),
    "hierarchy-evidence": _hierarchy("evidence"),
}


def register_pipeline(name: str, factory: PipelineFactory) -> None:
    """Make ``factory`` (a :class:`PipelineContext` -> query engine callable) the pipeline called ``name``, for
    :func:`build_pipelines` and ``kgplus eval --pipelines``; a built-in name is replaced.

    :param name: the pipeline's name in reports.
    :param factory: builds the pipeline's query engine from a :class:`PipelineContext`.
    """
    PIPELINES[name] = factory


def build_pipelines(names: list[str], ctx: PipelineContext) -> dict[str, BaseQueryEngine]:
    """The query engine of each named pipeline (built-in or registered), built from ``ctx``, for :class:`EvalRunner`.

    :param names: pipeline names: ``baseline``, ``glossary``, ``kg``, ``kg-facts``, ``hierarchy``,
        ``hierarchy-tree``, ``hierarchy-evidence`` or one given to :func:`register_pipeline`.
    :param ctx: the index, models and sources the engines share.
    :raises InputDataError: for an unknown name (the message lists the known ones).
    """
    unknown = [n for n in names if n not in PIPELINES]
    if unknown:
        raise InputDataError(f"Unknown pipeline(s) {', '.join(unknown)}; choose from {', '.join(PIPELINES)}.")
    return {name: PIPELINES[name](ctx) for name in names}
