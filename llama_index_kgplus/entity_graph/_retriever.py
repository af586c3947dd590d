"""``EntityGraphRetriever``: multi-hop retrieval by personalized PageRank over the passage-entity graph.

For a question: find its entities (the graph's own dictionary), seed a personalized PageRank with them
(weighted by specificity, 1 / the number of passages naming the entity), with the entities named in the top
dense hits' sentences nearest the question (the sentence that answers the first hop names the next hop's
entity) and with the top dense hits themselves (so a question that names no known entity still works), walk the
graph (passages <-> entities <-> entities), and rank passages by the walk (its ranking fused with the dense
one). "When did Lothair II's mother die?" seeds *Lothair II*; the walk reaches the Lothair II passage, the
entity *Ermengarde of Tours* it mentions and the passage about her, which the question never names.

Every returned node is a copy of the docstore's node with ``metadata["entity_graph"]``: its graph and dense
scores, the question's entities, the passage's entities most visited by the walk, and ``path``: the edges by
which the walk most likely reached it (e.g. *Lothair II* -MENTIONS(about)- passage *Lothair II*
-MENTIONS- *Ermengarde of Tours* -MENTIONS(about)- passage *Ermengarde of Tours*).
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.bridge.pydantic import BaseModel, Field
from llama_index.core.callbacks import CallbackManager
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.prompts import BasePromptTemplate, PromptTemplate
from llama_index.core.prompts.mixin import PromptDictType
from llama_index.core.schema import MetadataMode, NodeRelationship, NodeWithScore, QueryBundle

from llama_index_kgplus._text import split_sentences
from llama_index_kgplus._vectors import unit, unit_rows
from llama_index_kgplus.entity_graph._graph import MENTIONS, EntityGraph
from llama_index_kgplus.entity_graph._hybrid import HybridRetriever
from llama_index_kgplus.entity_graph._pagerank import personalized_pagerank, transition_matrix
from llama_index_kgplus.errors import InputDataError, KGPlusSetupError
from llama_index_kgplus.events import EntityGraphSeedsEvent, EntityGraphWalkEvent

METADATA_KEY = "entity_graph"
DEFAULT_STEP_PROMPT = PromptTemplate(
    "Passages:\n{context_str}\n\nQuestion: {query_str}\n\nAnswer the question as well as the passages allow, in "
    "one short sentence that names every entity involved.\nAnswer:"
)
_STEP_PASSAGE_CHARS = 600  # of each passage shown in an LLM step: a step stays near 10 s on the local 1.5B model
dispatcher = get_dispatcher(__name__)


class GraphRetrievalSettings(BaseModel):
    """The settings of :class:`EntityGraphRetriever` (validated; every one can be passed as a keyword).

    Example:

    ```python
    from llama_index_kgplus import EntityGraphRetriever
    from llama_index_kgplus.entity_graph import GraphRetrievalSettings

    settings = GraphRetrievalSettings(similarity_top_k=8, max_hops=4, dense_seeds=3)
    retriever = EntityGraphRetriever.from_index(index, persist_dir="./index", **settings.model_dump())
    ```
    """

    similarity_top_k: int = Field(default=8, ge=1, description="Passages returned.")
    damping: float = Field(default=0.85, ge=0.0, lt=1.0, description="Probability that the walk goes on (vs restarts).")
    max_hops: int | None = Field(
        default=None, ge=1, description="Longest walk from a seed, in edges (passage-entity is one); None: no limit."
    )
    walk: Literal["push", "power"] = Field(
        default="push",
        description="How the PageRank is computed: 'push' spreads the walk out from the seeds and touches only "
        "their neighbourhood (its cost follows the part of the graph the walk reaches); 'power' iterates over the "
        "whole graph. max_hops always uses 'power'.",
    )
    walk_tolerance: float = Field(
        default=1e-6,
        gt=0.0,
        lt=1.0,
        description="'push': a node's unspread share is spread once above this times its edge count; "
        "'power': the iteration stops when the scores change by less than this (L1).",
    )
    dense_top_k: int = Field(default=50, ge=1, description="Dense hits fetched for the seeds and the fusion.")
    dense_seeds: int = Field(default=5, ge=0, description="Top dense hits that seed the walk.")
    dense_seed_scaling: Literal["score", "minmax"] = Field(
        default="minmax",
        description="Seed weight of a dense hit: its score, or its score min-max scaled over the dense_top_k hits "
        "(HippoRAG 2's passage seeds: the best hit 1, the last 0).",
    )
    first_stage: Literal["dense", "hybrid"] = Field(
        default="dense",
        description="The hits that seed the walk and join the fusion: dense, or BM25 and dense fused by scaled "
        "score (the bm25 extra).",
    )
    lexical_weight: float = Field(
        default=0.5, ge=0.0, le=1.0, description="first_stage='hybrid': BM25's share of the fused score."
    )
    entity_embedding_top_k: int = Field(
        default=0,
        ge=0,
        description="Entities also matched to the question by embedding (cosine of the question and the entity's "
        "name, the best this many above entity_similarity), besides the dictionary's; 0: the dictionary only. "
        "Needs embed_model; the names are embedded on warm_up.",
    )
    entity_similarity: float = Field(
        default=0.5, ge=-1.0, le=1.0, description="Least cosine of an entity matched by embedding."
    )
    sentence_seeds: int = Field(
        default=2,
        ge=0,
        description="The entities named in this many sentences of the seeded dense hits, those nearest the "
        "question by embedding, seed the walk too, each weighted by its sentence's cosine (0: none): the sentence "
        "that answers a question's first hop names the entity of the next. Needs embed_model.",
    )
    dense_seed_weight: float = Field(
        default=0.1,
        ge=0.0,
        le=1.0,
        description="Share of the seed weight on dense hits when the question names entities.",
    )
    fusion: Literal["rank", "score"] = Field(
        default="rank", description="Fuse the walk's and the dense ranking by reciprocal rank or by scaled score."
    )
    rank_k: float = Field(default=1.0, gt=0.0, description="fusion='rank': the k of 1 / (k + rank).")
    graph_weight: float = Field(default=1.0, ge=0.0, description="Weight of the walk's ranking in the fusion.")
    dense_weight: float = Field(
        default=0.0,
        ge=0.0,
        description="Weight of the dense ranking in the fusion when the question names entities (0: the walk "
        "ranks, dense hits fill the places it leaves).",
    )
    dense_weight_no_entities: float = Field(
        default=0.5,
        ge=0.0,
        description="Weight of the dense ranking when the question names no known entity (the walk then "
        "spreads only the dense hits and the entities of their sentences nearest the question).",
    )
    mention_weight: float = Field(default=1.0, gt=0.0, description="Edge weight: a passage names an entity.")
    about_weight: float = Field(
        default=5.0,
        gt=0.0,
        description="Weight of the step from an entity to a passage about it (its title or lead entity).",
    )
    entity_edge_weight: float = Field(default=1.0, ge=0.0, description="Edge weight: SAME_AS and KG relationships.")
    max_df: float | None = Field(
        default=0.02,
        gt=0.0,
        description="Entities named by more passages than this (a share if < 1, else a count) are left out "
        "(None: none is); an entity linked to every passage (IDF 0) always is.",
    )
    min_df_cap: int = Field(
        default=10,
        ge=1,
        description="A share-based max_df never leaves out entities named by this many passages or fewer.",
    )
    include_parents: bool = Field(default=False, description="Follow each hit by its summary parent (hierarchy).")
    llm_steps: int = Field(
        default=0,
        ge=0,
        le=3,
        description="Query-time LLM steps (0, the default: no LLM is called). Each step shows the LLM the question "
        "and the top llm_context passages; its answer, added to the question, retrieves again, and the rounds' "
        "rankings are fused by reciprocal rank.",
    )
    llm_context: int = Field(default=3, ge=1, description="Passages shown to the LLM in each of the llm_steps.")


@dataclass
class _Compiled:
    """The graph as matrices for the walk (rebuilt when the graph or the weights change)."""

    transition: sp.csr_matrix
    backward: sp.csr_matrix
    dangling: np.ndarray  # nodes without edges
    specificity: np.ndarray  # per entity: 1 / passages naming it; 0 for left-out entities
    passage_index: dict[str, int]
    entity_column: dict[str, int]
    about: sp.csr_matrix  # passages x entities: the passage's document is about the entity
    edge_types: dict[tuple[int, int], str]  # entity columns (both orders) -> relationship type
    n_passages: int
    revision: int  # of the graph they were built from


class EntityGraphRetriever(BaseRetriever):
    """Multi-hop retriever: personalized PageRank from the question's entities and the top dense hits.

    ``dense_retriever`` is any LlamaIndex retriever over the same nodes (e.g. ``index.as_retriever()``, or a
    :class:`HierarchicalRetriever`); ``docstore`` gives the nodes the walk reaches; ``embed_model`` embeds the
    sentences of the dense hits (``sentence_seeds``) and, when ``entity_embedding_top_k`` is set, the entity names
    (default: the index's model with ``from_index``, else ``Settings.embed_model``);
    ``llm`` answers the question from the top passages when ``llm_steps`` is set (default ``Settings.llm``; its
    prompt is ``"step_prompt"`` of ``get_prompts()``). Settings: see :class:`GraphRetrievalSettings`.

    Example:

    ```python
    retriever = EntityGraphRetriever.from_persist_dir("./index", similarity_top_k=8)
    for hit in retriever.retrieve("When did Lothair II's mother die?"):
        print(hit.node.metadata["doc_id"], hit.node.metadata["entity_graph"]["path"])
    ```
    """

    def __init__(
        self,
        graph: EntityGraph,
        dense_retriever: BaseRetriever,
        docstore: Any,
        *,
        embed_model: Any = None,
        llm: Any = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        **settings: Any,
    ) -> None:
        self.graph = graph
        self.embed_model = embed_model
        self.llm = llm
        self.step_prompt: BasePromptTemplate = DEFAULT_STEP_PROMPT
        self._entity_vectors: tuple[int, np.ndarray] | None = None
        self.docstore = docstore
        self.settings = GraphRetrievalSettings(**settings)
        if self.settings.first_stage == "hybrid" and not isinstance(dense_retriever, HybridRetriever):
            dense_retriever = HybridRetriever(
                dense_retriever,
                docstore=docstore,
                similarity_top_k=self.settings.dense_top_k,
                lexical_weight=self.settings.lexical_weight,
            )
        self.dense_retriever = dense_retriever
        self._compiled: _Compiled | None = None
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this component under."""
        return "EntityGraphRetriever"

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_index(
        cls, index: Any, graph: EntityGraph | None = None, *, persist_dir: str | Path | None = None, **kwargs: Any
    ) -> EntityGraphRetriever:
        """Over a ``VectorStoreIndex`` and its entity graph (given, or loaded from ``persist_dir``); ``embed_model``
        defaults to the index's."""
        from llama_index_kgplus._indexing import index_embed_model

        if kwargs.get("embed_model") is None:
            kwargs["embed_model"] = index_embed_model(index)
        if graph is None:
            if persist_dir is None:
                raise InputDataError("Give the index's EntityGraph, or the persist_dir it was saved in.")
            graph = EntityGraph.load(persist_dir, index_id=index.index_id)
        dense_top_k = GraphRetrievalSettings(**kwargs).dense_top_k
        return cls(graph, index.as_retriever(similarity_top_k=dense_top_k), index.docstore, **kwargs)

    @classmethod
    def from_persist_dir(cls, persist_dir: str | Path, embed_model: Any = None, **kwargs: Any) -> EntityGraphRetriever:
        """Over an index folder written by ``kgplus ingest --entities`` (``embed_model`` defaults to
        ``Settings.embed_model``)."""
        from llama_index_kgplus._indexing import load_index

        graph = EntityGraph.load(persist_dir)  # before the index: a folder without a graph fails fast
        index = load_index(persist_dir, embed_model=embed_model)
        if graph.index_id not in (None, index.index_id):
            EntityGraph.load(persist_dir, index_id=index.index_id)  # raises with the fix
        return cls.from_index(index, graph, embed_model=embed_model, **kwargs)

    from_defaults = from_index

    # ------------------------------------------------------------------ the walk

    def warm_up(self) -> None:
        """Build the matrices and the question dictionary now rather than on the first question."""
        self._matrices()
        _ = self.graph.entities.matcher
        if isinstance(self.dense_retriever, HybridRetriever):
            self.dense_retriever.warm_up()
        if self.settings.entity_embedding_top_k:
            self._name_vectors()

    def _matrices(self) -> _Compiled:
        if self._compiled is not None and self._compiled.revision == self.graph.revision:
            return self._compiled
        s, graph = self.settings, self.graph
        n_p, n_e = graph.n_passages, graph.n_entities
        df = graph.document_frequency()
        cap = np.inf if s.max_df is None else (max(s.max_df * n_p, s.min_df_cap) if s.max_df < 1 else s.max_df)
        # an entity linked to every passage (named, or their documents' title) tells no passage from another: its
        # IDF, log(passages / passages linked), is 0 (one title shared by a whole corpus); it is left out too
        mentions = graph.mention_matrix()
        linked = np.asarray(mentions.sum(axis=0)).ravel()
        keep = sp.diags(((df <= cap) & ((linked < n_p) | (n_p < 2))).astype(np.float64))
        links = mentions @ keep
        # passage -> entity: every link alike; entity -> passage: a passage about it weighs more
        about_links = graph.mention_matrix(about_only=True)
        about = about_links @ keep
        to_passages = (s.mention_weight * links + (s.about_weight - s.mention_weight) * about).T
        edges = graph.entity_edges()
        edge_types: dict[tuple[int, int], str] = {}
        for a, b, rel_type in edges:
            edge_types.setdefault((a, b), rel_type)
            edge_types.setdefault((b, a), rel_type)
        relations = sp.coo_matrix(
            (np.full(len(edges), s.entity_edge_weight), ([e[0] for e in edges], [e[1] for e in edges])),
            shape=(n_e, n_e),
        )
        relations = keep @ (relations + relations.T) @ keep
        adjacency = sp.bmat(
            [[None, s.mention_weight * links], [to_passages, relations]], format="csr", dtype=np.float64
        )
        if adjacency.shape != (n_p + n_e, n_p + n_e):  # bmat drops empty blocks' sizes
            adjacency = sp.csr_matrix((n_p + n_e, n_p + n_e))
        transition = transition_matrix(adjacency)
        specificity = keep.diagonal() / np.maximum(df, 1)
        self._compiled = _Compiled(
            transition=transition,
            backward=sp.csr_matrix(transition.T),
            dangling=np.asarray(transition.sum(axis=1)).ravel() == 0,
            specificity=specificity,
            passage_index={pid: i for i, pid in enumerate(graph.passage_ids)},
            entity_column={key: j for j, key in enumerate(graph.entity_keys)},
            about=about_links,
            edge_types=edge_types,
            n_passages=n_p,
            revision=graph.revision,
        )
        return self._compiled

    def question_entities(self, question: str) -> list[str]:
        """Keys of the entities a question names, in text order."""
        return list(dict.fromkeys(m.key for m in self.graph.entities.find(question)))

    def _embed_model(self) -> Any:
        if self.embed_model is None:
            from llama_index.core import Settings

            try:
                self.embed_model = Settings.embed_model
            except (ImportError, ValueError) as exc:  # LlamaIndex's default, OpenAI, without its package or key
                raise KGPlusSetupError(
                    "EntityGraphRetriever embeds the dense hits' sentences (sentence_seeds) and entity names "
                    "(entity_embedding_top_k): give embed_model= or set Settings.embed_model, or set both to 0."
                ) from exc
        return self.embed_model

    def _name_vectors(self) -> np.ndarray:
        """Unit vectors of the entities' names, in matrix order (embedded once per graph revision)."""
        if self._entity_vectors is None or self._entity_vectors[0] != self.graph.revision:
            names = [self.graph.entities.entities[k].name for k in self.graph.entity_keys]
            vectors = np.asarray(self._embed_model().get_text_embedding_batch(names), dtype=np.float32)
            self._entity_vectors = (self.graph.revision, unit_rows(vectors.reshape(len(names), -1)))
        return self._entity_vectors[1]

    def similar_entities(self, question: str) -> list[tuple[str, float]]:
        """``(key, cosine)`` of the entities whose names are nearest the question by embedding (the best
        ``entity_embedding_top_k`` above ``entity_similarity``), best first."""
        s = self.settings
        if not s.entity_embedding_top_k or self.graph.n_entities == 0:
            return []
        vectors = self._name_vectors()
        cosines = vectors @ unit(self._embed_model().get_query_embedding(question))
        best = _top_indices(cosines, s.entity_embedding_top_k)
        keys = self.graph.entity_keys
        return [(keys[j], float(cosines[j])) for j in best if cosines[j] >= s.entity_similarity]

    def sentence_entities(self, question: str, hits: list[NodeWithScore]) -> list[tuple[str, float]]:
        """``(key, cosine)`` of the entities named in the ``sentence_seeds`` sentences of ``hits`` nearest the
        question by embedding, each with its best sentence's cosine, in sentence order (best first)."""
        if not self.settings.sentence_seeds or not hits:
            return []
        sentences = [t for h in hits for t in split_sentences(h.node.get_content(metadata_mode=MetadataMode.NONE))]
        if not sentences:
            return []
        model = self._embed_model()
        vectors = unit_rows(np.asarray(model.get_text_embedding_batch(sentences), dtype=np.float32))
        cosines = vectors @ unit(model.get_query_embedding(question))
        best: dict[str, float] = {}
        for i in _top_indices(cosines, self.settings.sentence_seeds):
            for match in self.graph.entities.find(sentences[i]):
                best.setdefault(match.key, float(cosines[i]))
        return list(best.items())

    @dispatcher.span
    def _rank(self, question: str, dense: list[NodeWithScore]) -> list[NodeWithScore]:
        """The walk from the question's seeds, reported as events (the seeds, then the returned passages)."""
        hits = self._walk(question, dense)
        results = []
        for hit in hits:
            why = hit.node.metadata.get(METADATA_KEY) or {}
            results.append(
                {"node_id": hit.node.node_id, "score": hit.score, "graph_score": why.get("score"),
                 "dense_score": why.get("dense_score")}
            )  # fmt: skip
        dispatcher.event(EntityGraphWalkEvent(question=question, results=results))
        return hits

    def _walk(self, question: str, dense: list[NodeWithScore]) -> list[NodeWithScore]:
        s, c = self.settings, self._matrices()
        n_p = c.n_passages
        column = c.entity_column
        found = [k for k in self.question_entities(question) if k in column and c.specificity[column[k]] > 0]
        entity_seeds = np.zeros(c.transition.shape[0])
        for key in found:
            entity_seeds[n_p + column[key]] += c.specificity[column[key]]
        for key, cosine in self.similar_entities(question):
            if key not in found and key in column and c.specificity[column[key]] > 0:
                entity_seeds[n_p + column[key]] += cosine * c.specificity[column[key]]
                found.append(key)
        dense_scores: dict[str, float] = {h.node.node_id: float(h.score or 0.0) for h in dense}
        dense_seeds = np.zeros_like(entity_seeds)
        seeded = [h for h in dense if h.node.node_id in c.passage_index][: s.dense_seeds]
        bridging = []  # named by the sentences nearest the question, not by the question
        for key, cosine in self.sentence_entities(question, seeded):
            if key not in found and key in column and c.specificity[column[key]] > 0:
                entity_seeds[n_p + column[key]] += max(cosine, 0.0) * c.specificity[column[key]]
                bridging.append(key)
        weights = _seed_weights([float(h.score or 0.0) for h in dense], s.dense_seed_scaling)
        seeded_ids = {id(h) for h in seeded}
        for h, weight in zip(dense, weights):
            if id(h) in seeded_ids:
                dense_seeds[c.passage_index[h.node.node_id]] += weight
        share = s.dense_seed_weight if entity_seeds.sum() > 0 else 1.0
        seeds = (1 - share) * _normalised(entity_seeds) + share * _normalised(dense_seeds)
        dispatcher.event(
            EntityGraphSeedsEvent(
                question=question,
                entities=[self.graph.entities.entities[k].name for k in found],
                sentence_entities=[self.graph.entities.entities[k].name for k in bridging],
                passages=[h.node.node_id for h in seeded],
                dense_share=share,
            )
        )
        if seeds.sum() <= 0:
            return [NodeWithScore(node=h.node, score=h.score) for h in dense[: s.similarity_top_k]]
        scores = personalized_pagerank(
            c.transition,
            seeds,
            damping=s.damping,
            max_steps=s.max_hops,
            tol=s.walk_tolerance,
            transposed=c.backward,
            dangling=c.dangling,
            method="power" if s.max_hops is not None else s.walk,
        )
        passage_scores = scores[:n_p]
        graph_ranked = [
            (self.graph.passage_ids[p], float(passage_scores[p]))
            for p in _top_indices(passage_scores, 4 * s.similarity_top_k + len(dense_scores))
            if passage_scores[p] > 0
        ]
        dense_weight = s.dense_weight if found else s.dense_weight_no_entities
        ranked = fuse(graph_ranked, list(dense_scores.items()), s.fusion, s.rank_k, s.graph_weight, dense_weight)
        hits = []
        dense_nodes = {h.node.node_id: h.node for h in dense}
        graph_of = dict(graph_ranked)
        for pid, score in ranked[: s.similarity_top_k]:
            node = dense_nodes.get(pid) or self.docstore.get_node(pid, raise_error=False)
            if node is None:
                continue
            p = c.passage_index.get(pid)
            why = {
                "score": round(graph_of.get(pid, 0.0), 8),
                "dense_score": None if pid not in dense_scores else round(dense_scores[pid], 6),
                "question_entities": [self.graph.entities.entities[k].name for k in found],
                "entities": self._visited_entities(p, scores) if p is not None else [],
                "path": self._path(p, scores, seeds, bridging) if p is not None else [],
            }
            hits.append(NodeWithScore(node=_with_metadata(node, why), score=score))
        return self._with_parents(hits) if s.include_parents else hits

    # ------------------------------------------------------------------ explanations

    def _label(self, i: int) -> dict[str, str]:
        n_p = self._matrices().n_passages
        if i < n_p:
            return {"passage": self.graph.passage_ids[i], "doc_id": self.graph.passage_doc_ids[i]}
        return {"entity": self.graph.entities.entities[self.graph.entity_keys[i - n_p]].name}

    def _visited_entities(self, p: int, scores: np.ndarray, limit: int = 5) -> list[str]:
        n_p = self._matrices().n_passages
        linked = [(scores[n_p + key_j], key_j) for key_j in self._neighbours(p) if key_j >= 0]
        linked.sort(key=lambda t: -t[0])
        keys = self.graph.entity_keys
        return [self.graph.entities.entities[keys[j]].name for score, j in linked[:limit] if score > 0]

    def _neighbours(self, p: int) -> list[int]:
        """Entity columns linked to passage ``p``."""
        c = self._matrices()
        row = c.transition.indices[c.transition.indptr[p] : c.transition.indptr[p + 1]]
        return [int(i) - c.n_passages for i in row]

    def _path(
        self, target: int, scores: np.ndarray, seeds: np.ndarray, bridging: list[str], max_len: int = 6
    ) -> list[dict[str, Any]]:
        """The walk's most likely way to ``target``: from each node, step back to the not yet visited
        in-neighbour that sent it the most, until a seed that keeps more than it receives. The first element
        names the seed (``by`` "question" for a question entity, "sentence" for an entity of ``bridging``, named
        by a sentence of a dense hit, "dense" for a dense hit)."""
        c, s = self._matrices(), self.settings
        restart = seeds / seeds.sum()
        path, node, seen = [], target, {target}
        for _ in range(max_len):
            lo, hi = c.backward.indptr[node], c.backward.indptr[node + 1]
            sources = c.backward.indices[lo:hi]
            inflow = s.damping * scores[sources] * c.backward.data[lo:hi]
            inflow[np.isin(sources, list(seen))] = 0.0
            best = int(np.argmax(inflow)) if inflow.size else -1
            if best < 0 or inflow[best] <= 0 or (1 - s.damping) * restart[node] >= inflow[best]:
                break
            previous = int(sources[best])
            path.append({"from": self._label(previous), "edge": self._edge(previous, node), "to": self._label(node)})
            seen.add(previous)
            node = previous
        path.reverse()
        if restart[node] > 0:
            origin = self._label(node)
            if "doc_id" in origin:
                by = "dense"
            else:
                by = "sentence" if self.graph.entity_keys[node - c.n_passages] in bridging else "question"
            path.insert(0, {"seed": origin, "by": by})
        return path

    def _edge(self, a: int, b: int) -> str:
        c = self._matrices()
        n_p = c.n_passages
        if a >= n_p and b >= n_p:
            return c.edge_types.get((a - n_p, b - n_p), "RELATED")
        p, e = (a, b - n_p) if a < n_p else (b, a - n_p)
        return f"{MENTIONS} (about)" if c.about[p, e] else MENTIONS

    def _with_parents(self, hits: list[NodeWithScore]) -> list[NodeWithScore]:
        seen = {h.node.node_id for h in hits}
        out = []
        for hit in hits:
            out.append(hit)
            parent = hit.node.relationships.get(NodeRelationship.PARENT)
            parent_id = getattr(parent, "node_id", None)
            if parent_id and parent_id not in seen:
                node = self.docstore.get_node(parent_id, raise_error=False)
                if node is not None:
                    seen.add(parent_id)
                    out.append(NodeWithScore(node=node, score=hit.score))
        return out

    # ------------------------------------------------------------------ BaseRetriever

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        question = query_bundle.query_str
        rounds = [self._rank(question, self.dense_retriever.retrieve(query_bundle))]
        answers: list[str] = []
        for _ in range(self.settings.llm_steps):
            hits = self._fused(rounds, answers)
            answers.append(_first_line(self._step_llm().complete(self._step_text(question, hits)).text))
            query = QueryBundle(" ".join([question, *answers]))
            rounds.append(self._rank(query.query_str, self.dense_retriever.retrieve(query)))
        return self._fused(rounds, answers)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        question = query_bundle.query_str
        dense = await self.dense_retriever.aretrieve(query_bundle)
        rounds = [await asyncio.to_thread(self._rank, question, dense)]
        answers: list[str] = []
        for _ in range(self.settings.llm_steps):
            hits = self._fused(rounds, answers)
            answers.append(_first_line((await self._step_llm().acomplete(self._step_text(question, hits))).text))
            query = QueryBundle(" ".join([question, *answers]))
            dense = await self.dense_retriever.aretrieve(query)
            rounds.append(await asyncio.to_thread(self._rank, query.query_str, dense))
        return self._fused(rounds, answers)

    # ------------------------------------------------------------------ query-time LLM steps

    def _step_llm(self) -> Any:
        from llama_index.core import Settings

        return self.llm or Settings.llm

    def _step_text(self, question: str, hits: list[NodeWithScore]) -> str:
        context = "\n".join(
            f"[{i}] {h.node.get_content(metadata_mode=MetadataMode.LLM)[:_STEP_PASSAGE_CHARS]}"
            for i, h in enumerate(hits[: self.settings.llm_context], 1)
        )
        return self.step_prompt.format(context_str=context, query_str=question)

    def _fused(self, rounds: list[list[NodeWithScore]], answers: list[str]) -> list[NodeWithScore]:
        """The hits of one round as they are; of several, fused by reciprocal rank, each passage's first hit
        kept with the LLM's ``answers`` in its ``metadata["entity_graph"]``."""
        if len(rounds) == 1:
            return rounds[0]
        from llama_index_kgplus.glossary import reciprocal_rank_fusion

        return [
            NodeWithScore(
                node=_with_metadata(
                    hit.node, {**(hit.node.metadata.get(METADATA_KEY) or {}), "llm_answers": list(answers)}
                ),
                score=hit.score,
            )
            for hit in reciprocal_rank_fusion(rounds, top_n=self.settings.similarity_top_k)
        ]

    def _get_prompts(self) -> PromptDictType:
        return {"step_prompt": self.step_prompt}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        if "step_prompt" in prompts:
            self.step_prompt = prompts["step_prompt"]


def fuse(
    graph: list[tuple[str, float]],
    dense: list[tuple[str, float]],
    fusion: str = "rank",
    rank_k: float = 1.0,
    graph_weight: float = 1.0,
    dense_weight: float = 0.0,
) -> list[tuple[str, float]]:
    """One ranking from the walk's (best first) and the dense search's: weighted reciprocal ranks
    (``fusion="rank"``: ``w / (rank_k + rank)``, so the top of either list makes the cut) or weighted scores,
    each scaled to [0, 1] (``fusion="score"``). Equal scores share a rank; ties (e.g. passages the walk never
    reached, or reached alike) go by the dense score, so with ``dense_weight=0`` the dense hits fill the places the
    walk leaves."""
    fused: dict[str, float] = {pid: 0.0 for pid, _ in dense}
    for weight, ranking in ((graph_weight, graph), (dense_weight, dense)):
        if not ranking or weight == 0:
            continue
        if fusion == "rank":
            parts = {pid: weight / (rank_k + rank) for pid, rank in _ranks(ranking).items()}
        else:
            values = [v for _, v in ranking]
            low, high = (0.0, max(values)) if ranking is graph else (min(values), max(values))
            parts = {pid: weight * ((v - low) / (high - low) if high > low else 1.0) for pid, v in ranking}
        for pid, part in parts.items():
            fused[pid] = fused.get(pid, 0.0) + part
    dense_score = dict(dense)
    return sorted(fused.items(), key=lambda item: (-item[1], -dense_score.get(item[0], -np.inf), item[0]))


def _ranks(ranking: list[tuple[str, float]]) -> dict[str, int]:
    """Rank of each id by score, best 1; equal scores (to 1e-9, relative) share the best rank of their group, so
    that the other list of a fusion orders them (e.g. passages the walk reaches alike)."""
    ordered = sorted(ranking, key=lambda item: -item[1])
    ranks: dict[str, int] = {}
    group_rank, group_score = 0, None
    for rank, (pid, value) in enumerate(ordered, 1):
        if group_score is None or not math.isclose(value, group_score, rel_tol=1e-9):
            group_rank, group_score = rank, value
        ranks[pid] = group_rank
    return ranks


def _seed_weights(scores: list[float], scaling: str) -> list[float]:
    """Seed weights of dense hits: their scores, or their scores min-max scaled over all the hits; every weight
    is kept above zero, so each seeded hit seeds."""
    if scaling == "minmax" and scores:
        low, high = min(scores), max(scores)
        scores = [(v - low) / (high - low) if high > low else 1.0 for v in scores]
    return [max(v, 1e-6) for v in scores]


def _normalised(values: np.ndarray) -> np.ndarray:
    total = values.sum()
    return values / total if total > 0 else values


def _top_indices(values: np.ndarray, k: int) -> np.ndarray:
    if values.size <= k:
        return np.argsort(-values)
    part = np.argpartition(-values, k)[:k]
    return part[np.argsort(-values[part])]


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.strip().splitlines() if line.strip()), "")


def _with_metadata(node: Any, why: dict[str, Any]) -> Any:
    """A copy of ``node`` carrying ``why`` (the docstore's node is left as it was); hidden from the LLM and
    the embedding."""
    excluded_llm = [k for k in node.excluded_llm_metadata_keys if k != METADATA_KEY] + [METADATA_KEY]
    excluded_embed = [k for k in node.excluded_embed_metadata_keys if k != METADATA_KEY] + [METADATA_KEY]
    return node.model_copy(
        update={
            "metadata": {**node.metadata, METADATA_KEY: why},
            "excluded_llm_metadata_keys": excluded_llm,
            "excluded_embed_metadata_keys": excluded_embed,
        }
    )
