"""The structured ingest in batches: the entity graph and the hierarchy of ``kgplus ingest --entities ...
--hierarchy semantic`` built as the vectors are, batch by batch, so memory stays flat in the corpus size.

The entity dictionary is known before any chunk is linked. The dictionary sources (``titles``, ``kg``,
``glossary``) give it from the documents, in one pass over them (their titles). The reading sources (``ner``,
``llm``) read every chunk first: a first pass splits each batch and records what they find in a SQLite file of
the folder (``.ingest-readings.sqlite``, removed at the end), and the dictionary is fitted on those records. Then
each batch is split, embedded, linked with that dictionary (:meth:`EntityLinker.link`, with the batch's recorded
readings) and summarised (the semantic builder keeps the chunks of a document together, and a batch holds whole
documents), and its passages are appended to the entity graph's arrays before it is written
(:mod:`llama_index_kgplus._streaming`, which resumes after a crash; the reading pass then runs again). The graph
and ``hierarchy.json`` are sealed and switched in with the index.

What differs from the ingest of every chunk at once: the semantic builder learns its similarity threshold per
batch rather than over the whole corpus (``hierarchy.json`` records the median of the batches' thresholds, with
which a sync clusters the documents it re-indexes), and RAPTOR, which clusters across documents, is not streamed
(:func:`streams_structure`).

Example:

```python
linker = EntityLinker.from_defaults(sources=["titles"])
index, graph, manifest = stream_structured_index(load_corpus("big.jsonl", stream=True), Path("./index"),
                                                 embed_model=embed_model, linker=linker, builders=[])
```
"""

from __future__ import annotations

import hashlib
import json
import operator
import sqlite3
import statistics
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import islice
from pathlib import Path
from typing import Any

from llama_index.core import Document
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import BaseNode, NodeRelationship, RelatedNodeInfo, TextNode, TransformComponent
from tqdm.auto import tqdm

from llama_index_kgplus._files import json_writer
from llama_index_kgplus._indexing import (
    DEFAULT_CHUNK_OVERLAP,
    DEFAULT_CHUNK_SIZE,
    FileWriter,
    PackVectorStoreIndex,
    set_structured_stream,
    stream_index,
)
from llama_index_kgplus._sqlitedoc import SQLiteDocumentStore
from llama_index_kgplus._streaming import DEFAULT_BATCH_SIZE, READINGS_FILE
from llama_index_kgplus._syncing import recorded_settings
from llama_index_kgplus._text import sentence_splitter
from llama_index_kgplus.entity_graph import GRAPH_FILE, EntityGraph, EntityLinker
from llama_index_kgplus.entity_graph._linker import ENTITIES_KEY, RELATIONSHIPS_KEY
from llama_index_kgplus.entity_graph._sources import READING_SOURCES
from llama_index_kgplus.errors import InputDataError
from llama_index_kgplus.hierarchy import SemanticChunkingSummaryNodeBuilder
from llama_index_kgplus.hierarchy._base import BaseSummaryNodeBuilder
from llama_index_kgplus.hierarchy._retriever import MANIFEST_FILE, hierarchy_manifest

__all__ = ["stream_structured_index", "streams_structure"]

_READ_KEYS = (ENTITIES_KEY, RELATIONSHIPS_KEY)
_SCAN_BATCH = 10_000


def streams_structure(builders: Sequence[Any]) -> bool:
    """Whether an ingest with these summary builders can run in batches: none, or one semantic builder."""
    return len(builders) <= 1 and all(isinstance(b, SemanticChunkingSummaryNodeBuilder) for b in builders)


