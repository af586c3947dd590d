"""KG-augmented answers: any vector retriever plus :class:`KGPathRetriever`, one synthesis prompt.

The paths go to the synthesizer as ONE leading node, a clearly delimited "knowledge graph relationship paths"
section, followed by the retrieved passages. ``path_format="arrows"`` writes ``a -[R]-> b <-[S]- c`` and the
prompt tells the model how to read the arrows; ``"facts"`` writes ``a R b; c S b``, which small local models
turn into prose instead of copying the notation (figures: docs/benchmarks/index.md). Any standard LlamaIndex response
synthesizer works (compact, refine, tree_summarize, simple_summarize, ...). The response's ``metadata`` gains
``kg_entities`` (the mentions), ``kg_paths`` (the structured paths used) and ``usage``. ``node_postprocessors`` (or
``context_budget`` in ``from_defaults``) run on the passages only, with the paths' facts as a hint to a query-aware
compressor; the paths section is never compressed.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from llama_index.core import Settings
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.response.schema import RESPONSE_TYPE
from llama_index.core.bridge.pydantic import Field
from llama_index.core.llms import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.prompts import BasePromptTemplate, PromptTemplate
from llama_index.core.prompts.mixin import PromptMixinType
from llama_index.core.query_engine import CustomQueryEngine
from llama_index.core.response_synthesizers import BaseSynthesizer, ResponseMode, get_response_synthesizer
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from llama_index_kgplus.compression._apply import (
    arun_postprocessors,
    postprocessors_for,
    query_with_hints,
    run_postprocessors,
)
from llama_index_kgplus.kg._finder import KGPathResult
from llama_index_kgplus.kg._retriever import PATH_METADATA_KEYS, KGPathRetriever
from llama_index_kgplus.llm import AnswerUsage, attach_usage, metered

KG_SECTION_HEADER = "Knowledge graph relationship paths between entities of the query:"
KG_SECTION_FOOTER = "(end of knowledge graph paths)"

_HOW_TO_READ = (
    "It may start with relationship paths from a knowledge graph between entities named in the query: read "
    "'a -[R]-> b' as 'a R b' and 'a <-[R]- b' as 'b R a'. Passages from documents follow.\n"
)
_FACTS_FIRST = (
    "It may start with facts from a knowledge graph about entities named in the query, one relationship path per "
    "line. Passages from documents follow.\n"
)


def _qa_template(intro: str) -> PromptTemplate:
    return PromptTemplate(
        "Context information is below. " + intro + "---------------------\n"
        "{context_str}\n"
        "---------------------\n"
        "Given the context information and not prior knowledge, answer the query.\n"
        "Query: {query_str}\n"
        "Answer: "
    )


def _summary_template(intro: str) -> PromptTemplate:
    return PromptTemplate(
        "Context information from multiple sources is below. " + intro + "---------------------\n"
        "{context_str}\n"
        "---------------------\n"
        "Given the information from multiple sources and not prior knowledge, answer the query.\n"
        "Query: {query_str}\n"
        "Answer: "
    )


KG_TEXT_QA_TEMPLATE = _qa_template(_HOW_TO_READ)
#: The same for ``tree_summarize`` (its own template slot).
KG_SUMMARY_TEMPLATE = _summary_template(_HOW_TO_READ)
#: The two templates for ``path_format="facts"``.
KG_FACTS_TEXT_QA_TEMPLATE = _qa_template(_FACTS_FIRST)
KG_FACTS_SUMMARY_TEMPLATE = _summary_template(_FACTS_FIRST)

PathFormat = Literal["arrows", "facts"]


def kg_section_node(result: KGPathResult, path_format: PathFormat = "arrows") -> NodeWithScore | None:
    """The paths as one delimited context section (``None`` when there are no paths)."""
    if not result.paths:
        return None
    rendered = (p.text if path_format == "arrows" else p.facts for p in result.paths)
    lines = [KG_SECTION_HEADER, *(f"- {line}" for line in rendered), KG_SECTION_FOOTER]
    node = TextNode(
        id_="kg-paths-section",
        text="\n".join(lines),
        metadata={
            "source": "knowledge_graph",
            "kg_path": [p.to_dict() for p in result.paths],
            "kg_entity_ids": sorted({e.cid for e in result.entities}),
        },
        excluded_embed_metadata_keys=list(PATH_METADATA_KEYS),
        excluded_llm_metadata_keys=list(PATH_METADATA_KEYS),
    )
    return NodeWithScore(node=node, score=1.0)


class KGAugmentedQueryEngine(CustomQueryEngine):
    """Answers from retrieved passages plus the knowledge-graph paths between the question's entities.

    Example:

    ```python
    engine = KGAugmentedQueryEngine.from_defaults(
        retriever=index.as_retriever(similarity_top_k=3),
        kg_retriever=KGPathRetriever.from_defaults("ladybug:///tmp/kg.lbug", max_paths=10),
        llm=llm,
    )
    response = engine.query("How does aspirin relate to migraine?")
    response.metadata["kg_paths"]      # [{"nodes": ..., "relationships": ..., "length": 2, "text": ...}]
    ```
    """

    retriever: BaseRetriever | None = Field(description="Vector (or any) retriever for passages; None: KG only.")
    kg_retriever: KGPathRetriever = Field(description="Finds the paths between the question's entities.")
    response_synthesizer: BaseSynthesizer = Field(description="Any LlamaIndex response synthesizer.")
    llm: LLM | None = Field(
        default=None,
        description="The synthesizer's LLM; metered (from_defaults), it gives Response.metadata['usage'] its token "
        "figures.",
    )
    path_format: PathFormat = Field(
        default="arrows", description="How paths are written in the prompt: 'arrows' (a -[R]-> b) or 'facts' (a R b)."
    )
    node_postprocessors: list[BaseNodePostprocessor] = Field(
        default_factory=list, description="Run on the passages before synthesis (e.g. a ContextCompressor)."
    )

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this component under."""
        return "KGAugmentedQueryEngine"

    @classmethod
    def from_defaults(
        cls,
        kg_retriever: KGPathRetriever,
        retriever: BaseRetriever | None = None,
        *,
        llm: LLM | None = None,
        response_synthesizer: BaseSynthesizer | None = None,
        response_mode: ResponseMode | str = ResponseMode.COMPACT,
        text_qa_template: BasePromptTemplate | None = None,
        summary_template: BasePromptTemplate | None = None,
        path_format: PathFormat = "arrows",
        node_postprocessors: list[BaseNodePostprocessor] | None = None,
        context_budget: int | None = None,
        embed_model: Any | None = None,
        **synthesizer_kwargs: Any,
    ) -> KGAugmentedQueryEngine:
        """Build the synthesizer (``response_mode`` with the KG templates of ``path_format``) unless one is
        given; ``llm`` falls back to ``Settings.llm`` and is metered (with a ready ``response_synthesizer``, pass
        its LLM as ``llm`` for the usage figures). ``context_budget`` appends a
        :class:`~llama_index_kgplus.compression.ContextCompressor` (``embed_model``, else ``Settings``)."""
        llm = metered(llm or Settings.llm) if response_synthesizer is None else llm
        postprocessors = postprocessors_for(node_postprocessors, context_budget, embed_model=embed_model, llm=llm)
        if response_synthesizer is None:
            arrows = path_format == "arrows"
            response_synthesizer = get_response_synthesizer(
                llm=llm,
                response_mode=ResponseMode(response_mode),
                text_qa_template=text_qa_template or (KG_TEXT_QA_TEMPLATE if arrows else KG_FACTS_TEXT_QA_TEMPLATE),
                summary_template=summary_template or (KG_SUMMARY_TEMPLATE if arrows else KG_FACTS_SUMMARY_TEMPLATE),
                **synthesizer_kwargs,
            )
        return cls(
            retriever=retriever, kg_retriever=kg_retriever, response_synthesizer=response_synthesizer, llm=llm,
            path_format=path_format, node_postprocessors=postprocessors,
        )  # fmt: skip

    def _get_prompt_modules(self) -> PromptMixinType:
        return {"response_synthesizer": self.response_synthesizer}

    def _nodes(self, passages: list[NodeWithScore], kg: KGPathResult) -> list[NodeWithScore]:
        section = kg_section_node(kg, self.path_format)
        return ([section] if section is not None else []) + list(passages)

    @staticmethod
    def _annotate(response: RESPONSE_TYPE, kg: KGPathResult) -> RESPONSE_TYPE:
        metadata = dict(getattr(response, "metadata", None) or {})
        metadata["kg_entities"] = [e.to_dict() for e in kg.entities]
        metadata["kg_paths"] = [p.to_dict() for p in kg.paths]
        response.metadata = metadata
        return response

    @staticmethod
    def compression_query(query_str: str, kg: KGPathResult) -> QueryBundle:
        """The question, with the paths as plain facts for a query-aware postprocessor."""
        return query_with_hints(query_str, "; ".join(p.facts for p in kg.paths))

    def custom_query(self, query_str: str) -> RESPONSE_TYPE:
        """Answer ``query_str`` from the graph paths and the retrieved passages; the metadata holds the paths, the
        entities and the usage."""
        usage = AnswerUsage(self.llm)
        kg = self.kg_retriever.retrieve_paths(query_str)
        passages = self.retriever.retrieve(query_str) if self.retriever is not None else []
        passages = run_postprocessors(self.node_postprocessors, passages, self.compression_query(query_str, kg))
        response = self.response_synthesizer.synthesize(query_str, nodes=self._nodes(passages, kg))
        return attach_usage(self._annotate(response, kg), usage)

    async def acustom_query(self, query_str: str) -> RESPONSE_TYPE:
        """Async :meth:`custom_query` (paths and passages are retrieved concurrently)."""
        usage = AnswerUsage(self.llm)
        if self.retriever is not None:
            kg, passages = await asyncio.gather(
                self.kg_retriever.aretrieve_paths(query_str), self.retriever.aretrieve(query_str)
            )
        else:
            kg, passages = await self.kg_retriever.aretrieve_paths(query_str), []
        query = self.compression_query(query_str, kg)
        passages = await arun_postprocessors(self.node_postprocessors, passages, query)
        response = await self.response_synthesizer.asynthesize(query_str, nodes=self._nodes(passages, kg))
        return attach_usage(self._annotate(response, kg), usage)
