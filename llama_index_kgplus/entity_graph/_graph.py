"""``EntityGraph``: passages, the entities they mention, and how entities relate, kept beside a vector index.

Nodes are passages (the index's chunks, by node id) and entities (by key). Edges: passage ``MENTIONS`` entity
(with the number of mentions, and ``about`` where the passage's document is about the entity: its title or
its lead entity), entity
``SAME_AS`` entity (an alias of one is the other's name), and the relationships of a knowledge graph or of the
LLM extraction between entities. Mentions are numpy arrays, so the graph loads, edits and turns into a
sparse matrix without a Python loop over edges.

It is saved as one file, ``entity_graph.npz`` (numeric arrays and one JSON member; no pickle), beside the
index; documents are added or deleted by document id, like the docstore. :meth:`EntityGraph.write_to_store`
copies it into any LlamaIndex ``PropertyGraphStore``.

Example:

```python
graph = EntityGraph.from_nodes(index.docstore.docs.values(), linker.dictionary_)
graph.persist("./index", index_id=index.index_id)
graph = EntityGraph.load("./index", index_id=index.index_id)
graph.delete_ref_doc("Lothair II")
```
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from llama_index.core.schema import BaseNode

from llama_index_kgplus._files import atomic_open
from llama_index_kgplus._gc import paused_gc
from llama_index_kgplus.entity_graph._dictionary import SAME_AS, Entity, EntityDictionary
from llama_index_kgplus.entity_graph._linker import ENTITIES_KEY
from llama_index_kgplus.entity_graph._sources import ENTITY_SOURCES
from llama_index_kgplus.entity_graph._synonyms import alink_similar_entities, link_similar_entities
from llama_index_kgplus.errors import InputDataError

GRAPH_FILE = "entity_graph.npz"
FORMAT = "kgplus-entity-graph"
FORMAT_VERSION = 1
#: Version of the entity pipeline a graph was linked with: the entity key rule (``._names``) and the records the
#: linker writes. Raised only when a graph linked before would be read or extended wrongly (its keys would no longer
#: match the names of new passages); a file without it was written before it was recorded, by version 1.
ENTITY_PIPELINE = 1
MENTIONS = "MENTIONS"


class EntityGraph:
    """The passage-entity graph of an index.

    Attributes: ``entities`` (:class:`EntityDictionary`), ``passage_ids`` and ``passage_doc_ids`` (parallel
    lists), ``index_id`` (the vector index it belongs to, when known), ``revision`` (counts the edits, so a
    retriever knows when to rebuild its matrices), ``entity_pipeline`` (the version of the entity pipeline it was
    linked with; the file records it, with the entity sources). Build it with :meth:`from_nodes` or :meth:`load`.

    Example:

    ```python
    from llama_index_kgplus import EntityGraph, EntityLinker, build_index, load_corpus

    linker = EntityLinker.from_defaults(sources=["titles"])
    index = build_index(load_corpus("docs.jsonl"), "./index", extra_transformations=[linker])
    graph = EntityGraph.from_nodes(index.docstore.docs.values(), linker.dictionary_)
    graph.persist("./index")
    print(EntityGraph.load("./index").n_entities)
    ```
    """

    def __init__(self) -> None:
        self.entities = EntityDictionary()
        self.index_id: str | None = None
        self.revision = 0
        self.entity_pipeline = ENTITY_PIPELINE
        self.passage_ids: list[str] = []
        self.passage_doc_ids: list[str] = []
        self._entity_keys: list[str] = []
        self._mention_passage = np.zeros(0, dtype=np.int64)
        self._mention_entity = np.zeros(0, dtype=np.int64)
        self._mention_count = np.zeros(0, dtype=np.int32)
        self._mention_about = np.zeros(0, dtype=bool)

    # ------------------------------------------------------------------ sizes and lookups

    @property
    def n_passages(self) -> int:
        """Number of passages in the graph."""
        return len(self.passage_ids)

    @property
    def n_entities(self) -> int:
        """Number of entities in the graph."""
        return len(self._entity_keys)

    @property
    def n_mentions(self) -> int:
        """Number of passage-entity links (mentions)."""
        return int(self._mention_passage.size)

    @property
    def n_linked_passages(self) -> int:
        """Passages linked to at least one entity."""
        return int(np.unique(self._mention_passage).size)

    @property
    def sources(self) -> list[str]:
        """The entity sources its entities come from (``titles``, ``ner``, ...), in the order of ``--entities``."""
        found = {source for entity in self.entities for source in entity.sources}
        return [s for s in ENTITY_SOURCES if s in found]

    @property
    def entity_keys(self) -> list[str]:
        """Entity keys in matrix order (column ``j`` of :meth:`mention_matrix` is ``entity_keys[j]``)."""
        return self._entity_keys

    def __repr__(self) -> str:
        return f"EntityGraph({self.n_passages} passages, {self.n_entities} entities, {self.n_mentions} mentions)"

    def passage_entities(self, passage: int) -> list[tuple[str, int, bool]]:
        """``(entity key, mentions, is_about)`` of passage number ``passage``."""
        rows = np.flatnonzero(self._mention_passage == passage)
        return [
            (self._entity_keys[self._mention_entity[i]], int(self._mention_count[i]), bool(self._mention_about[i]))
            for i in rows
        ]

    # ------------------------------------------------------------------ building

    @classmethod
    def from_nodes(
        cls, nodes: Iterable[BaseNode], entities: EntityDictionary, *, index_id: str | None = None
    ) -> EntityGraph:
        """The graph of ``nodes`` linked by :class:`EntityLinker` and the dictionary they were linked with.
        Nodes without ``metadata["entities"]`` and summary nodes (``metadata["level"]`` above 0) are not
        passages."""
        graph = cls()
        graph.index_id = index_id
        graph.entities.merge(entities)
        graph._entity_keys = list(graph.entities.entities)
        graph._append(list(nodes))
        return graph

    def append_passages(self, nodes: Sequence[BaseNode]) -> int:
        """Append the linked ``nodes`` of documents new to the graph as passages, with no other change (a
        streaming ingest appends each batch, linked with the dictionary the graph was made with:
        ``from_nodes([], linker.dictionary_)``); returns how many passages were added. :meth:`upsert_nodes` also
        replaces documents and adds entities."""
        added = self._append(nodes)
        self.revision += 1
        return added

    def _append(self, nodes: Sequence[BaseNode]) -> int:
        column = {key: j for j, key in enumerate(self._entity_keys)}
        rows_p, rows_e, counts, about = [], [], [], []
        added = 0
        for node in nodes:
            records = node.metadata.get(ENTITIES_KEY)
            if not isinstance(records, list) or int(node.metadata.get("level") or 0) > 0:
                continue  # not linked, or a summary node (which may inherit its children's shared metadata)
            p = len(self.passage_ids)
            self.passage_ids.append(node.node_id)
            self.passage_doc_ids.append(node.ref_doc_id or node.node_id)
            added += 1
            for record in records:
                entity_id = record.get("id") if isinstance(record, dict) else None
                j = column.get(entity_id) if isinstance(entity_id, str) else None
                if j is None:
                    continue  # an entity the dictionary dropped (e.g. a stop name)
                rows_p.append(p)
                rows_e.append(j)
                counts.append(max(int(record.get("count") or 0), 0))
                about.append(bool(record.get("about")))
        self._extend_mentions(rows_p, rows_e, counts, about)
        return added

    def _extend_mentions(self, rows_p: list[int], rows_e: list[int], counts: list[int], about: list[bool]) -> None:
        if not rows_p:
            return
        self._mention_passage = np.concatenate([self._mention_passage, np.asarray(rows_p, dtype=np.int64)])
        self._mention_entity = np.concatenate([self._mention_entity, np.asarray(rows_e, dtype=np.int64)])
        self._mention_count = np.concatenate([self._mention_count, np.asarray(counts, dtype=np.int32)])
        self._mention_about = np.concatenate([self._mention_about, np.asarray(about, dtype=bool)])

    # ------------------------------------------------------------------ incremental updates

    def delete_ref_doc(self, ref_doc_id: str) -> int:
        """Delete the passages of one document (see :meth:`delete_ref_docs`)."""
        return self.delete_ref_docs([ref_doc_id])

    def delete_ref_docs(self, ref_doc_ids: Iterable[str]) -> int:
        """Delete the passages of these documents, and the entities that only they gave (their title, or
        names only their passages yielded); returns how many passages were deleted."""
        gone = set(ref_doc_ids)
        removed = self._drop_passages(gone)
        self._drop_entities(self.entities.forget_documents(gone))
        self.revision += 1
        return removed

    def upsert_nodes(self, nodes: Sequence[BaseNode], entities: EntityDictionary, *, docstore: Any = None) -> int:
        """Add linked ``nodes`` (replacing every passage of their documents) with the dictionary they were
        linked with (``EntityLinker.dictionary_``). Entities new to the graph are then also looked up in the
        older passages, whose text comes from ``docstore`` (e.g. ``index.docstore``); without one, only new
        passages link to them. Returns how many passages were added."""
        docs = {n.ref_doc_id or n.node_id for n in nodes}
        self._drop_passages(docs)
        before = set(self._entity_keys)
        self.entities.forget_documents(docs)  # the new version of a document re-adds what it still gives
        self.entities.merge(entities)
        self._sync_entity_keys()
        old_passages = self.n_passages
        added = self._append(nodes)
        new_keys = [k for k in self._entity_keys if k not in before]
        if new_keys and docstore is not None and old_passages:
            self._link_older_passages(new_keys, old_passages, docstore)
        self.revision += 1
        return added

    def _link_older_passages(self, keys: list[str], n_old: int, docstore: Any) -> None:
        from llama_index.core.schema import MetadataMode

        subset = EntityDictionary()
        subset.entities = {k: self.entities.entities[k] for k in keys}
        column = {key: j for j, key in enumerate(self._entity_keys)}
        rows_p, rows_e, counts = [], [], []
        for p in range(n_old):
            node = docstore.get_node(self.passage_ids[p], raise_error=False)
            if node is None:
                continue
            found: dict[str, int] = {}
            for match in subset.find(node.get_content(MetadataMode.NONE)):
                found[match.key] = found.get(match.key, 0) + 1
            for key, n in found.items():
                rows_p.append(p)
                rows_e.append(column[key])
                counts.append(n)
        self._extend_mentions(rows_p, rows_e, counts, [False] * len(rows_p))

    def _drop_passages(self, doc_ids: set[str]) -> int:
        keep = np.asarray([d not in doc_ids for d in self.passage_doc_ids], dtype=bool)
        removed = int((~keep).sum())
        if not removed:
            return 0
        new_index = np.cumsum(keep) - 1
        self.passage_ids = [p for p, k in zip(self.passage_ids, keep) if k]
        self.passage_doc_ids = [d for d, k in zip(self.passage_doc_ids, keep) if k]
        rows = keep[self._mention_passage]
        self._filter_mentions(rows)
        self._mention_passage = new_index[self._mention_passage]
        return removed

    def _drop_entities(self, keys: Iterable[str]) -> None:
        if keys:
            self.entities.remove(keys)
        self._sync_entity_keys()

    def _sync_entity_keys(self) -> None:
        """Make the matrix columns follow the dictionary: keep the order of surviving keys, append new ones."""
        alive = self.entities.entities
        keep = np.asarray([k in alive for k in self._entity_keys], dtype=bool)
        if not keep.all():
            new_index = np.cumsum(keep) - 1
            self._filter_mentions(keep[self._mention_entity])
            self._mention_entity = new_index[self._mention_entity]
            self._entity_keys = [k for k, kept in zip(self._entity_keys, keep) if kept]
        known = set(self._entity_keys)
        self._entity_keys += [k for k in alive if k not in known]

    def _filter_mentions(self, rows: np.ndarray) -> None:
        self._mention_passage = self._mention_passage[rows]
        self._mention_entity = self._mention_entity[rows]
        self._mention_count = self._mention_count[rows]
        self._mention_about = self._mention_about[rows]

    # ------------------------------------------------------------------ matrices

    def mention_matrix(self, about_only: bool = False) -> sp.csr_matrix:
        """Passages x entities: 1 where the passage is linked to the entity (``about_only``: where the
        passage's document is about the entity)."""
        rows = self._mention_about if about_only else np.ones(self.n_mentions, dtype=bool)
        matrix = sp.coo_matrix(
            (np.ones(int(rows.sum())), (self._mention_passage[rows], self._mention_entity[rows])),
            shape=(self.n_passages, self.n_entities),
        ).tocsr()
        matrix.data[:] = 1.0  # one link per pair, however many records named it
        return matrix

    def document_frequency(self) -> np.ndarray:
        """How many passages name each entity (``about`` links without a mention not counted)."""
        named = self._mention_count > 0
        pairs = np.unique(np.stack([self._mention_passage[named], self._mention_entity[named]]), axis=1)
        return np.bincount(pairs[1], minlength=self.n_entities) if pairs.size else np.zeros(self.n_entities, int)

    def entity_edges(self) -> list[tuple[int, int, str]]:
        """``(entity column, entity column, type)``: relationships, then ``SAME_AS`` pairs."""
        column = {key: j for j, key in enumerate(self._entity_keys)}
        edges = [
            (column[a], column[b], t) for a, b, t in sorted(self.entities.relationships) if a in column and b in column
        ]
        edges += [(column[a], column[b], SAME_AS) for a, b in self.entities.same_as() if a in column and b in column]
        return edges

    def link_similar_entities(self, embed_model: Any, *, threshold: float = 0.8) -> int:
        """``SIMILAR_TO`` edges between entities whose names embed at least ``threshold`` apart (cosine);
        returns the number of pairs added (see :mod:`._synonyms`)."""
        return link_similar_entities(self, embed_model, threshold=threshold)

    async def alink_similar_entities(self, embed_model: Any, *, threshold: float = 0.8) -> int:
        """Async :meth:`link_similar_entities`."""
        return await alink_similar_entities(self, embed_model, threshold=threshold)

    # ------------------------------------------------------------------ persistence

    def persist(self, persist_dir: str | Path, *, index_id: str | None = None) -> Path:
        """Write ``entity_graph.npz`` into ``persist_dir`` (atomically: a crash leaves the old file; in an index
        folder, holding its writer lock and stamped in its ``ingest.json`` with the other files of the index)."""
        from llama_index_kgplus._indexing import write_index_file

        if index_id is not None:
            self.index_id = index_id
        return write_index_file(persist_dir, GRAPH_FILE, self.write_file)

    def write_file(self, path: Path) -> None:
        """Write the graph to the file ``path`` (atomically), and nothing else: :meth:`persist` is what puts it in
        an index folder, stamped with the index's other files."""
        keys = self._entity_keys
        column = {key: j for j, key in enumerate(keys)}
        entities = [self.entities.entities[k] for k in keys]
        header = {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "index_id": self.index_id,
            "entity_pipeline": {"version": self.entity_pipeline, "sources": self.sources},
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "passage_ids": self.passage_ids,
            "passage_doc_ids": self.passage_doc_ids,
            "entity_keys": keys,
            "entity_names": [e.name for e in entities],
            "entity_kg_ids": [e.kg_id for e in entities],
            "entity_sources": [[j, s, sorted(d)] for j, e in enumerate(entities) for s, d in sorted(e.sources.items())],
            "aliases": [[j, a] for j, e in enumerate(entities) for a in sorted(e.aliases)],
            "relationships": [[column[a], column[b], t] for a, b, t in sorted(self.entities.relationships)],
        }
        with atomic_open(path) as handle:
            np.savez(
                handle,
                header=np.frombuffer(json.dumps(header, ensure_ascii=False).encode("utf-8"), dtype=np.uint8),
                mention_passage=self._mention_passage,
                mention_entity=self._mention_entity,
                mention_count=self._mention_count,
                mention_about=self._mention_about,
            )

    @classmethod
    def exists(cls, persist_dir: str | Path) -> bool:
        """Whether ``persist_dir`` holds an entity graph file."""
        return (Path(persist_dir) / GRAPH_FILE).is_file()

    @classmethod
    def require(cls, persist_dir: str | Path) -> Path:
        """The entity graph file of ``persist_dir``; one clear error, with the fix, when there is none."""
        path = Path(persist_dir) / GRAPH_FILE
        if not path.is_file():
            raise InputDataError(
                f"{persist_dir} has no entity graph (it was built without --entities): {_fix(persist_dir)}."
            )
        return path

    @classmethod
    def load(cls, persist_dir: str | Path, *, index_id: str | None = None) -> EntityGraph:
        """Read ``entity_graph.npz`` of ``persist_dir``; with ``index_id``, check it belongs to that index."""
        path, fix = cls.require(persist_dir), _fix(persist_dir)
        try:
            with np.load(path, allow_pickle=False) as data, paused_gc():
                header = json.loads(bytes(data["header"]).decode("utf-8"))
                arrays = {k: data[k] for k in ("mention_passage", "mention_entity", "mention_count", "mention_about")}
        except (OSError, ValueError, KeyError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputDataError(f"{path} is not a readable entity graph ({exc}): {fix}.") from exc
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise InputDataError(f"{path} is not an entity graph written by this pack: {fix}.")
        if header.get("version") != FORMAT_VERSION:
            raise InputDataError(
                f"{path} was written by another version of this pack (format {header.get('version')}, this one "
                f"reads {FORMAT_VERSION}): {fix}."
            )
        pipeline = header.get("entity_pipeline") or {}
        version = pipeline.get("version", 1) if isinstance(pipeline, dict) else None
        if version != ENTITY_PIPELINE:
            sources = pipeline.get("sources") if isinstance(pipeline, dict) else None
            fix = _fix(persist_dir, sources if isinstance(sources, list) and sources else None)
            age = "an older" if isinstance(version, int) and version < ENTITY_PIPELINE else "another"
            raise InputDataError(
                f"{path} was linked by {age} entity pipeline (version {version}; this pack links with version "
                f"{ENTITY_PIPELINE}): {fix}."
            )
        if index_id is not None and header.get("index_id") not in (None, index_id):
            raise InputDataError(f"{path} belongs to another index than the one in {persist_dir}: {fix}.")
        with paused_gc():
            return cls._from_header(header, arrays)

    @classmethod
    def _from_header(cls, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> EntityGraph:
        graph = cls()
        graph.index_id = header.get("index_id")
        graph.passage_ids = list(header["passage_ids"])
        graph.passage_doc_ids = list(header["passage_doc_ids"])
        keys = list(header["entity_keys"])
        entities = [
            Entity(key=k, name=n, kg_id=c) for k, n, c in zip(keys, header["entity_names"], header["entity_kg_ids"])
        ]
        for j, source, docs in header["entity_sources"]:
            entities[j].sources[source] = set(docs)
        for j, alias in header["aliases"]:
            entities[j].aliases.add(alias)
        graph.entities.entities = {e.key: e for e in entities}
        graph.entities.relationships = {(keys[a], keys[b], t) for a, b, t in header["relationships"]}
        graph._entity_keys = keys
        graph._mention_passage = arrays["mention_passage"].astype(np.int64)
        graph._mention_entity = arrays["mention_entity"].astype(np.int64)
        graph._mention_count = arrays["mention_count"].astype(np.int32)
        graph._mention_about = arrays["mention_about"].astype(bool)
        n_p, n_e = len(graph.passage_ids), len(keys)
        if (
            graph._mention_passage.size and (graph._mention_passage.max() >= n_p or graph._mention_entity.max() >= n_e)
        ) or len(graph.passage_doc_ids) != n_p:
            raise InputDataError("The entity graph file is inconsistent (mentions point past its tables): rebuild it.")
        return graph

    # ------------------------------------------------------------------ property graph stores

    def write_to_store(self, store: Any, *, docstore: Any = None, batch_size: int = 1000) -> dict[str, int]:
        """Copy the graph into a LlamaIndex ``PropertyGraphStore`` (see :func:`write_entity_graph`)."""
        from llama_index_kgplus.entity_graph._store import write_entity_graph

        return write_entity_graph(self, store, docstore=docstore, batch_size=batch_size)

    def mentions(self) -> list[tuple[str, str, int, bool]]:
        """``(passage id, entity key, count, is_about)`` of every link."""
        keys = self._entity_keys
        return [
            (self.passage_ids[p], keys[e], int(c), bool(t))
            for p, e, c, t in zip(self._mention_passage, self._mention_entity, self._mention_count, self._mention_about)
        ]


def _fix(persist_dir: str | Path, sources: Sequence[str] | None = None) -> str:
    return f"re-run `kgplus ingest DOCS --index {persist_dir} --entities {','.join(sources) if sources else 'SOURCES'}`"
