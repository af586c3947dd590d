"""The glossary query engine: rewrite with the glossary, retrieve, answer the original question.

Steps for each question: select the relevant glossary entries; rewrite the question with them (LLM), refuse a
drifting rewrite (fall back to the original, with ``fallback_reason``), let an optional review hook accept or edit
it; retrieve with the original query, the rewrite, or both fused by reciprocal rank (``mode``); synthesise from the
*original* question with the selected entries appended as a glossary that is "not part of the question".

``Response.metadata`` carries ``original_query``, ``rewritten_query``, ``glossary_terms``, ``fallback_reason``
(None when the rewrite was used), ``proposed_query`` (the LLM's rewrite even when refused), ``rewrite_similarity``,
``rewrite_edited``, ``retrieval_mode`` and ``usage`` (LLM calls, tokens, seconds; see
:class:`~llama_index_kgplus.llm.AnswerUsage`). ``node_postprocessors`` (or ``context_budget`` in ``from_defaults``)
run on the retrieved nodes before synthesis, with the rewrite and the glossary terms as hints for a query-aware
compressor.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.response.schema import RESPONSE_TYPE
from llama_index.core.bridge.pydantic import Field
from llama_index.core.llms import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.prompts import BasePromptTemplate
from llama_index.core.prompts.mixin import PromptDictType, PromptMixinType
from llama_index.core.query_engine import CustomQueryEngine
from llama_index.core.response_synthesizers import BaseSynthesizer, ResponseMode, get_response_synthesizer
from llama_index.core.schema import NodeWithScore, QueryBundle, QueryType

from llama_index_kgplus._indexing import index_embed_model
from llama_index_kgplus.compression._apply import (
    arun_postprocessors,
    postprocessors_for,
    query_with_hints,
    run_postprocessors,
)
from llama_index_kgplus.glossary._fusion import DEFAULT_RRF_K, reciprocal_rank_fusion
from llama_index_kgplus.glossary._model import Glossary
from llama_index_kgplus.glossary._prompts import DEFAULT_GLOSSARY_CONTEXT_PROMPT
from llama_index_kgplus.glossary._rewrite import GlossaryQueryRewriter, QueryRewrite, ReviewHook
from llama_index_kgplus.llm import AnswerUsage, attach_usage, metered

GlossaryRetrievalMode = Literal["fused", "rewritten", "original"]
"""What :class:`GlossaryQueryEngine` retrieves with: ``fused`` (the original and the rewritten query, fused by
reciprocal rank), ``rewritten`` (the rewrite only) or ``original`` (the question as asked; the glossary only
informs synthesis)."""
RETRIEVAL_MODES: tuple[str, ...] = ("fused", "rewritten", "original")
DEFAULT_MODE: GlossaryRetrievalMode = "fused"


@dataclass
class GlossaryRetrieval:
    """What retrieval used and found: the rewrite record, the mode, and the ranked nodes."""

    rewrite: QueryRewrite
    mode: str
    nodes: list[NodeWithScore]

    def to_metadata(self) -> dict[str, Any]:
        return {**self.rewrite.to_metadata(), "retrieval_mode": self.mode}


class GlossaryQueryEngine(CustomQueryEngine):
    """Query engine that speaks the documents' terminology: glossary rewrite, guarded, fused retrieval.

    Example:

    ```python
    from llama_index_kgplus.glossary import Glossary, GlossaryQueryEngine

    engine = GlossaryQueryEngine.from_defaults(Glossary.load("glossary.json"), index=index, llm=llm)
    response = engine.query("Why can't I use a list as a dict key?")
    response.metadata["rewritten_query"], response.metadata["glossary_terms"]
    streaming = GlossaryQueryEngine.from_defaults(glossary, index=index, streaming=True)
    streaming.query("...").print_response_stream()
    ```
    """

    retriever: BaseRetriever = Field(description="Any LlamaIndex retriever (vector, hierarchical, KG, ...).")
    rewriter: GlossaryQueryRewriter = Field(description="Selects glossary terms, rewrites and guards the query.")
    response_synthesizer: BaseSynthesizer = Field(description="Answers from the retrieved nodes.")
    llm: LLM | None = Field(
        default=None,
        description="The LLM of the rewrite and the answer; metered (from_defaults), it gives Response.metadata"
        "['usage'] its token figures.",
    )
    mode: GlossaryRetrievalMode = Field(
        default=DEFAULT_MODE,
        description="Retrieve with the 'original' query, the 'rewritten' one, or both 'fused' by reciprocal rank.",
    )
    rrf_k: int = Field(default=DEFAULT_RRF_K, ge=0, description="Reciprocal rank fusion constant k.")
    fused_top_n: int | None = Field(
        default=None, description="Nodes kept after fusion (default: as many as one retrieval returns)."
    )
    glossary_in_synthesis: bool = Field(
        default=True, description="Append the selected glossary entries to the question for synthesis."
    )
    glossary_context_prompt: BasePromptTemplate = Field(
        default=DEFAULT_GLOSSARY_CONTEXT_PROMPT,
        description="How the glossary is appended to the original question ({query_str}, {glossary_str}).",
    )
    node_postprocessors: list[BaseNodePostprocessor] = Field(
        default_factory=list, description="Run on the retrieved nodes before synthesis (e.g. a ContextCompressor)."
    )

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this component under."""
        return "GlossaryQueryEngine"

    @classmethod
    def from_defaults(
        cls,
        glossary: Glossary | str | Path | None,
        *,
        retriever: BaseRetriever | None = None,
        index: Any | None = None,
        similarity_top_k: int = 5,
        llm: LLM | None = None,
        embed_model: BaseEmbedding | None = None,
        mode: GlossaryRetrievalMode = DEFAULT_MODE,
        streaming: bool = False,
        response_mode: ResponseMode = ResponseMode.COMPACT,
        review_hook: ReviewHook | None = None,
        glossary_top_k: int = 3,
        glossary_max_tokens: int = 600,
        whole_glossary: bool = False,
        max_words: int = 100,
        min_similarity: float = 0.5,
        rewriter: GlossaryQueryRewriter | None = None,
        node_postprocessors: list[BaseNodePostprocessor] | None = None,
        context_budget: int | None = None,
        **kwargs: Any,
    ) -> GlossaryQueryEngine:
        """Build the engine over a ``retriever`` or an ``index`` (``index.as_retriever(similarity_top_k=...)``).

        ``glossary`` is a :class:`Glossary` or a path to a JSON/CSV file. ``llm`` and ``embed_model`` fall back to
        the index's embedding model and to ``Settings``. ``whole_glossary=True`` shows every entry to the LLM
        (the original recipe, for comparison); ``min_similarity`` and ``max_words`` configure the drift guard.
        A ready ``rewriter`` replaces all the rewrite settings (and then ``glossary`` may be None).
        ``context_budget`` appends a :class:`~llama_index_kgplus.compression.ContextCompressor` of that many tokens
        to ``node_postprocessors``. The LLM is metered (``Response.metadata["usage"]``).
        """
        from llama_index.core import Settings

        if rewriter is None:
            if glossary is None:
                raise ValueError("Give a glossary (a Glossary or a file) or a ready rewriter.")
            if not isinstance(glossary, Glossary):
                glossary = Glossary.load(glossary)
        if retriever is None:
            if index is None:
                raise ValueError("Give a retriever or an index.")
            retriever = index.as_retriever(similarity_top_k=similarity_top_k)
        if mode not in RETRIEVAL_MODES:
            raise ValueError(f"mode must be one of {RETRIEVAL_MODES}, got {mode!r}")
        llm = metered(llm or Settings.llm)
        embed_model = embed_model or index_embed_model(index) or Settings.embed_model
        postprocessors = postprocessors_for(node_postprocessors, context_budget, embed_model=embed_model, llm=llm)
        if rewriter is None:
            assert isinstance(glossary, Glossary)  # loaded above
            rewriter = GlossaryQueryRewriter.from_defaults(
                glossary,
                llm=llm,
                embed_model=embed_model,
                top_k=glossary_top_k,
                max_tokens=glossary_max_tokens,
                whole_glossary=whole_glossary,
                max_words=max_words,
                min_similarity=min_similarity,
                review_hook=review_hook,
            )
        synthesizer = get_response_synthesizer(llm=llm, response_mode=response_mode, streaming=streaming)
        return cls(
            retriever=retriever, rewriter=rewriter, response_synthesizer=synthesizer, llm=llm, mode=mode,
            node_postprocessors=postprocessors, **kwargs,
        )  # fmt: skip

    # ------------------------------------------------------------------ prompts (PromptMixin)

    def _get_prompts(self) -> PromptDictType:
        return {"glossary_context_prompt": self.glossary_context_prompt}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        if "glossary_context_prompt" in prompts:
            self.glossary_context_prompt = prompts["glossary_context_prompt"]

    def _get_prompt_modules(self) -> PromptMixinType:
        return {"rewriter": self.rewriter, "response_synthesizer": self.response_synthesizer}

    # ------------------------------------------------------------------ retrieval

    def _query_str(self, query: QueryType) -> str:
        return query.query_str if isinstance(query, QueryBundle) else str(query)

    def fuse(self, original: list[NodeWithScore], rewritten: list[NodeWithScore]) -> list[NodeWithScore]:
        """Reciprocal rank fusion of the two rankings, cut to ``fused_top_n`` (default: the longer list's length)."""
        top_n = self.fused_top_n or max(len(original), len(rewritten))
        return reciprocal_rank_fusion([original, rewritten], k=self.rrf_k, top_n=top_n)

    def rewrite(self, query: QueryType) -> QueryRewrite:
        """The rewrite the engine would use (no LLM call in ``original`` mode: only the glossary selection)."""
        return self.rewriter.rewrite(self._query_str(query), use_llm=self.mode != "original")

    async def arewrite(self, query: QueryType) -> QueryRewrite:
        """Async :meth:`rewrite`."""
        return await self.rewriter.arewrite(self._query_str(query), use_llm=self.mode != "original")

    def retrieve_with(self, rewrite: QueryRewrite) -> GlossaryRetrieval:
        """Retrieve for an existing rewrite (e.g. one a user edited) in this engine's mode."""
        original = QueryBundle(rewrite.original_query)
        if self.mode == "original" or not rewrite.changed:
            nodes = self.retriever.retrieve(original)
        elif self.mode == "rewritten":
            nodes = self.retriever.retrieve(QueryBundle(rewrite.rewritten_query))
        else:
            nodes = self.fuse(self.retriever.retrieve(original), self.retriever.retrieve(rewrite.rewritten_query))
        return GlossaryRetrieval(rewrite, self.mode, nodes)

    async def aretrieve_with(self, rewrite: QueryRewrite) -> GlossaryRetrieval:
        """Async :meth:`retrieve_with` (in ``fused`` mode both retrievals run concurrently)."""
        original = QueryBundle(rewrite.original_query)
        if self.mode == "original" or not rewrite.changed:
            nodes = await self.retriever.aretrieve(original)
        elif self.mode == "rewritten":
            nodes = await self.retriever.aretrieve(QueryBundle(rewrite.rewritten_query))
        else:
            both = await asyncio.gather(
                self.retriever.aretrieve(original), self.retriever.aretrieve(QueryBundle(rewrite.rewritten_query))
            )
            nodes = self.fuse(*both)
        return GlossaryRetrieval(rewrite, self.mode, nodes)

    def rewrite_and_retrieve(self, query: QueryType) -> GlossaryRetrieval:
        """Rewrite and retrieve, without synthesis (what ``kgplus retrieve --glossary`` prints)."""
        return self.retrieve_with(self.rewrite(query))

    async def arewrite_and_retrieve(self, query: QueryType) -> GlossaryRetrieval:
        """Async :meth:`rewrite_and_retrieve`."""
        return await self.aretrieve_with(await self.arewrite(query))

    def retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """The nodes this engine retrieves for ``query_bundle`` (rewrite, then retrieve in the engine's mode)."""
        return self.rewrite_and_retrieve(query_bundle).nodes

    async def aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """Async :meth:`retrieve`."""
        return (await self.arewrite_and_retrieve(query_bundle)).nodes

    # ------------------------------------------------------------------ synthesis

    def synthesis_query(self, rewrite: QueryRewrite) -> str:
        """The original question, with the selected glossary entries appended (not part of the question)."""
        if not self.glossary_in_synthesis or not rewrite.selection.entries:
            return rewrite.original_query
        return self.glossary_context_prompt.format(
            query_str=rewrite.original_query, glossary_str=rewrite.selection.text
        )

    def compression_query(self, rewrite: QueryRewrite) -> QueryBundle:
        """The original question, with the rewrite and the selected terms as hints for the postprocessors."""
        return query_with_hints(rewrite.original_query, rewrite.rewritten_query, "; ".join(rewrite.glossary_terms))

    def postprocess(self, retrieval: GlossaryRetrieval) -> list[NodeWithScore]:
        """The retrieved nodes after ``node_postprocessors`` (what synthesis reads)."""
        return run_postprocessors(self.node_postprocessors, retrieval.nodes, self.compression_query(retrieval.rewrite))

    async def apostprocess(self, retrieval: GlossaryRetrieval) -> list[NodeWithScore]:
        """Async :meth:`postprocess`."""
        query = self.compression_query(retrieval.rewrite)
        return await arun_postprocessors(self.node_postprocessors, retrieval.nodes, query)

    def _finish(self, response: RESPONSE_TYPE, retrieval: GlossaryRetrieval, usage: AnswerUsage) -> RESPONSE_TYPE:
        response.metadata = {**(response.metadata or {}), **retrieval.to_metadata()}
        return attach_usage(response, usage)

    def synthesize_from(self, retrieval: GlossaryRetrieval, usage: AnswerUsage | None = None) -> RESPONSE_TYPE:
        """Answer from an existing retrieval (e.g. after showing its sources to a user)."""
        usage = usage or AnswerUsage(self.llm)
        nodes = self.postprocess(retrieval)
        response = self.response_synthesizer.synthesize(self.synthesis_query(retrieval.rewrite), nodes)
        return self._finish(response, retrieval, usage)

    async def asynthesize_from(self, retrieval: GlossaryRetrieval, usage: AnswerUsage | None = None) -> RESPONSE_TYPE:
        """Async :meth:`synthesize_from`."""
        usage = usage or AnswerUsage(self.llm)
        nodes = await self.apostprocess(retrieval)
        response = await self.response_synthesizer.asynthesize(self.synthesis_query(retrieval.rewrite), nodes)
        return self._finish(response, retrieval, usage)

    def custom_query(self, query_str: str) -> RESPONSE_TYPE:
        """Rewrite, retrieve and answer ``query_str``; the response's metadata holds the rewrite, the glossary terms
        and the usage."""
        usage = AnswerUsage(self.llm)
        return self.synthesize_from(self.rewrite_and_retrieve(query_str), usage)

    async def acustom_query(self, query_str: str) -> RESPONSE_TYPE:
        """Async :meth:`custom_query`."""
        usage = AnswerUsage(self.llm)
        return await self.asynthesize_from(await self.arewrite_and_retrieve(query_str), usage)
