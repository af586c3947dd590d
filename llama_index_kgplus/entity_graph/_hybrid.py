"""``HybridRetriever``: a lexical (BM25) and a dense retriever over the same nodes, fused by scaled score.

Names, dates and rare words decide many multi-hop questions ("Journal of Psychotherapy Integration"), and a
small dense encoder blurs them; BM25 keeps them. Each list's scores are scaled to [0, 1] (min-max) and summed
with the weights ``lexical_weight`` and ``1 - lexical_weight``; a node only one list found gets that list's
part. No LLM is involved (unlike LlamaIndex's ``QueryFusionRetriever``, which resolves ``Settings.llm``).

BM25 comes from ``llama-index-retrievers-bm25`` (bm25s with an English stemmer and stop words; the ``bm25``
extra), built over the docstore's nodes on first use.

Example:

```python
retriever = HybridRetriever.from_index(index, similarity_top_k=50, lexical_weight=0.5)
retriever.retrieve("Who founded the association that publishes Journal of Psychotherapy Integration?")
```
"""

from __future__ import annotations

import asyncio
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle

from llama_index_kgplus.errors import KGPlusSetupError

_INSTALL_HINT = "pip install 'llama-index-kgplus[bm25]'"


def bm25_retriever(nodes: list[Any], similarity_top_k: int) -> BaseRetriever:
    """A BM25 retriever over ``nodes`` (English stemming and stop words)."""
    try:
        from llama_index.retrievers.bm25 import BM25Retriever
    except ImportError as exc:
        raise KGPlusSetupError(f"The lexical first stage needs llama-index-retrievers-bm25: {_INSTALL_HINT}.") from exc
    return BM25Retriever(nodes=nodes, similarity_top_k=min(similarity_top_k, max(len(nodes), 1)))


class HybridRetriever(BaseRetriever):
    """Lexical and dense hits of a question, fused by scaled score (``lexical_weight``: BM25's share).

    Example:

    ```python
    hybrid = HybridRetriever(index.as_retriever(similarity_top_k=50), docstore=index.docstore)
    ```
    """

    def __init__(
        self,
        dense_retriever: BaseRetriever,
        *,
        docstore: Any = None,
        lexical_retriever: BaseRetriever | None = None,
        similarity_top_k: int = 50,
        lexical_weight: float = 0.5,
        callback_manager: CallbackManager | None = None,
    ) -> None:
        if not 0.0 <= lexical_weight <= 1.0:
            raise ValueError(f"lexical_weight must be in [0, 1], got {lexical_weight!r}.")
        if lexical_retriever is None and docstore is None:
            raise ValueError("Give the docstore of the nodes (BM25 is built over it), or a lexical_retriever.")
        self.dense_retriever = dense_retriever
        self.docstore = docstore
        self.similarity_top_k = similarity_top_k
        self.lexical_weight = lexical_weight
        self._lexical = lexical_retriever
        super().__init__(callback_manager=callback_manager)

    @classmethod
    def from_index(cls, index: Any, *, similarity_top_k: int = 50, lexical_weight: float = 0.5) -> HybridRetriever:
        """Over a ``VectorStoreIndex``: its dense retriever and BM25 over its docstore."""
        return cls(
            index.as_retriever(similarity_top_k=similarity_top_k),
            docstore=index.docstore,
            similarity_top_k=similarity_top_k,
            lexical_weight=lexical_weight,
        )

    @property
    def lexical_retriever(self) -> BaseRetriever:
        """The BM25 retriever (built over the docstore's nodes on first use)."""
        if self._lexical is None:
            self._lexical = bm25_retriever(list(self.docstore.docs.values()), self.similarity_top_k)
        return self._lexical

    def warm_up(self) -> None:
        """Build the BM25 index now rather than on the first question."""
        _ = self.lexical_retriever

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        lexical = self.lexical_retriever.retrieve(query_bundle) if self.lexical_weight > 0 else []
        dense = self.dense_retriever.retrieve(query_bundle) if self.lexical_weight < 1 else []
        return self._stored(
            fuse_scores([(1 - self.lexical_weight, dense), (self.lexical_weight, lexical)], self.similarity_top_k)
        )

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        lexical = (
            await asyncio.to_thread(self.lexical_retriever.retrieve, query_bundle) if self.lexical_weight > 0 else []
        )
        dense = await self.dense_retriever.aretrieve(query_bundle) if self.lexical_weight < 1 else []
        return self._stored(
            fuse_scores([(1 - self.lexical_weight, dense), (self.lexical_weight, lexical)], self.similarity_top_k)
        )

    def _stored(self, hits: list[NodeWithScore]) -> list[NodeWithScore]:
        """The hits with the docstore's nodes (BM25 returns rebuilt copies of them)."""
        if self.docstore is None:
            return hits
        out = []
        for hit in hits:
            node = self.docstore.get_node(hit.node.node_id, raise_error=False) or hit.node
            out.append(NodeWithScore(node=node, score=hit.score))
        return out


def fuse_scores(weighted: list[tuple[float, list[NodeWithScore]]], top_k: int) -> list[NodeWithScore]:
    """One list from several: per list, scores min-max scaled to [0, 1] and multiplied by its weight, summed per
    node id; best first (ties by node id), at most ``top_k``."""
    fused: dict[str, float] = {}
    nodes: dict[str, Any] = {}
    for weight, hits in weighted:
        if not hits or weight == 0:
            continue
        values = [float(h.score or 0.0) for h in hits]
        low, high = min(values), max(values)
        for hit, value in zip(hits, values):
            scaled = (value - low) / (high - low) if high > low else 1.0
            fused[hit.node.node_id] = fused.get(hit.node.node_id, 0.0) + weight * scaled
            nodes.setdefault(hit.node.node_id, hit.node)
    ranked = sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:top_k]
    return [NodeWithScore(node=nodes[node_id], score=score) for node_id, score in ranked]
