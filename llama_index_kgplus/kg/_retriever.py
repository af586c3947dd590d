"""``KGPathRetriever``: knowledge-graph relationship paths as LlamaIndex nodes.

Each path becomes a ``TextNode`` whose text reads like ``aspirin -[TREATS]-> headache <-[ISA]- migraine``
and whose metadata holds the structured path (``kg_path``, hidden from the LLM and the embedding), so it passes
through the standard synthesizers, postprocessors and evaluators untouched. The score is ``1 / length``
(1.0 for a direct relationship, 0.5 for two hops). ``KGPathSubRetriever`` serves the same paths as a
sub-retriever of LlamaIndex's ``PropertyGraphIndex``.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.graph_stores.types import PropertyGraphStore
from llama_index.core.indices.property_graph import BasePGRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from llama_index_kgplus.kg._finder import KGPathFinder, KGPathResult
from llama_index_kgplus.kg._graph import KnowledgeGraph
from llama_index_kgplus.kg._matcher import EntityMatcher
from llama_index_kgplus.kg._paths import KGPath

PATH_METADATA_KEYS = ["kg_path", "kg_entity_ids", "source"]


def path_node(path: KGPath) -> NodeWithScore:
    """One path as a scored ``TextNode`` (a stable id: the same path gives the same node id)."""
    ident = hashlib.sha256(json.dumps(path.identity()).encode()).hexdigest()[:32]
    node = TextNode(
        id_=f"kgpath-{ident}",
        text=path.text,
        metadata={"kg_path": path.to_dict(), "kg_entity_ids": [n.cid for n in path.nodes], "source": "knowledge_graph"},
        excluded_embed_metadata_keys=list(PATH_METADATA_KEYS),
        excluded_llm_metadata_keys=list(PATH_METADATA_KEYS),
    )
    return NodeWithScore(node=node, score=1.0 / max(path.length, 1))


class KGPathRetriever(BaseRetriever):
    """Retrieves the relationship paths between the entities a question mentions.

    Example:

    ```python
    retriever = KGPathRetriever.from_defaults("ladybug:///tmp/kg.lbug", max_hops=2, max_paths=20)
    for hit in retriever.retrieve("How does aspirin relate to migraine?"):
        print(hit.score, hit.node.text)        # 0.5 aspirin -[TREATS]-> headache <-[ISA]- migraine
    result = retriever.retrieve_paths("...")  # entities and structured paths
    ```
    """

    def __init__(
        self, finder: KGPathFinder, *, callback_manager: CallbackManager | None = None, verbose: bool = False
    ) -> None:
        self._finder = finder
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this component under."""
        return "KGPathRetriever"

    @classmethod
    def from_defaults(
        cls,
        graph: Any = None,
        matcher: EntityMatcher | None = None,
        *,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        **finder_kwargs: Any,
    ) -> KGPathRetriever:
        """``graph``: a ``KnowledgeGraph``, a store URI, a property graph store, or ``None`` (default store);
        ``finder_kwargs`` are :class:`KGPathFinder` settings (``max_hops``, ``max_paths``, ...)."""
        return cls(
            KGPathFinder.from_defaults(graph, matcher, **finder_kwargs),
            callback_manager=callback_manager,
            verbose=verbose,
        )

    @property
    def finder(self) -> KGPathFinder:
        """The path finder that does the work."""
        return self._finder

    def retrieve_paths(self, query: str | QueryBundle) -> KGPathResult:
        """The entities and structured paths of a question (what :meth:`retrieve` turns into nodes)."""
        return self._finder.find(query.query_str if isinstance(query, QueryBundle) else query)

    async def aretrieve_paths(self, query: str | QueryBundle) -> KGPathResult:
        """Async :meth:`retrieve_paths`."""
        return await self._finder.afind(query.query_str if isinstance(query, QueryBundle) else query)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [path_node(p) for p in self.retrieve_paths(query_bundle).paths]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [path_node(p) for p in (await self.aretrieve_paths(query_bundle)).paths]


class KGPathSubRetriever(BasePGRetriever):
    """The relationship paths of :class:`KGPathRetriever` as a ``PropertyGraphIndex`` sub-retriever, beside
    LlamaIndex's own (``LLMSynonymRetriever``, ``VectorContextRetriever``, ...).

    Example:

    ```python
    index = PropertyGraphIndex.from_existing(property_graph_store=store, embed_kg_nodes=False)
    retriever = index.as_retriever(sub_retrievers=[KGPathSubRetriever(index.property_graph_store, max_hops=2)])
    retriever.retrieve("Does a virus give you a headache?")
    ```

    ``include_text`` (LlamaIndex's option: add the source chunks of what was found) is off by default: paths
    of an imported graph have no source chunks.
    """

    def __init__(
        self,
        graph_store: PropertyGraphStore,
        matcher: EntityMatcher | None = None,
        *,
        include_text: bool = False,
        callback_manager: CallbackManager | None = None,
        **finder_kwargs: Any,
    ) -> None:
        self._finder = KGPathFinder.from_defaults(KnowledgeGraph(graph_store), matcher, **finder_kwargs)
        super().__init__(graph_store=graph_store, include_text=include_text, callback_manager=callback_manager)

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this component under."""
        return "KGPathSubRetriever"

    @property
    def finder(self) -> KGPathFinder:
        """The path finder that does the work."""
        return self._finder

    def retrieve_from_graph(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """The paths between the question's entities, one node each."""
        return [path_node(p) for p in self._finder.find(query_bundle.query_str).paths]

    async def aretrieve_from_graph(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """Async :meth:`retrieve_from_graph`."""
        return [path_node(p) for p in (await self._finder.afind(query_bundle.query_str)).paths]
