"""Retrieval over a hierarchy of summary nodes: evidence (summaries lead to their chunks), collapsed (all levels at
once) or tree traversal (top-down)."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.schema import BaseNode, MetadataMode, NodeRelationship, NodeWithScore, QueryBundle
from llama_index.core.vector_stores.simple import SimpleVectorStore
from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryResult

from llama_index_kgplus._files import json_writer
from llama_index_kgplus._redact import get_logger
from llama_index_kgplus._text import questions_in
from llama_index_kgplus._vectors import unit
from llama_index_kgplus.errors import InputDataError, KGPlusError
from llama_index_kgplus.hierarchy._parents import node_level

logger = get_logger(__name__)

MANIFEST_FILE = "hierarchy.json"
RETRIEVER_FILE = "retriever.json"
_REQUIRED_SETTINGS = ("mode", "similarity_top_k", "beam_width", "expand_children", "token_budget")
# absent from files written before them
_OPTIONAL_SETTINGS = ("summary_margin", "evidence_source", "coverage", "split_questions")
_SETTINGS = _REQUIRED_SETTINGS + _OPTIONAL_SETTINGS
HierarchicalRetrievalMode = Literal["collapsed", "tree", "evidence"]
"""How :class:`HierarchicalRetriever` searches the levels: ``evidence`` (summaries lead to the chunks under them),
``collapsed`` (top-k over all levels at once) or ``tree`` (top-down from the top level)."""
RETRIEVAL_MODES: tuple[str, ...] = ("collapsed", "tree", "evidence")
_POOL_FACTOR = 4  # evidence mode: candidates searched per result wanted


class HierarchicalRetriever(BaseRetriever):
    """Retrieve from chunks and their summary nodes, over any LlamaIndex vector store plus a docstore.

    - ``mode="collapsed"``: one top-k search over every level at once (RAPTOR's collapsed tree).
    - ``mode="tree"``: start at the roots (nodes without a parent), keep the ``beam_width`` most similar,
      descend to their children, and so on down to the chunks; the ``similarity_top_k`` most similar of the
      nodes kept on the way are returned.
    - ``mode="evidence"``: summaries lead to the chunks under them. Candidates come from a collapsed search
      (``_POOL_FACTOR`` times ``similarity_top_k``; or from the tree, ``evidence_source="tree"``); a summary
      among them is replaced by the chunks under it. A summary stays only when it matches the query better than
      every chunk under it by ``summary_margin`` (rare even for a whole-article question: use ``collapsed``
      when summaries should be the context). Below a summary, only the
      ``beam_width`` (default ``similarity_top_k``) best summaries of each level are followed, so a root over a
      whole corpus costs a few clusters, not the corpus. A query that asks several questions
      (``split_questions``) is searched question by question and the results interleaved: each question's best
      chunk before any question's second. ``coverage`` orders the chunks by what they add to the query: after
      each pick, that share of the chunk's direction is taken out of the query vector (0: similarity order).
      The chunks' scores stay their similarities: a postprocessor that sorts by score undoes both orders. On an
      index without summaries this mode is the splitting and the coverage order alone; ``mode="collapsed"`` is
      plain top-k.
    - ``expand_children``: a summary hit is followed by its children (scored against the query).
    - ``token_budget``: drop results, in rank order, once their text would exceed this many tokens.

    The docstore must hold the nodes with their relationships (``build_index`` puts them there). Embeddings
    for tree traversal come from the docstore, the vector store, or (last resort) the embedding model.

    Example:

    ```python
    index = build_index(docs, "./index", extra_transformations=[builder])
    retriever = HierarchicalRetriever.from_index(index, mode="tree", similarity_top_k=5)
    retriever.retrieve("What does the text say about X overall?")
    ```
    """

    def __init__(
        self,
        vector_store: Any,
        docstore: Any,
        embed_model: BaseEmbedding,
        *,
        mode: HierarchicalRetrievalMode = "evidence",
        similarity_top_k: int = 5,
        beam_width: int | None = None,
        expand_children: bool = False,
        token_budget: int | None = None,
        summary_margin: float = 0.1,
        evidence_source: Literal["collapsed", "tree"] = "collapsed",
        coverage: float = 0.0,
        split_questions: bool = True,
        root_ids: Sequence[str] | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        if mode not in RETRIEVAL_MODES:
            raise ValueError(f"mode must be one of {', '.join(RETRIEVAL_MODES)}, not {mode!r}")
        if evidence_source not in ("collapsed", "tree"):
            raise ValueError(f"evidence_source must be 'collapsed' or 'tree', not {evidence_source!r}")
        if not 0.0 <= coverage <= 1.0:
            raise ValueError("coverage must be between 0 and 1")
        if math.isnan(summary_margin):
            raise ValueError("summary_margin must be a number (inf: never keep a summary)")
        if similarity_top_k < 1:
            raise ValueError("similarity_top_k must be at least 1")
        if beam_width is not None and beam_width < 1:
            raise ValueError("beam_width must be at least 1")
        if token_budget is not None and token_budget < 1:
            raise ValueError("token_budget must be at least 1")
        super().__init__(callback_manager=callback_manager, verbose=verbose)
        self.vector_store = vector_store
        self.docstore = docstore
        self.embed_model = embed_model
        self.mode = mode
        self.similarity_top_k = similarity_top_k
        self.beam_width = beam_width
        self.expand_children = expand_children
        self.token_budget = token_budget
        self.summary_margin = summary_margin
        self.evidence_source = evidence_source
        self.coverage = coverage
        self.split_questions = split_questions
        self._root_ids = list(root_ids) if root_ids is not None else None
        self._embeddings: dict[str, np.ndarray] = {}

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_index(cls, index: Any, **kwargs: Any) -> HierarchicalRetriever:
        """From a ``VectorStoreIndex`` (its vector store, docstore and embedding model)."""
        from llama_index_kgplus._indexing import index_embed_model

        kwargs.setdefault("embed_model", index_embed_model(index))
        return cls(index.vector_store, index.docstore, **kwargs)

    @classmethod
    def from_persist_dir(
        cls, persist_dir: str | Path, embed_model: BaseEmbedding | None = None, **kwargs: Any
    ) -> HierarchicalRetriever:
        """From an index folder written by ``build_index`` (and :func:`write_manifest`, if it was called) or by
        :meth:`persist`, whose settings are the defaults here."""
        from llama_index_kgplus._indexing import open_storage, require_index

        persist_dir = require_index(persist_dir)  # JSON docstore, or the SQLite one of its ingest.json
        storage = open_storage(persist_dir)  # its vector store: JSON, or the LanceDB table of its ingest.json
        roots = manifest_root_ids(persist_dir, storage.docstore)
        if roots is not None:
            kwargs.setdefault("root_ids", roots)
        for key, value in _read_settings(persist_dir).items():
            kwargs.setdefault(key, value)
        if embed_model is None:
            from llama_index.core import Settings

            embed_model = Settings.embed_model
        return cls(storage.vector_store, storage.docstore, embed_model, **kwargs)

    def persist(self, persist_dir: str | Path) -> None:
        """Write the docstore and the vector store into a new folder ``persist_dir`` (all at once), then the
        settings with the root ids; :meth:`from_persist_dir` reads them back. The vector store must be LlamaIndex's
        in-folder default (a server store keeps its own data: rebuild the retriever with :meth:`from_index`). An
        index folder written by ``kgplus ingest`` is refused: it would lose its index store and derived files.

        Example:

        ```python
        retriever.persist("./tree-retriever")
        retriever = HierarchicalRetriever.from_persist_dir("./tree-retriever", embed_model=embed_model)
        ```
        """
        from llama_index.core import StorageContext

        from llama_index_kgplus._indexing import INGEST_FILE, persist_storage

        if (Path(persist_dir) / INGEST_FILE).is_file():
            raise InputDataError(
                f"{persist_dir} holds an index written by `kgplus ingest`: persist the retriever into another folder."
            )
        if not isinstance(self.vector_store, SimpleVectorStore):
            raise KGPlusError(
                f"persist() writes LlamaIndex's in-folder vector store, not {type(self.vector_store).__name__}, "
                "which keeps its own data: rebuild the retriever with HierarchicalRetriever.from_index(index)."
            )
        storage = StorageContext.from_defaults(docstore=self.docstore, vector_store=self.vector_store)
        settings = {**{key: getattr(self, key) for key in _SETTINGS}, "root_ids": self.root_ids()}
        persist_storage(storage, persist_dir, files={RETRIEVER_FILE: json_writer(settings, indent=1)})

    # ------------------------------------------------------------------ structure

    def root_ids(self) -> list[str]:
        """Ids of the nodes without a parent (the tree traversal starts there); scanned once if not given."""
        if self._root_ids is None:
            self._root_ids = [
                node_id
                for node_id, node in self.docstore.docs.items()
                if NodeRelationship.PARENT not in node.relationships and node.get_content(MetadataMode.NONE).strip()
            ]
        return self._root_ids

    def _node(self, node_id: str) -> BaseNode | None:
        return self.docstore.get_node(node_id, raise_error=False)

    @staticmethod
    def _child_ids(node: BaseNode) -> list[str]:
        children = node.relationships.get(NodeRelationship.CHILD) or []
        return [c.node_id for c in children] if isinstance(children, list) else [children.node_id]

    def _vectors(self, nodes: list[BaseNode]) -> np.ndarray:
        """Unit embeddings of ``nodes``: cached, docstore, vector store, or embedded now (in that order)."""
        todo = [n for n in nodes if n.node_id not in self._embeddings]
        for node in todo:
            if node.embedding is not None:
                self._embeddings[node.node_id] = unit(node.embedding)
        todo = [n for n in todo if n.node_id not in self._embeddings]
        if todo and isinstance(self.vector_store, SimpleVectorStore):
            for node in todo:  # it keeps the embeddings by node id
                try:
                    self._embeddings[node.node_id] = unit(self.vector_store.get(node.node_id))
                except KeyError:
                    pass
            todo = [n for n in todo if n.node_id not in self._embeddings]
        if todo:
            try:
                for stored in self.vector_store.get_nodes(node_ids=[n.node_id for n in todo]):
                    if stored.embedding is not None:
                        self._embeddings[stored.node_id] = unit(stored.embedding)
            except (NotImplementedError, TypeError, ValueError):
                pass
            todo = [n for n in todo if n.node_id not in self._embeddings]
        if todo:
            vectors = self.embed_model.get_text_embedding_batch([n.get_content(MetadataMode.EMBED) for n in todo])
            for node, vector in zip(todo, vectors):
                self._embeddings[node.node_id] = unit(vector)
        return np.asarray([self._embeddings[n.node_id] for n in nodes]) if nodes else np.zeros((0, 1))

    def _score(self, nodes: list[BaseNode], query: np.ndarray) -> list[NodeWithScore]:
        if not nodes:
            return []
        scores = self._vectors(nodes) @ query
        ranked = sorted(zip(nodes, scores), key=lambda pair: -float(pair[1]))
        return [NodeWithScore(node=n, score=float(s)) for n, s in ranked]

    # ------------------------------------------------------------------ retrieval

    def _query_embedding(self, query_bundle: QueryBundle) -> list[float]:
        if query_bundle.embedding is None:
            query_bundle.embedding = self.embed_model.get_agg_embedding_from_queries(query_bundle.embedding_strs)
        return query_bundle.embedding

    async def _aquery_embedding(self, query_bundle: QueryBundle) -> list[float]:
        if query_bundle.embedding is None:
            query_bundle.embedding = await self.embed_model.aget_agg_embedding_from_queries(query_bundle.embedding_strs)
        return query_bundle.embedding

    def _collapsed_hits(self, result: VectorStoreQueryResult) -> list[NodeWithScore]:
        ids = list(result.ids or [n.node_id for n in result.nodes or []])
        returned = {n.node_id: n for n in result.nodes or []}
        sims: list[float | None] = list(result.similarities) if result.similarities else [None] * len(ids)
        hits = []
        for node_id, score in zip(ids, sims):
            node = self._node(node_id) or returned.get(node_id)
            if node is None:
                logger.warning("Node %s is in the vector store but not in the docstore; skipped.", node_id)
                continue
            hits.append(NodeWithScore(node=node, score=None if score is None else float(score)))
        return hits

    def _tree_hits(self, query: np.ndarray, limit: int | None = None) -> list[NodeWithScore]:
        beam = self.beam_width or self.similarity_top_k
        kept: dict[str, NodeWithScore] = {}
        frontier = [n for n in (self._node(i) for i in self.root_ids()) if n is not None]
        while frontier:  # every node is scored at most once, so this ends after the deepest level
            best = self._score(frontier, query)[:beam]
            for hit in best:
                kept[hit.node.node_id] = hit
            child_ids = dict.fromkeys(c for hit in best for c in self._child_ids(hit.node) if c not in kept)
            frontier = [n for n in (self._node(i) for i in child_ids) if n is not None]
        return sorted(kept.values(), key=lambda h: -(h.score or 0.0))[: limit or self.similarity_top_k]

    def leaves_under(self, node: BaseNode) -> list[BaseNode]:
        """The chunks (level 0) below the summary node ``node``, at any depth (``[]`` for a chunk).

        ```python
        summary = next(h.node for h in retriever.retrieve("How do I make a venv?") if h.node.metadata["level"])
        print([leaf.node_id for leaf in retriever.leaves_under(summary)])
        ```
        """
        return self._leaves_under(node)

    def _leaves_under(self, node: BaseNode, query: np.ndarray | None = None) -> list[BaseNode]:
        """The chunks (level 0) below a summary. With ``query``, only the ``beam_width`` (else
        ``similarity_top_k``) summaries most similar to it are followed at each level; without, every one."""
        beam = self.beam_width or self.similarity_top_k
        leaves: dict[str, BaseNode] = {}
        frontier, seen = [node], {node.node_id}
        while frontier:
            children = [c for c in (self._node(i) for n in frontier for i in self._child_ids(n)) if c is not None]
            children = [c for c in children if c.node_id not in seen]
            seen.update(c.node_id for c in children)
            leaves.update((c.node_id, c) for c in children if node_level(c) == 0)
            frontier = [c for c in children if node_level(c) > 0]
            if query is not None:
                frontier = [h.node for h in self._score(frontier, query)[:beam]]
        return list(leaves.values())

    def _evidence(self, candidates: list[NodeWithScore], query: np.ndarray) -> list[NodeWithScore]:
        """Summaries replaced by the chunks under them, chunks in similarity order (coverage order when
        ``coverage`` > 0; see the class doc)."""
        leaves: dict[str, NodeWithScore] = {}
        summaries = []
        scored = self._score([h.node for h in candidates], query)  # one scale for chunks and summaries
        below = {h.node.node_id: self._leaves_under(h.node, query) for h in scored if node_level(h.node) > 0}
        self._vectors([leaf for nodes in below.values() for leaf in nodes])  # one store read, not one per summary
        for hit in scored:
            if node_level(hit.node) == 0:
                leaves.setdefault(hit.node.node_id, hit)
                continue
            under = self._score(below[hit.node.node_id], query)
            leaves.update((h.node.node_id, h) for h in under)
            if not under or (hit.score or 0.0) - (under[0].score or 0.0) >= self.summary_margin:
                summaries.append(hit)
        ranked = sorted(leaves.values(), key=lambda h: -(h.score or 0.0))  # each chunk scored once
        if self.coverage:
            ranked = self._cover(ranked, query)
        for summary in summaries:  # before the first chunk it outscores
            at = next((i for i, h in enumerate(ranked) if (h.score or 0.0) < (summary.score or 0.0)), len(ranked))
            ranked.insert(at, summary)
        return ranked[: self.similarity_top_k]

    def _cover(self, ranked: list[NodeWithScore], query: np.ndarray) -> list[NodeWithScore]:
        """The first ``similarity_top_k`` chunks in greedy order of what is left of the query: after each pick,
        ``coverage`` of its direction is taken out of the query vector, so the next pick answers another part."""
        vectors = self._vectors([h.node for h in ranked])
        residual = np.asarray(query, dtype=np.float64).copy()
        free = np.ones(len(ranked), dtype=bool)
        order = []
        for _ in range(min(self.similarity_top_k, len(ranked))):
            scores = np.where(free, vectors @ residual, -np.inf)
            best = int(np.argmax(scores))
            order.append(best)
            free[best] = False
            residual -= self.coverage * scores[best] * vectors[best]
        return [ranked[i] for i in order]

    def _finish(self, hits: list[NodeWithScore], query: np.ndarray | None) -> list[NodeWithScore]:
        if self.expand_children and query is not None:
            seen = {h.node.node_id for h in hits}
            expanded: list[NodeWithScore] = []
            for hit in hits:
                expanded.append(hit)
                if node_level(hit.node) > 0:
                    children = [n for n in (self._node(i) for i in self._child_ids(hit.node)) if n is not None]
                    for child in self._score([c for c in children if c.node_id not in seen], query):
                        seen.add(child.node.node_id)
                        expanded.append(child)
            hits = expanded
        if self.token_budget is not None:
            hits = _within_budget(hits, self.token_budget)
        return hits

    def _from_tree(self) -> bool:
        return self.mode == "tree" or (self.mode == "evidence" and self.evidence_source == "tree")

    def _pool(self) -> int:
        """Candidates to search: more than the results in evidence mode, which replaces and reorders them."""
        return self.similarity_top_k * (_POOL_FACTOR if self.mode == "evidence" else 1)

    def _store_query(self, embedding: list[float]) -> VectorStoreQuery:
        return VectorStoreQuery(query_embedding=embedding, similarity_top_k=self._pool())

    def _select(self, candidates: list[NodeWithScore], query: np.ndarray) -> list[NodeWithScore]:
        if self.mode == "evidence":
            candidates = self._evidence(candidates, query)
        return self._finish(candidates, query)

    def _parts(self, query_bundle: QueryBundle) -> list[str]:
        """The questions of a query that asks several, to search one by one (evidence mode, ``split_questions``;
        at most ``similarity_top_k``), else ``[]``. A bundle with its own embedding strings is searched whole; a
        bundle's precomputed embedding is not used for the questions, which are embedded one by one."""
        if (
            self.mode != "evidence"
            or not self.split_questions
            or query_bundle.embedding_strs != [query_bundle.query_str]
        ):
            return []
        questions = questions_in(query_bundle.query_str)
        if len(questions) > self.similarity_top_k:  # more questions than places: the last place takes the rest
            questions[self.similarity_top_k - 1 :] = [" ".join(questions[self.similarity_top_k - 1 :])]
        return questions

    def _candidates(self, embedding: list[float]) -> list[NodeWithScore]:
        if self._from_tree():
            return self._tree_hits(unit(embedding), self._pool())
        return self._collapsed_hits(self.vector_store.query(self._store_query(embedding)))

    async def _acandidates(self, embedding: list[float]) -> list[NodeWithScore]:
        if self._from_tree():  # scoring reads the docstore and vector store synchronously: off the event loop
            return await asyncio.to_thread(self._tree_hits, unit(embedding), self._pool())
        return self._collapsed_hits(await self.vector_store.aquery(self._store_query(embedding)))

    def _by_parts(self, candidates: list[list[NodeWithScore]], parts: list[list[float]]) -> list[NodeWithScore]:
        """Each part's evidence, interleaved: every part's best chunk before any part's second. The scores are
        similarities to their own part."""
        ranked = [self._evidence(hits, unit(part)) for hits, part in zip(candidates, parts)]
        merged: dict[str, NodeWithScore] = {}
        for rank in range(self.similarity_top_k):
            for hits in ranked:
                if rank < len(hits):
                    merged.setdefault(hits[rank].node.node_id, hits[rank])
        return list(merged.values())[: self.similarity_top_k]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        questions = self._parts(query_bundle)
        if not questions:
            embedding = self._query_embedding(query_bundle)
            return self._select(self._candidates(embedding), unit(embedding))
        parts = [self.embed_model.get_query_embedding(q) for q in questions]
        hits = self._by_parts([self._candidates(p) for p in parts], parts)
        query = unit(self._query_embedding(query_bundle)) if self.expand_children else None  # children's scores
        return self._finish(hits, query)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        questions = self._parts(query_bundle)
        if not questions:
            embedding = await self._aquery_embedding(query_bundle)
            return await asyncio.to_thread(self._select, await self._acandidates(embedding), unit(embedding))
        parts = await asyncio.gather(*(self.embed_model.aget_query_embedding(q) for q in questions))
        candidates = [await self._acandidates(p) for p in parts]  # one at a time: tree scoring runs in threads
        hits = await asyncio.to_thread(self._by_parts, candidates, list(parts))
        query = unit(await self._aquery_embedding(query_bundle)) if self.expand_children else None
        return await asyncio.to_thread(self._finish, hits, query)


def default_mode(root_ids: Sequence[str] | None) -> HierarchicalRetrievalMode:
    """The mode for an index folder: ``evidence`` when it has summaries (its manifest's root ids), else
    ``collapsed`` (plain top-k over the chunks, as a flat index always was)."""
    return "collapsed" if root_ids is None else "evidence"


def _within_budget(hits: list[NodeWithScore], budget: int) -> list[NodeWithScore]:
    from llama_index.core.utils import get_tokenizer

    tokenizer = get_tokenizer()
    kept, used = [], 0
    for hit in hits:
        cost = len(tokenizer(hit.node.get_content(MetadataMode.NONE)))
        if used + cost <= budget:
            kept.append(hit)
            used += cost
    return kept


# ---------------------------------------------------------------------- the index folder's manifest


def write_manifest(persist_dir: str | Path, nodes: Sequence[BaseNode], builder: Any | None = None) -> dict[str, Any]:
    """Write ``hierarchy.json`` beside a persisted index (stamped in its ``ingest.json``, as the other files of
    the index): the :func:`hierarchy_manifest` of ``nodes``, so :meth:`HierarchicalRetriever.from_persist_dir`
    needs no scan."""
    from llama_index_kgplus._indexing import write_index_file

    manifest = hierarchy_manifest(nodes, builder)
    write_index_file(persist_dir, MANIFEST_FILE, json_writer(manifest, indent=1, default=str))
    return manifest


def hierarchy_manifest(nodes: Sequence[BaseNode], builder: Any | None = None) -> dict[str, Any]:
    """What ``hierarchy.json`` holds: root ids, nodes per level, the builder's settings, the clusters it
    failed to summarise and (a semantic builder's) the similarity threshold of each level, which a sync reuses."""
    levels: dict[int, int] = {}
    for node in nodes:
        levels[node_level(node)] = levels.get(node_level(node), 0) + 1
    manifest: dict[str, Any] = {
        "builder": builder.to_dict() if builder is not None and hasattr(builder, "to_dict") else None,
        "nodes_per_level": {str(k): v for k, v in sorted(levels.items())},
        "root_ids": [
            n.node_id
            for n in nodes
            if NodeRelationship.PARENT not in n.relationships and n.get_content(MetadataMode.NONE).strip()
        ],
    }
    try:
        failed = builder.failed_clusters_ if builder is not None else []
        thresholds = builder.thresholds_ if builder is not None and hasattr(type(builder), "thresholds_") else None
    except AttributeError:  # the builder did not run (a pipeline cache hit)
        failed, thresholds = [], None
    manifest["failed_clusters"] = [{"level": f.level, "child_ids": list(f.child_ids), "error": f.error} for f in failed]
    if thresholds is not None:
        manifest["thresholds"] = [float(t) for t in thresholds]
    return manifest


def _read_settings(persist_dir: Path) -> dict[str, Any]:
    """The settings :meth:`HierarchicalRetriever.persist` wrote (``{}`` when it did not)."""
    path = persist_dir / RETRIEVER_FILE
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        settings = {key: data[key] for key in (*_REQUIRED_SETTINGS, "root_ids")}
        return {**settings, **{key: data[key] for key in _OPTIONAL_SETTINGS if key in data}}
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
        raise InputDataError(f"{path} is not a retriever's settings ({exc}); delete it or persist again.") from exc


def read_manifest(persist_dir: str | Path) -> dict[str, Any] | None:
    """``hierarchy.json`` of an index folder, or None if there is none."""
    path = Path(persist_dir) / MANIFEST_FILE
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise InputDataError(f"{path} is not valid JSON ({exc}); delete it or re-run `kgplus ingest`.") from exc
    roots = manifest.get("root_ids") if isinstance(manifest, dict) else None
    if not isinstance(roots, list) or not all(isinstance(r, str) for r in roots):
        raise InputDataError(
            f"{path} is not a hierarchy manifest (no list of root_ids); delete it or re-run `kgplus ingest`."
        )
    return manifest


def manifest_root_ids(persist_dir: str | Path, docstore: Any) -> list[str] | None:
    """The summary roots recorded in ``hierarchy.json`` (``None`` without one), checked against the index: a
    manifest left by another ingest would make tree retrieval find nothing."""
    manifest = read_manifest(persist_dir)
    if manifest is None:
        return None
    roots = manifest["root_ids"]
    missing = [r for r in roots if not docstore.document_exists(r)]
    if missing:
        raise InputDataError(
            f"{Path(persist_dir) / MANIFEST_FILE} belongs to another ingest of this index ({len(missing)} of its "
            f"{len(roots)} roots are not in the index): re-run `kgplus ingest` with --hierarchy, or delete it."
        )
    return roots
