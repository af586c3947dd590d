"""Query-aware context compression: keep the sentences a question needs, within a token budget.

Coarse to fine, after LongLLMLingua: every sentence gets its embedding similarity to the question (the best over
the question and the engine's hints), every node the similarity of its best sentence; a sentence's score mixes
its own and its node's (``node_weight``), so a sentence next to strong evidence beats an equally similar stray
one, and the best sentences are kept, greedily, until the budget is full. Only sentences are embedded (short
texts, cached across questions), never whole nodes. What is kept of a node stays in passage order
in a copy of the node (same id, metadata and relationships, so sources and citations stay exact), and
``metadata["compression"]`` says what happened. A node reduced to nothing keeps its place in the list (and in
``Response.source_nodes``) with empty text and no metadata shown to the LLM, so the synthesizers leave it out of
the prompt.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any, Literal

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import BaseModel, Field, PrivateAttr
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode

from llama_index_kgplus._vectors import unit_rows
from llama_index_kgplus.compression._units import Unit, join_units, split_units
from llama_index_kgplus.events import CompressionEvent
from llama_index_kgplus.llm._tokens import TokenCounter

COMPRESSION_KEY = "compression"
# Chosen in benchmarks/compression.py (figures: docs/benchmarks/index.md): the smallest budget at which the default 1.5B model
# answers as well as from whole passages on 42 SQuAD questions; 256 and 512 lost 19 and 14 points of answer_contains.
DEFAULT_CONTEXT_BUDGET = 1024
_CACHE_SIZE = 20_000
dispatcher = get_dispatcher(__name__)


def _question(query_bundle: QueryBundle | None) -> str:
    return query_bundle.query_str if query_bundle is not None else ""


def _unit_vectors(vectors: list[list[float]]) -> np.ndarray:
    return unit_rows(np.asarray(vectors, dtype=np.float32).reshape(len(vectors), -1))


class ContextCompressor(BaseNodePostprocessor):
    """Keep the most relevant sentences of the retrieved nodes within ``context_budget`` tokens.

    Example:

    ```python
    from llama_index_kgplus.compression import ContextCompressor

    compressor = ContextCompressor.from_defaults(context_budget=1024, llm=llm)   # llm: count its tokens
    engine = index.as_query_engine(similarity_top_k=5, node_postprocessors=[compressor])
    response = engine.query("When was the Normans' first raid?")
    response.source_nodes[0].node.metadata["compression"]   # {"kept_units": 2, "units": 9, "tokens": ..}
    ```
    """

    method: Literal["sentences"] = Field(
        default="sentences", description="What is kept or dropped: 'sentences' (lines or windows where none)."
    )
    context_budget: int = Field(
        default=DEFAULT_CONTEXT_BUDGET, ge=1, description="Tokens of passage text kept across all nodes."
    )
    node_weight: float = Field(
        default=0.5, ge=0.0, le=1.0,
        description="Share of a sentence's score that comes from its node's best sentence (the coarse step).",
    )  # fmt: skip
    max_unit_chars: int = Field(
        default=400, ge=20, description="Longer sentences are split into lines, then character windows."
    )
    passthrough_keys: list[str] = Field(
        default_factory=lambda: ["kg_path"],
        description="Nodes with one of these metadata keys (e.g. KG path sections) pass whole; their tokens count.",
    )
    _embed_model: BaseEmbedding = PrivateAttr()
    _llm: Any = PrivateAttr(default=None)
    _counter: TokenCounter | None = PrivateAttr(default=None)
    _vectors: OrderedDict[str, np.ndarray] = PrivateAttr(default_factory=OrderedDict)

    def __init__(self, embed_model: BaseEmbedding, llm: Any | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._embed_model = embed_model
        self._llm = llm

    @property
    def counter(self) -> TokenCounter:
        """How tokens are counted: in the LLM's own tokens, or an estimate without one."""
        if self._counter is None:
            self._counter = TokenCounter.for_llm(self._llm) if self._llm is not None else TokenCounter.estimate()
        return self._counter

    def __getstate__(self) -> dict[str, Any]:
        # the counter (a tokenizer function) is made again from the LLM, and the vector cache starts empty; the
        # models travel as references, pickled once (BaseComponent's version pickles each attribute to test it)
        state = BaseModel.__getstate__(self)
        private = {**state["__pydantic_private__"], "_counter": None, "_vectors": OrderedDict()}
        return {**state, "__pydantic_private__": private}

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this component under."""
        return "ContextCompressor"

    @classmethod
    def from_defaults(
        cls,
        context_budget: int = DEFAULT_CONTEXT_BUDGET,
        *,
        embed_model: BaseEmbedding | None = None,
        llm: Any | None = None,
        **kwargs: Any,
    ) -> ContextCompressor:
        """``embed_model`` falls back to ``Settings.embed_model``; tokens are counted with ``llm``'s tokenizer
        (an estimate without one, and ``metadata["compression"]["tokenizer"]`` says so)."""
        from llama_index.core import Settings

        return cls(embed_model or Settings.embed_model, llm, context_budget=context_budget, **kwargs)

    # ------------------------------------------------------------------ embeddings (cached per text)

    def _missing(self, texts: list[str]) -> list[str]:
        return list(dict.fromkeys(t for t in texts if t not in self._vectors))

    def _remember(self, texts: list[str], vectors: list[list[float]]) -> None:
        for text, vector in zip(texts, _unit_vectors(vectors)):
            self._vectors[text] = vector
        while len(self._vectors) > _CACHE_SIZE:
            self._vectors.popitem(last=False)

    def _matrix(self, texts: list[str]) -> np.ndarray:
        return np.stack([self._vectors[t] for t in texts]) if texts else np.zeros((0, 1), dtype=np.float32)

    # ------------------------------------------------------------------ the plan (shared by sync and async)

    def _split(self, nodes: list[NodeWithScore]) -> list[list[Unit] | None]:
        """Units per node; None for a node that passes whole (no text, or a passthrough key)."""
        plans: list[list[Unit] | None] = []
        for hit in nodes:
            text = hit.node.get_content(MetadataMode.NONE) if isinstance(hit.node, TextNode) else ""
            passthrough = not text.strip() or any(key in hit.node.metadata for key in self.passthrough_keys)
            plans.append(None if passthrough else split_units(text, self.max_unit_chars))
        return plans

    def _texts_to_embed(self, plans: list[list[Unit] | None]) -> list[str]:
        return self._missing([unit.text for units in plans if units for unit in units])

    def _select(
        self, nodes: list[NodeWithScore], plans: list[list[Unit] | None], queries: np.ndarray, query: str
    ) -> list[NodeWithScore]:
        budget = self.context_budget
        for hit, units in zip(nodes, plans):
            if units is None:
                budget -= self.counter.count(hit.node.get_content(MetadataMode.LLM))
        candidates = []  # (score, node index, unit index, tokens)
        for i, units in enumerate(plans):
            if not units:
                continue
            unit_scores = (self._matrix([u.text for u in units]) @ queries.T).max(axis=1)
            node_score = float(unit_scores.max())
            for j, (unit, score) in enumerate(zip(units, unit_scores)):
                mixed = self.node_weight * node_score + (1 - self.node_weight) * float(score)
                # +1: the space or newline that joins it to the sentence before it
                candidates.append((mixed, i, j, self.counter.count(unit.text) + 1))
        candidates.sort(key=lambda c: (-c[0], c[1], c[2]))
        kept: dict[int, set[int]] = {}
        remaining, note = budget, None
        for _, i, j, tokens in candidates:
            if tokens <= remaining:
                kept.setdefault(i, set()).add(j)
                remaining -= tokens
        if not kept and candidates:  # the budget is smaller than any sentence: keep the best one anyway
            _, i, j, _ = candidates[0]
            kept[i] = {j}
            note = "budget smaller than one sentence: kept the single best sentence"
        result = [
            hit if units is None else self._compressed(hit, units, sorted(kept.get(i, ())), note)
            for i, (hit, units) in enumerate(zip(nodes, plans))
        ]
        self._report(query, result, plans)
        return result

    def _report(self, query: str, result: list[NodeWithScore], plans: list[list[Unit] | None]) -> None:
        records = [hit.node.metadata[COMPRESSION_KEY] for hit, units in zip(result, plans) if units is not None]
        dispatcher.event(
            CompressionEvent(
                query=query,
                nodes=len(result),
                passthrough=len(result) - len(records),
                units=sum(r["units"] for r in records),
                kept_units=sum(r["kept_units"] for r in records),
                tokens_before=sum(r["original_tokens"] for r in records),
                tokens_after=sum(r["tokens"] for r in records),
                budget=self.context_budget,
                tokenizer=self.counter.name,
            )
        )

    def _compressed(self, hit: NodeWithScore, units: list[Unit], keep: list[int], note: str | None) -> NodeWithScore:
        node = hit.node
        text = join_units([units[j] for j in keep])
        record = {
            "method": self.method,
            "kept_units": len(keep),
            "units": len(units),
            "tokens": self.counter.count(text),
            "original_tokens": self.counter.count(node.get_content(MetadataMode.NONE)),
            "budget": self.context_budget,
            "tokenizer": self.counter.name,
            "dropped": not keep,
        }
        if note and keep:
            record["note"] = note
        metadata = {**node.metadata, COMPRESSION_KEY: record}
        hidden = list(metadata) if not keep else [*node.excluded_llm_metadata_keys, COMPRESSION_KEY]
        copy = node.model_copy(
            update={
                "text": text,
                "metadata": metadata,
                "excluded_llm_metadata_keys": hidden,
                "excluded_embed_metadata_keys": [*node.excluded_embed_metadata_keys, COMPRESSION_KEY],
            }
        )
        return NodeWithScore(node=copy, score=hit.score)

    @staticmethod
    def _query_texts(query_bundle: QueryBundle | None) -> list[str]:
        if query_bundle is None:
            raise ValueError("ContextCompressor needs the query: pass query_bundle or query_str.")
        return [q for q in dict.fromkeys(query_bundle.embedding_strs) if q.strip()] or [query_bundle.query_str]

    # ------------------------------------------------------------------ BaseNodePostprocessor

    @dispatcher.span
    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        queries = self._query_texts(query_bundle)
        plans = self._split(nodes)
        missing = self._texts_to_embed(plans)
        if missing:
            self._remember(missing, self._embed_model.get_text_embedding_batch(missing))
        query_vectors = _unit_vectors([self._embed_model.get_query_embedding(q) for q in queries])
        return self._select(nodes, plans, query_vectors, _question(query_bundle))

    @dispatcher.span
    async def _apostprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        queries = self._query_texts(query_bundle)
        plans = await asyncio.to_thread(self._split, nodes)
        missing = self._texts_to_embed(plans)
        if missing:
            self._remember(missing, await self._embed_model.aget_text_embedding_batch(missing))
        query_vectors = _unit_vectors(
            list(await asyncio.gather(*(self._embed_model.aget_query_embedding(q) for q in queries)))
        )
        return self._select(nodes, plans, query_vectors, _question(query_bundle))