def stream_structured_index(
    documents: Iterable[Document],
    persist_dir: Path,
    *,
    embed_model: BaseEmbedding,
    linker: Any | None,
    builders: Sequence[Any],
    vector_store: Any = "lancedb",
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
    similar_entities: float | None = None,
    settings: Mapping[str, Any] | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    show_progress: bool = True,
) -> tuple[PackVectorStoreIndex, EntityGraph | None, dict[str, Any] | None]:
    """Ingest ``documents`` into ``vector_store`` (a LanceDB table of ``persist_dir``, or a server store that returns
    its nodes) in batches with their entity graph (``linker``) and hierarchy (``builders``: none or one semantic
    builder), and switch in all three; returns the index, its graph and its ``hierarchy.json``.
    ``similar_entities``: the cosine of ``SIMILAR_TO`` edges; ``settings``: the entity and hierarchy settings
    ``ingest.json`` records for a sync. The caller holds the folder's writer lock."""
    if not streams_structure(builders):
        raise InputDataError("RAPTOR clusters the chunks of every document at once: it cannot run in batches.")
    if linker is not None and iter(documents) is documents:
        raise InputDataError(
            "The entity dictionary is read from the documents before they are indexed: give documents that can be "
            "read twice (a list, or load_corpus(path, stream=True)), not a one-pass iterator."
        )
    reads = linker is not None and any(source in READING_SOURCES for source in linker.sources)
    persist_dir.mkdir(parents=True, exist_ok=True)
    readings = _Readings(persist_dir / READINGS_FILE) if reads else None
    structure = _BatchStructure(linker=linker, builder=builders[0] if builders else None, readings=readings)

    def derived_files(index: PackVectorStoreIndex) -> dict[str, FileWriter]:
        structure.finish(index, embed_model, similar_entities)
        files: dict[str, FileWriter] = {}
        if structure.graph_ is not None:
            files[GRAPH_FILE] = structure.graph_.write_file
        if structure.manifest_ is not None:
            files[MANIFEST_FILE] = json_writer(structure.manifest_, indent=1, default=str)
        return files

    try:
        if readings is not None:
            splitter = sentence_splitter(chunk_size, chunk_overlap)
            _read_corpus(documents, linker, splitter, readings, batch_size, show_progress)
        if linker is not None:
            linker.fit(readings if readings is not None else documents)
        index = stream_index(
            documents, persist_dir, embed_model, chunk_size, chunk_overlap, vector_store, show_progress, batch_size,
            per_batch=[structure], derived_files=derived_files, settings=settings,
        )  # fmt: skip
    finally:
        if readings is not None:
            readings.remove()
    return index, structure.graph_, structure.manifest_


def _read_corpus(
    documents: Iterable[Document],
    linker: Any,
    splitter: TransformComponent,
    readings: _Readings,
    batch_size: int,
    show_progress: bool,
) -> None:
    """The reading pass: split each batch and record what the reading sources find in its chunks."""
    iterator = iter(documents)
    total = operator.length_hint(documents) or None
    with tqdm(total=total, desc="Reading entities", unit="doc", disable=not show_progress) as bar:
        while batch := list(islice(iterator, batch_size)):
            readings.put(linker.read(splitter(batch), show_progress=False))
            bar.update(len(batch))


class _Readings:
    """What the reading sources found in each chunk of the corpus, kept in a SQLite file between the reading pass
    and the linking pass, in corpus order; a chunk is known by its document, its place in it and its text."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._unlink()  # an interrupted ingest's
        self._db = sqlite3.connect(path)
        self._db.execute("CREATE TABLE readings (key TEXT PRIMARY KEY, value TEXT NOT NULL)")

    @staticmethod
    def _keys(chunks: Sequence[BaseNode]) -> list[str]:
        places: dict[str, int] = {}
        keys = []
        for chunk in chunks:
            doc_id = chunk.ref_doc_id or chunk.node_id
            places[doc_id] = places.get(doc_id, -1) + 1
            digest = hashlib.sha256(chunk.get_content().encode("utf-8")).hexdigest()[:16]
            keys.append(f"{doc_id}\x1f{places[doc_id]}\x1f{digest}")
        return keys

    def put(self, chunks: Sequence[BaseNode]) -> None:
        rows = [
            (key, json.dumps({"doc_id": c.ref_doc_id or c.node_id, "title": c.metadata.get("title"),
                              **{k: c.metadata[k] for k in _READ_KEYS if k in c.metadata}}))
            for key, c in zip(self._keys(chunks), chunks)
        ]  # fmt: skip
        with self._db:
            self._db.executemany("INSERT OR REPLACE INTO readings VALUES (?, ?)", rows)

    def restore(self, chunks: Sequence[BaseNode]) -> None:
        """Put back in ``chunks``' metadata what was read in them (nothing for a chunk that was not read)."""
        for key, chunk in zip(self._keys(chunks), chunks):
            row = self._db.execute("SELECT value FROM readings WHERE key = ?", (key,)).fetchone()
            record = json.loads(row[0]) if row else {}
            for name in _READ_KEYS:
                if name in record:
                    chunk.metadata[name] = record[name]

    def __iter__(self) -> Iterator[BaseNode]:
        """One text-less node per chunk read, with its document, title and readings (what :meth:`fit` reads)."""
        for (value,) in self._db.execute("SELECT value FROM readings ORDER BY rowid"):
            record = json.loads(value)
            metadata = {k: record[k] for k in ("title", *_READ_KEYS) if record.get(k) is not None}
            source = {NodeRelationship.SOURCE: RelatedNodeInfo(node_id=record["doc_id"])}
            yield TextNode(text="", metadata=metadata, relationships=source)

    def remove(self) -> None:
        self._db.close()
        self._unlink()

    def _unlink(self) -> None:
        for suffix in ("", "-journal", "-wal"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)


