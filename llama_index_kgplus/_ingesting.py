"""The structured ingest in batches: the entity graph and the hierarchy of ``kgplus ingest --entities ...
--hierarchy semantic`` built as the vectors are, batch by batch, so memory stays flat in the corpus size.

The dictionary sources (``titles``, ``kg``, ``glossary``) give the whole entity dictionary before any chunk is
read: the linker is fitted on the documents in one pass over them (their titles), then each batch is split,
embedded, linked with that dictionary (:meth:`EntityLinker.link`) and summarised (the semantic builder keeps the
chunks of a document together, and a batch holds whole documents), and its passages are appended to the entity
graph's arrays before it is written (:mod:`llama_index_kgplus._streaming`, which resumes after a crash). The
graph and ``hierarchy.json`` are sealed and switched in with the index.

What differs from the ingest of every chunk at once: the semantic builder learns its similarity threshold per
batch (as a sync learns it over the documents it re-indexes) rather than over the whole corpus. The reading sources
(``ner``, ``llm``) find names in every chunk before the dictionary is known, and RAPTOR clusters across
documents: with either, the ingest holds every chunk at once (:func:`streams_structure` says which).

Example:

```python
linker = EntityLinker.from_defaults(sources=["titles"])
index, graph, manifest = stream_structured_index(load_corpus("big.jsonl", stream=True), Path("./index"),
                                                 embed_model=embed_model, linker=linker, builders=[])
```
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import islice
from pathlib import Path
from typing import Any

from llama_index.core import Document
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import BaseNode, TransformComponent

from llama_index_kgplus._files import json_writer
from llama_index_kgplus._indexing import (
    DEFAULT_CHUNK_OVERLAP,
    DEFAULT_CHUNK_SIZE,
    FileWriter,
    PackVectorStoreIndex,
    stream_index,
)
from llama_index_kgplus._sqlitedoc import SQLiteDocumentStore
from llama_index_kgplus._streaming import DEFAULT_BATCH_SIZE
from llama_index_kgplus.entity_graph import GRAPH_FILE, EntityGraph
from llama_index_kgplus.entity_graph._sources import READING_SOURCES
from llama_index_kgplus.errors import InputDataError
from llama_index_kgplus.hierarchy import SemanticChunkingSummaryNodeBuilder
from llama_index_kgplus.hierarchy._retriever import MANIFEST_FILE, hierarchy_manifest

__all__ = ["stream_structured_index", "streams_structure"]

_SCAN_BATCH = 10_000


def streams_structure(linker: Any | None, builders: Sequence[Any]) -> bool:
    """Whether an ingest with this entity linker and these summary builders can run in batches: dictionary
    sources only, and at most one semantic builder (see the module notes)."""
    reads = linker is not None and any(source in READING_SOURCES for source in linker.sources)
    return not reads and len(builders) <= 1 and all(isinstance(b, SemanticChunkingSummaryNodeBuilder) for b in builders)


def stream_structured_index(
    documents: Iterable[Document],
    persist_dir: Path,
    *,
    embed_model: BaseEmbedding,
    linker: Any | None,
    builders: Sequence[Any],
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
    similar_entities: float | None = None,
    settings: Mapping[str, Any] | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    show_progress: bool = True,
) -> tuple[PackVectorStoreIndex, EntityGraph | None, dict[str, Any] | None]:
    """Ingest ``documents`` into a LanceDB table of ``persist_dir`` in batches with their entity graph (``linker``,
    dictionary sources) and hierarchy (``builders``: none or one semantic builder), and switch in all three;
    returns the index, its graph and its ``hierarchy.json``. ``similar_entities``: the cosine of ``SIMILAR_TO``
    edges; ``settings``: the entity and hierarchy settings ``ingest.json`` records for a sync. The caller holds
    the folder's writer lock."""
    if not streams_structure(linker, builders):
        raise InputDataError("This ingest reads every chunk at once (ner, llm or raptor): it cannot run in batches.")
    if linker is not None:
        if iter(documents) is documents:
            raise InputDataError(
                "The entity dictionary is read from the documents before they are indexed: give documents that can "
                "be read twice (a list, or load_corpus(path, stream=True)), not a one-pass iterator."
            )
        linker.fit(documents)
    structure = _BatchStructure(linker=linker, builder=builders[0] if builders else None)

    def derived_files(index: PackVectorStoreIndex) -> dict[str, FileWriter]:
        structure.finish(index, embed_model, similar_entities)
        files: dict[str, FileWriter] = {}
        if structure.graph_ is not None:
            files[GRAPH_FILE] = structure.graph_.write_file
        if structure.manifest_ is not None:
            files[MANIFEST_FILE] = json_writer(structure.manifest_, indent=1, default=str)
        return files

    index = stream_index(
        documents, persist_dir, embed_model, chunk_size, chunk_overlap, "lancedb", show_progress, batch_size,
        per_batch=[structure], derived_files=derived_files, settings=settings,
    )  # fmt: skip
    return index, structure.graph_, structure.manifest_


class _BatchStructure(TransformComponent):
    """Runs on each batch after the embedding: links it, summarises it, and adds it to the graph and manifest."""

    linker: Any = None
    builder: Any = None
    _graph: EntityGraph | None = PrivateAttr(default=None)
    _manifest: dict[str, Any] | None = PrivateAttr(default=None)
    _nodes_seen: int = PrivateAttr(default=0)

    @property
    def graph_(self) -> EntityGraph | None:
        return self._graph

    @property
    def manifest_(self) -> dict[str, Any] | None:
        return self._manifest

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        if self.linker is not None:
            self.linker.link(nodes, show_progress=False)
        if self.builder is not None:
            nodes = self.builder(nodes, show_progress=False)
        self._collect(nodes, failed=self.builder.failed_clusters_ if self.builder is not None else ())
        return nodes

    def _collect(self, nodes: Sequence[BaseNode], failed: Iterable[Any] = ()) -> None:
        if self._nodes_seen == 0:
            self._start()
        self._nodes_seen += len(nodes)
        if self._graph is not None:
            self._graph.append_passages(nodes)
        if self._manifest is not None:
            part = hierarchy_manifest(nodes)
            for level, count in part["nodes_per_level"].items():
                self._manifest["nodes_per_level"][level] = self._manifest["nodes_per_level"].get(level, 0) + count
            self._manifest["root_ids"] += part["root_ids"]
            self._manifest["failed_clusters"] += [
                {"level": f.level, "child_ids": list(f.child_ids), "error": f.error} for f in failed
            ]

    def _start(self) -> None:
        if self.linker is not None:
            self._graph = EntityGraph.from_nodes([], self.linker.dictionary_)
        if self.builder is not None:
            self._manifest = hierarchy_manifest([], self.builder)

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
        if self._graph is not None:
            self._graph.index_id = index.index_id
            if similar_entities is not None:
                self._graph.link_similar_entities(embed_model, threshold=similar_entities)