class _BatchStructure(TransformComponent):
    """Runs on each batch after the embedding: links it, summarises it, and adds it to the graph and manifest."""

    linker: Any = None
    builder: Any = None
    readings: Any = None
    _graph: EntityGraph | None = PrivateAttr(default=None)
    _manifest: dict[str, Any] | None = PrivateAttr(default=None)
    _nodes_seen: int = PrivateAttr(default=0)
    _thresholds: dict[int, list[float]] = PrivateAttr(default_factory=dict)  # per level, each batch's

    @property
    def graph_(self) -> EntityGraph | None:
        return self._graph

    @property
    def manifest_(self) -> dict[str, Any] | None:
        return self._manifest

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        if self.readings is not None:
            self.readings.restore(nodes)
        if self.linker is not None:
            self.linker.link(nodes, show_progress=False)
        if self.builder is not None:
            nodes = self.builder(nodes, show_progress=False)
        self._collect(nodes, self.builder)
        return nodes

    def _collect(self, nodes: Sequence[BaseNode], builder: Any = None) -> None:
        """Add ``nodes`` to the graph and the manifest, with the clusters that ``builder`` failed to summarise in
        them (None: nodes read back from the docstore)."""
        if self._nodes_seen == 0:
            self._start()
        self._nodes_seen += len(nodes)
        if self._graph is not None:
            self._graph.append_passages(nodes)
        if self._manifest is not None:
            part = hierarchy_manifest(nodes, builder)
            for level, count in part["nodes_per_level"].items():
                self._manifest["nodes_per_level"][level] = self._manifest["nodes_per_level"].get(level, 0) + count
            self._manifest["root_ids"] += part["root_ids"]
            self._manifest["failed_clusters"] += part["failed_clusters"]
            for level, threshold in enumerate(part.get("thresholds") or []):
                self._thresholds.setdefault(level, []).append(threshold)

    def _start(self) -> None:
        if self.linker is not None:
            self._graph = EntityGraph.from_nodes([], self.linker.dictionary_)
        if self.builder is not None:
            self._manifest = {**hierarchy_manifest([], self.builder), "failed_clusters": []}

    def finish(self, index: PackVectorStoreIndex, embed_model: BaseEmbedding, similar_entities: float | None) -> None:
        """Complete the graph and manifest of ``index``: a run that resumed an interrupted ingest did not see the
        batches written before, so they are read again from the docstore (a summary that failed in one of them
        is not reported again)."""
        docstore = index.docstore
        assert isinstance(docstore, SQLiteDocumentStore)  # a streaming ingest's
        if self._nodes_seen != docstore.size()[1]:
            self._nodes_seen = 0
            nodes = docstore.iter_nodes()
            while batch := list(islice(nodes, _SCAN_BATCH)):
                self._collect(batch)
        if self._manifest is not None:
            levels = self._manifest["nodes_per_level"]
            self._manifest["nodes_per_level"] = {key: levels[key] for key in sorted(levels, key=int)}
            # a sync clusters the documents it re-indexes at the batches' median threshold of each level
            self._manifest["thresholds"] = [
                statistics.median(self._thresholds[level]) for level in sorted(self._thresholds)
            ]
        if self._graph is not None:
            self._graph.index_id = index.index_id
            if similar_entities is not None:
                self._graph.link_similar_entities(embed_model, threshold=similar_entities)


def _stream_extras(
    documents: Iterable[Document],
    persist_dir: Path,
    embed_model: BaseEmbedding,
    chunk_size: int,
    chunk_overlap: int,
    extras: Sequence[TransformComponent],
    vector_store: Any,
    show_progress: bool,
    batch_size: int,
) -> PackVectorStoreIndex | None:
    """``build_index``'s streaming of ``extra_transformations``: an ``EntityLinker`` and a semantic summary
    builder (either or both) stream; None for any other (they run over every node at once)."""
    linkers = [t for t in extras if isinstance(t, EntityLinker)]
    builders = [t for t in extras if isinstance(t, BaseSummaryNodeBuilder)]
    if len(linkers) > 1 or len(linkers) + len(builders) < len(extras) or not streams_structure(builders):
        return None
    if linkers and iter(documents) is documents:
        return None  # the dictionary is fitted on the documents first: they cannot be read twice
    linker = linkers[0] if linkers else None
    index, _, _ = stream_structured_index(
        documents, persist_dir, embed_model=embed_model, linker=linker, builders=builders, vector_store=vector_store,
        chunk_size=chunk_size, chunk_overlap=chunk_overlap, settings=recorded_settings(linker, builders),
        batch_size=batch_size, show_progress=show_progress,
    )  # fmt: skip
    return index


set_structured_stream(_stream_extras)
