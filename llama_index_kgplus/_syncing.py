"""One corpus sync: bring an index folder in step with its corpus, through every index the folder holds.

The corpus as it is now (a JSONL file, a folder, or ``Document`` objects) is compared with what the folder
indexed, by each document's content hash (``Document.hash``, which :func:`build_index` records in the docstore):
documents that are new or whose hash changed are split (with the chunking ``ingest.json`` records) and embedded,
and the nodes of changed and deleted documents leave the vector store (JSON or LanceDB) and the docstore. The
files derived from the index follow:

- the entity graph (``entity_graph.npz``): the new chunks are read by the entity sources (``ner``, ``llm``) and
  every chunk is linked again against the dictionary of the whole corpus (what the older chunks' readings
  recorded, and the new ones), so the graph is the one a fresh ingest would build, for the cost of reading the
  new chunks; the older chunks are linked as light copies (text, title, links, document), and only those whose
  links changed are read whole and written again;
- the summaries (``hierarchy.json``): the semantic builder, which never clusters across documents, clusters the
  chunks of the new and changed documents at the similarity thresholds the ingest learned (``thresholds`` of
  ``hierarchy.json``), and those of documents whose chunks were linked anew (a summary inherits its chunks' shared
  metadata); the other documents keep their nodes as they are. Each stored summary whose children are the same
  texts in the same order is reused; only summaries whose children changed are written (and embedded). RAPTOR,
  which clusters across documents, and an index whose ``hierarchy.json`` records no thresholds (an earlier
  version's) cluster every chunk again from their stored embeddings, with the same reuse;
- a GraphRAG store in the folder's ``graphrag/`` (or the one given): its incremental update, which regenerates
  only the reports of changed communities.

Everything but the GraphRAG store (which keeps its own state) is switched in at once by
:func:`~llama_index_kgplus._indexing.persist_index`: the folder holds the old index with its graph and hierarchy,
or the new one with its own. The folder's writer lock is held from the start, so a second sync (or ingest) of
the same folder is refused.

Deleting one document (``delete_ref_doc`` of an index bound to its folder,
:class:`~llama_index_kgplus._indexing.PackVectorStoreIndex`) is the same sync without a corpus, run through that
index object: the corpus is the indexed documents but the deleted one, in the order the docstore lists them (the
ingest's), their nodes reused from the docstore, and the GraphRAG store deletes the document too.

Example:

```python
report = sync_index("docs.jsonl", "./index")
report.added, report.updated, report.deleted, report.summaries_written
```
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from llama_index.core import Document, VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import BaseNode, MetadataMode, NodeRelationship, RelatedNodeInfo, TextNode

from llama_index_kgplus._corpus import CorpusRecord, load_records
from llama_index_kgplus._indexing import (
    DEFAULT_CHUNK_OVERLAP,
    DEFAULT_CHUNK_SIZE,
    PackVectorStoreIndex,
    check_embed_model,
    check_index_files,
    has_docstore,
    index_embed_model,
    load_index,
    persist_index,
    set_folder_delete,
)
from llama_index_kgplus._lock import writer_lock
from llama_index_kgplus._paths import user_path
from llama_index_kgplus._sqlitedoc import SQLiteDocumentStore
from llama_index_kgplus._sync import run_sync
from llama_index_kgplus._text import sentence_splitter
from llama_index_kgplus.entity_graph._linker import ENTITIES_KEY, RELATIONSHIPS_KEY
from llama_index_kgplus.errors import InputDataError
from llama_index_kgplus.hierarchy._parents import node_level

__all__ = [
    "GRAPHRAG_DIR",
    "SyncReport",
    "async_index",
    "entity_linker",
    "recorded_settings",
    "summary_builders",
    "sync_index",
]

GRAPHRAG_DIR = "graphrag"
"""The folder of an index folder where a sync looks for a GraphRAG store (``kgplus graphrag index --store``)."""
_PARENT_IDS_KEY = "parent_ids"
_LINK_KEYS = (ENTITIES_KEY, RELATIONSHIPS_KEY)  # what the entity linker writes in a chunk's metadata
_PLACING = (NodeRelationship.SOURCE, NodeRelationship.PREVIOUS)  # what tells a chunk's document and whether it is first
_BATCH = 1000  # node ids per delete or read of the vector store


@dataclass
class SyncReport:
    """What one sync did: the document ids it added, updated, deleted and left unchanged, the nodes it wrote
    (new, or rewritten with new links) and deleted, the texts it embedded, the summaries it wrote and reused, the
    entity graph's size, the GraphRAG update's figures and every LLM call spent.

    Example:

    ```python
    report = sync_index("docs.jsonl", "./index")
    print(report.summary())  # one line
    report.as_dict()  # the JSON of `kgplus sync --json`
    ```
    """

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    nodes_written: int = 0
    nodes_deleted: int = 0
    texts_embedded: int = 0
    summaries_written: int = 0
    summaries_reused: int = 0
    entity_passages: int | None = None
    entity_passages_relinked: int = 0
    graphrag: dict[str, Any] | None = None
    llm_calls: int = 0
    ingest_id: str | None = None
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        """Whether the corpus differed from the index (something was added, updated or deleted)."""
        return bool(self.added or self.updated or self.deleted)

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON values."""
        return asdict(self)

    def summary(self) -> str:
        """The report in one line."""
        if not self.changed:
            head = f"index up to date: {len(self.unchanged)} documents unchanged"
        else:
            head = (
                f"synced {len(self.added)} added, {len(self.updated)} updated, {len(self.deleted)} deleted documents "
                f"({len(self.unchanged)} unchanged): {self.nodes_written} nodes written, {self.nodes_deleted} "
                f"deleted, {self.texts_embedded} texts embedded"
            )
        parts = [head]
        if self.summaries_written or self.summaries_reused:
            parts.append(f"summaries: {self.summaries_written} written, {self.summaries_reused} reused")
        if self.graphrag is not None:
            parts.append(f"GraphRAG: {self.graphrag.get('reports_regenerated', 0)} reports regenerated")
        parts.append(f"LLM calls: {self.llm_calls}")
        return "; ".join(parts)


# ---------------------------------------------------------------------------------------------- components


def summary_builders(hierarchy: Mapping[str, Any] | None, embed_model: Any, llm: Any = None) -> list[Any]:
    """The summary node builder of the ``hierarchy`` settings that ``kgplus ingest`` records (``kind``
    ``semantic``/``raptor``, ``summarizer``, ``llm``, ``cluster_size``, ``max_levels``, ``seed``, ``workers``);
    an empty list without them. ``llm``: the summaries' LLM (else the recorded spec's, made here)."""
    if not hierarchy or hierarchy.get("kind") in (None, "none"):
        return []
    from llama_index_kgplus.hierarchy import RaptorSummaryNodeBuilder, SemanticChunkingSummaryNodeBuilder
    from llama_index_kgplus.summarizers import AbstractiveSummarizer, ExtractiveSummarizer, TwoStageSummarizer

    seed = int(hierarchy.get("seed", 0))
    kind = hierarchy.get("summarizer", "two-stage")
    if kind == "extractive":
        summarizer: Any = ExtractiveSummarizer(max_sentences=5, random_state=seed)
    else:
        llm = _llm(llm, hierarchy.get("llm"), max_new_tokens=256)
        summarizer = (
            AbstractiveSummarizer(llm=llm)
            if kind == "abstractive"
            else TwoStageSummarizer.from_defaults(llm=llm, embed_model=embed_model, random_state=seed)
        )
    settings: dict[str, Any] = {"embed_model": embed_model, "summarizer": summarizer, "random_state": seed}
    if hierarchy.get("max_levels") is not None:
        settings["max_levels"] = int(hierarchy["max_levels"])
    if hierarchy.get("workers") is not None:
        settings["num_workers"] = int(hierarchy["workers"])
    if hierarchy["kind"] == "semantic":
        return [SemanticChunkingSummaryNodeBuilder(cluster_size=int(hierarchy.get("cluster_size", 5)), **settings)]
    if hierarchy["kind"] == "raptor":
        return [RaptorSummaryNodeBuilder(**settings)]
    raise InputDataError(f"Unknown hierarchy kind {hierarchy['kind']!r}: semantic or raptor.")


def entity_linker(entities: Mapping[str, Any] | None, llm: Any = None, *, show_progress: bool = True) -> Any | None:
    """The EntityLinker of the ``entities`` settings that ``kgplus ingest`` records (``sources``, ``kg_store``,
    ``glossary``, ``llm``); None without them. ``llm``: the ``llm`` source's model (else the recorded spec's)."""
    if not entities or not entities.get("sources"):
        return None
    from llama_index_kgplus.entity_graph import EntityLinker

    sources = list(entities["sources"])
    if "kg" in sources and not entities.get("kg_store"):
        raise InputDataError("--entities kg needs the knowledge graph: add --kg-store URI (see `kgplus kg import`).")
    if "glossary" in sources and not entities.get("glossary"):
        raise InputDataError("--entities glossary needs --glossary FILE.")
    if "llm" in sources:
        llm = _llm(llm, entities.get("llm"))
    return EntityLinker.from_defaults(
        sources,
        llm=llm,
        kg_store=entities.get("kg_store"),
        glossary=entities.get("glossary"),
        show_progress=show_progress,
        **entities.get("options", {}),
    )


#: the EntityLinker fields a sync rebuilds the linker with besides its sources, recorded when not their default
_LINKER_OPTIONS = (
    "ner_model", "ner_labels", "ner_noun_phrases", "ner_parser", "ner_recognizer", "ner_compound_nouns",
    "lead_entity", "min_name_length", "stop_names",
)  # fmt: skip


def recorded_settings(linker: Any | None, builders: Sequence[Any]) -> dict[str, Any]:
    """The ``entities`` and ``hierarchy`` settings of an ingest in Python with ``linker`` and ``builders``, as
    ``kgplus ingest`` records them in ``ingest.json`` so that a sync links and summarises new documents the same
    way. Each is None when a sync could not rebuild it from JSON (:func:`entity_linker`, :func:`summary_builders`):
    a summarizer or builder setting of your own; a sync of that index is then refused. A store URI with a password
    is left out (a sync asks for it), and so are LLMs: a sync uses the ``llm`` it is given, else ``$KGPLUS_LLM``."""
    return {
        "entities": _linker_settings(linker) if linker is not None else None,
        "hierarchy": _hierarchy_settings(builders[0]) if len(builders) == 1 else None,
    }


def _linker_settings(linker: Any) -> dict[str, Any]:
    from llama_index_kgplus._redact import recordable

    defaults = type(linker)()
    glossary = getattr(linker.glossary, "source", None)
    return {
        "sources": list(linker.sources),
        "kg_store": recordable(linker.kg_store),
        "glossary": str(Path(glossary).resolve()) if glossary and Path(glossary).is_file() else None,
        "llm": None,
        "similar_entities": None,
        "options": {
            name: getattr(linker, name) for name in _LINKER_OPTIONS if getattr(linker, name) != getattr(defaults, name)
        },
    }


def _hierarchy_settings(builder: Any) -> dict[str, Any] | None:
    """A semantic builder's settings (the one builder an ingest streams), or None."""
    from llama_index_kgplus.hierarchy import SemanticChunkingSummaryNodeBuilder
    from llama_index_kgplus.summarizers import AbstractiveSummarizer, ExtractiveSummarizer, TwoStageSummarizer

    summarizers: dict[type, str] = {
        ExtractiveSummarizer: "extractive",
        AbstractiveSummarizer: "abstractive",
        TwoStageSummarizer: "two-stage",
        type(None): "two-stage",  # the builder's default
    }
    if type(builder) is not SemanticChunkingSummaryNodeBuilder or type(builder.summarizer) not in summarizers:
        return None
    # the builder (and an extractive summarizer) that a sync makes of these settings must be this one
    rebuilt = SemanticChunkingSummaryNodeBuilder(
        random_state=builder.random_state, max_levels=builder.max_levels, cluster_size=builder.cluster_size
    )
    same = {"embed_model", "summarizer", "num_workers", "show_progress", "similarity_thresholds"}  # hierarchy.json's
    if builder.model_dump(exclude=same) != rebuilt.model_dump(exclude=same):
        return None
    kind = summarizers[type(builder.summarizer)]
    if kind == "extractive":
        mine = ExtractiveSummarizer(max_sentences=5, random_state=builder.random_state)
        if builder.summarizer.model_dump(exclude={"embed_model"}) != mine.model_dump(exclude={"embed_model"}):
            return None
    return {
        "kind": "semantic",
        "summarizer": kind,
        "llm": None,
        "cluster_size": builder.cluster_size,
        "max_levels": builder.max_levels,
        "seed": builder.random_state,
        "workers": builder.num_workers,
    }


def _llm(llm: Any, spec: str | None, **kwargs: Any) -> Any:
    """``llm`` itself, or the model of a spec: ``llm`` when it is one, else ``spec`` (None: ``$KGPLUS_LLM``)."""
    if llm is not None and not isinstance(llm, str):
        return llm
    from llama_index_kgplus.llm import llm_from_spec

    return llm_from_spec(llm or spec, **kwargs)


class _KnownEmbeddings(BaseEmbedding):
    """An embedding model that answers the texts it knows (the stored vectors of the index) without a call and
    asks the wrapped model for the others, counting them (:attr:`asked`)."""

    _inner: Any = PrivateAttr(default=None)
    _known: dict[str, list[float]] = PrivateAttr(default_factory=dict)
    _asked: int = PrivateAttr(default=0)

    @classmethod
    def wrap(cls, inner: BaseEmbedding, known: Mapping[str, list[float]] | None = None) -> _KnownEmbeddings:
        model = cls(model_name=str(inner.model_name), embed_batch_size=inner.embed_batch_size)
        model._inner, model._known = inner, dict(known or {})
        return model

    @classmethod
    def class_name(cls) -> str:
        return "KnownEmbeddings"

    @property
    def asked(self) -> int:
        """Texts sent to the wrapped model."""
        return self._asked

    def remember(self, known: Mapping[str, list[float]]) -> None:
        self._known.update(known)

    def _get_query_embedding(self, query: str) -> list[float]:
        return list(self._inner.get_query_embedding(query))

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return list(await self._inner.aget_query_embedding(query))

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return (await self._aget_text_embeddings([text]))[0]

    def _missing(self, texts: Sequence[str]) -> list[str]:
        missing = list(dict.fromkeys(t for t in texts if t not in self._known))
        self._asked += len(missing)
        return missing

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        missing = self._missing(texts)
        if missing:
            self._known.update(zip(missing, map(list, self._inner.get_text_embedding_batch(missing))))
        return [list(self._known[t]) for t in texts]

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        missing = self._missing(texts)
        if missing:
            self._known.update(zip(missing, map(list, await self._inner.aget_text_embedding_batch(missing))))
        return [list(self._known[t]) for t in texts]


# ---------------------------------------------------------------------------------------------- the sync


def sync_index(
    corpus: str | Path | Sequence[Document],
    persist_dir: str | Path,
    *,
    embed_model: BaseEmbedding | None = None,
    llm: Any = None,
    graphrag_store: str | Path | None = None,
    show_progress: bool = True,
) -> SyncReport:
    """Bring the index in ``persist_dir`` in step with ``corpus`` (a ``.jsonl`` file, a folder of text files, or
    ``Document`` objects with unique ids: the whole corpus as it is now), through every index the folder holds
    (see the module notes); returns what it did. ``embed_model``: the model the index was built with (checked;
    ``Settings.embed_model`` by default); ``llm``: the model (or model spec) of new summaries, the ``llm`` entity
    source and the GraphRAG update (by default the specs ``ingest.json`` records, else ``$KGPLUS_LLM``: loaded
    only when needed); ``graphrag_store``: a GraphRAG store folder
    to update too (the index folder's ``graphrag/`` is updated when present).

    Example:

    ```python
    from llama_index_kgplus.indexing import sync_index

    report = sync_index("docs.jsonl", "./index")
    print(report.summary())
    ```
    """
    return run_sync(
        async_index(
            corpus,
            persist_dir,
            embed_model=embed_model,
            llm=llm,
            graphrag_store=graphrag_store,
            show_progress=show_progress,
        )
    )


async def async_index(
    corpus: str | Path | Sequence[Document],
    persist_dir: str | Path,
    *,
    embed_model: BaseEmbedding | None = None,
    llm: Any = None,
    graphrag_store: str | Path | None = None,
    show_progress: bool = True,
) -> SyncReport:
    """Async :func:`sync_index`.

    Example:

    ```python
    report = await async_index("docs.jsonl", "./index")
    ```
    """
    from llama_index.core import Settings

    documents = _documents(corpus)
    return await _update(
        user_path(persist_dir),
        "kgplus sync",
        documents=documents,
        embed_model=embed_model or Settings.embed_model,
        llm=llm,
        graphrag_store=graphrag_store,
        show_progress=show_progress,
    )


async def _delete_in_folder(
    index: PackVectorStoreIndex, persist_dir: Path, ingest_id: str, doc_id: str, llm: Any, show_progress: bool
) -> SyncReport:
    """``index.delete_ref_doc(doc_id)`` of an index bound to the folder it was loaded from (``ingest_id``): the
    sync of the indexed documents without ``doc_id``, through ``index`` itself (see the module notes)."""
    return await _update(
        persist_dir,
        "delete_ref_doc",
        delete=doc_id,
        index=index,
        ingest_id=ingest_id,
        embed_model=index_embed_model(index),
        llm=llm,
        show_progress=show_progress,
    )


set_folder_delete(_delete_in_folder)


async def _update(
    persist_dir: Path,
    what: str,
    *,
    documents: Sequence[Document | CorpusRecord] | None = None,
    delete: str | None = None,
    index: VectorStoreIndex | None = None,
    ingest_id: str | None = None,
    embed_model: BaseEmbedding | None,
    llm: Any,
    graphrag_store: str | Path | None = None,
    show_progress: bool,
) -> SyncReport:
    """Bring the index of ``persist_dir`` (``index``, loaded from its ingest ``ingest_id``; else loaded here) in
    step with ``documents`` (the whole corpus), or delete the document ``delete``, under the folder's writer lock;
    ``what`` names this writer to a refused one."""
    started = time.perf_counter()
    with writer_lock(persist_dir, what):  # a second writer is refused before any work
        stamp = check_index_files(persist_dir) if persist_dir.is_dir() else None
        if not has_docstore(persist_dir, stamp):
            raise InputDataError(
                f"{persist_dir} holds no index: build one with `kgplus ingest DOCS --index {persist_dir}`."
            )
        if stamp is None:
            raise InputDataError(
                f"{persist_dir} has no ingest.json (an index of plain LlamaIndex): sync needs an index built by "
                f"`kgplus ingest DOCS --index {persist_dir}`."
            )
        if embed_model is not None:
            check_embed_model(persist_dir, embed_model)
        if index is None:
            index = load_index(persist_dir, embed_model=embed_model, check=False)
        elif stamp.get("ingest_id") != ingest_id:
            raise InputDataError(
                f"{persist_dir} was written by another writer since this index was loaded from it: load it again "
                f"(load_index) and delete again."
            )
        report = await _sync(index, persist_dir, stamp, documents, delete, llm, show_progress)
        report.graphrag, graphrag_calls = await _sync_graphrag(persist_dir, graphrag_store, llm, documents, delete)
        report.llm_calls += graphrag_calls
    report.seconds = round(time.perf_counter() - started, 3)
    return report


def _documents(corpus: str | Path | Sequence[Document]) -> Sequence[Document | CorpusRecord]:
    """The corpus as documents with unique ids (refused in one line otherwise); a corpus file or folder as its
    records, which hash as their documents do and are built only when they changed."""
    if isinstance(corpus, (str, Path)):
        return load_records(corpus)
    documents = list(corpus)
    if not documents:
        raise InputDataError("The corpus holds no document: give the whole corpus as it is now.")
    seen: set[str] = set()
    for doc in documents:
        if not isinstance(doc, Document):
            raise InputDataError(f"The corpus holds a {type(doc).__name__}, not a llama_index Document.")
        if doc.doc_id in seen:
            raise InputDataError(f"The corpus holds two documents with the id {doc.doc_id!r}: ids must be unique.")
        seen.add(doc.doc_id)
    return documents


def _built(document: Document | CorpusRecord) -> Document:
    return document.document() if isinstance(document, CorpusRecord) else document


async def _sync(
    index: VectorStoreIndex,
    persist_dir: Path,
    stamp: dict[str, Any],
    documents: Sequence[Document | CorpusRecord] | None,
    delete: str | None,
    llm: Any,
    show_progress: bool,
) -> SyncReport:
    """The sync of ``index`` (the folder's) with ``documents``, or with the indexed documents but ``delete``."""
    from llama_index_kgplus.entity_graph import GRAPH_FILE
    from llama_index_kgplus.hierarchy._retriever import read_manifest

    settings = dict(stamp["settings"]) if isinstance(stamp.get("settings"), dict) else None
    recorded = settings or {}
    has_graph = (persist_dir / GRAPH_FILE).is_file()
    manifest = read_manifest(persist_dir)
    has_hierarchy = manifest is not None
    if (has_graph and not recorded.get("entities")) or (has_hierarchy and not recorded.get("hierarchy")):
        what = "entity graph" if has_graph and not recorded.get("entities") else "hierarchy"
        raise InputDataError(
            f"{persist_dir}/ingest.json does not record how its {what} was built (an index of an earlier version, "
            f"or built in Python with a summarizer or setting of your own): re-run `kgplus ingest DOCS --index {persist_dir}` once; later syncs update it."
        )
    docstore = index.docstore
    if isinstance(docstore, SQLiteDocumentStore):
        indexed = docstore.ref_doc_ids()
    else:  # the docstore keeps them (the index would read every node)
        indexed = list(docstore.get_all_ref_doc_info() or {})
    report, hashes, changed = _plan(docstore, indexed, documents, delete, persist_dir)
    if not report.changed:
        return report
    if changed and settings is None:
        raise InputDataError(
            f"{persist_dir}/ingest.json does not record how the index was built (chunking; an index of an earlier "
            f"version): re-run `kgplus ingest DOCS --index {persist_dir}` once; later syncs update it."
        )
    embed_model = index_embed_model(index)
    assert embed_model is not None  # a VectorStoreIndex has one
    model = _KnownEmbeddings.wrap(embed_model)
    new_leaves = await _split_and_embed(changed, recorded, model, show_progress)
    files: dict[str, Any] = {}
    if has_graph or has_hierarchy:
        write, drop = await _relink_and_rebuild(
            index, hashes, report, new_leaves, recorded, model, llm, has_graph, manifest, files,
            show_progress,
        )  # fmt: skip
    else:
        stale = {d for d in (*report.updated, *report.deleted)}
        drop = [n for d in stale if (info := docstore.get_ref_doc_info(d)) is not None for n in info.node_ids]
        write = new_leaves
    _apply(index, write, drop)
    touched = {n.ref_doc_id for n in write if n.ref_doc_id} | set(report.added) | set(report.updated)
    docstore.set_document_hashes({d: h for d in touched if (h := hashes.get(d)) is not None})
    report.nodes_written, report.nodes_deleted = len(write), len(set(drop) - {n.node_id for n in write})
    report.texts_embedded = model.asked
    report.ingest_id = persist_index(index, persist_dir, embed_model=embed_model, files=files, settings=settings)
    return report


def _plan(
    docstore: Any,
    indexed: list[str],
    documents: Sequence[Document | CorpusRecord] | None,
    delete: str | None,
    persist_dir: Path,
) -> tuple[SyncReport, dict[str, str | None], list[Document]]:
    """What to do: the report's documents, each document's content hash in corpus order (the corpus: ``documents``,
    or the ``indexed`` documents but ``delete``, in the docstore's order) and the documents to split and embed."""
    known = set(indexed)
    stored = docstore.document_hashes() if isinstance(docstore, SQLiteDocumentStore) else None

    def indexed_hash(doc_id: str) -> str | None:
        return stored.get(doc_id) if stored is not None else docstore.get_document_hash(doc_id)

    if documents is None:
        if delete not in known:
            raise InputDataError(f"{persist_dir} holds no document {delete!r}: nothing was deleted.")
        hashes = {d: indexed_hash(d) for d in indexed if d != delete}
        return SyncReport(deleted=[str(delete)], unchanged=list(hashes)), hashes, []
    corpus = {doc.doc_id: doc for doc in documents}
    hashes = {doc_id: doc.hash for doc_id, doc in corpus.items()}  # a Document computes its hash on each read
    report = SyncReport(
        added=[d for d in corpus if d not in known],
        deleted=sorted(d for d in indexed if d not in corpus),
    )
    for doc_id in corpus:
        if doc_id in known:
            (report.unchanged if indexed_hash(doc_id) == hashes[doc_id] else report.updated).append(doc_id)
    changed = [_built(corpus[d]) for d in (*report.added, *report.updated)]
    return report, hashes, changed


async def _split_and_embed(
    documents: list[Document], settings: Mapping[str, Any], model: BaseEmbedding, show_progress: bool
) -> list[BaseNode]:
    """The chunks of ``documents``, split as the ingest did (``ingest.json``), with their embeddings."""
    from llama_index.core.ingestion import IngestionPipeline

    if not documents:
        return []
    splitter = sentence_splitter(
        int(settings.get("chunk_size", DEFAULT_CHUNK_SIZE)), int(settings.get("chunk_overlap", DEFAULT_CHUNK_OVERLAP))
    )
    pipeline = IngestionPipeline(transformations=[splitter, model])
    return list(await pipeline.arun(documents=documents, show_progress=show_progress))


async def _relink_and_rebuild(
    index: Any,
    corpus: Iterable[str],
    report: SyncReport,
    new_leaves: list[BaseNode],
    settings: Mapping[str, Any],
    model: _KnownEmbeddings,
    llm: Any,
    has_graph: bool,
    manifest: dict[str, Any] | None,
    files: dict[str, Any],
    show_progress: bool,
) -> tuple[list[BaseNode], list[str]]:
    """Link the chunks again and summarise again the documents that need it (``corpus``: the document ids, in order;
    ``manifest``: the hierarchy's, or None; see the module notes); puts the entity graph and hierarchy writers into
    ``files``; returns the nodes to write and the node ids to delete."""
    from llama_index_kgplus._files import json_writer
    from llama_index_kgplus.hierarchy import SemanticChunkingSummaryNodeBuilder
    from llama_index_kgplus.hierarchy._retriever import MANIFEST_FILE

    docstore = index.docstore
    unchanged, stale = set(report.unchanged), {*report.updated, *report.deleted}
    linker = entity_linker(settings.get("entities"), llm, show_progress=show_progress) if has_graph else None
    builder = summary_builders(settings.get("hierarchy"), model, llm)[0] if manifest is not None else None
    thresholds = _recorded_thresholds(manifest)
    # with the ingest's thresholds a semantic builder clusters each document as before: only the documents that
    # changed (or whose chunks were linked anew) are summarised again; else every document is
    incremental = builder is None or (
        thresholds is not None and isinstance(builder, SemanticChunkingSummaryNodeBuilder)
    )
    if builder is not None and incremental:
        builder.similarity_thresholds = thresholds
    if incremental:  # the nodes of the stale documents, and the chunks of the others as the linker reads them
        old = _nodes_of(docstore, stale)
        kept_leaves = _linker_views(docstore, unchanged) if linker is not None else []
    else:
        old = dict(docstore.docs)
        kept_leaves = [n for n in old.values() if node_level(n) == 0 and n.ref_doc_id in unchanged]
    before = {} if incremental else {node_id: _state(node) for node_id, node in old.items()}
    leaves: list[BaseNode] = []  # every chunk, in corpus order, for the entity graph
    relinked: list[BaseNode] = []
    if linker is not None:
        before_links = {n.node_id: _links(n) for n in kept_leaves}
        leaves = _in_corpus_order(corpus, kept_leaves, new_leaves)
        await linker.arelink(leaves, {n.node_id for n in new_leaves}, show_progress=show_progress)
        report.llm_calls += linker.llm_calls_
        relinked = [n for n in kept_leaves if _links(n) != before_links[n.node_id]]
        report.entity_passages_relinked = len(relinked)
    if incremental and relinked:  # the stored nodes of the relinked chunks (with summaries: of their documents)
        views = {n.node_id: n for n in relinked}
        if builder is not None:
            fetched = _nodes_of(docstore, {str(n.ref_doc_id) for n in relinked})
        else:
            fetched = {n.node_id: n for n in docstore.get_nodes(list(views))}
        for node_id, view in views.items():
            _take_links(fetched[node_id], view)
        old.update(fetched)
        relinked = [fetched[node_id] for node_id in views]
    if builder is None:
        built, replaced = [*new_leaves, *relinked], [*(n for n in old.values() if n.ref_doc_id in stale), *relinked]
    else:
        # a summary inherits its chunks' shared metadata: a document with relinked chunks is summarised again
        again = {n.ref_doc_id for n in relinked}
        replaced = [n for n in old.values() if not incremental or n.ref_doc_id in stale or n.ref_doc_id in again]
        built = await _summarise(index, builder, corpus, replaced, new_leaves, unchanged, model, report, show_progress)
        files[MANIFEST_FILE] = json_writer(
            _updated_manifest(manifest or {}, replaced, built, builder, thresholds if incremental else None),
            indent=1,
            default=str,
        )
    if linker is not None:
        from llama_index_kgplus.entity_graph import GRAPH_FILE, EntityGraph

        graph = EntityGraph.from_nodes(leaves, linker.dictionary_, index_id=index.index_id)
        similar = (settings.get("entities") or {}).get("similar_entities")
        if similar is not None:
            await graph.alink_similar_entities(model, threshold=float(similar))
        report.entity_passages = graph.n_passages
        files[GRAPH_FILE] = graph.write_file
    write = [n for n in built if n.node_id not in before or _state(n) != before[n.node_id]]
    built_ids = {n.node_id for n in built}
    rewritten = [n for n in write if n.node_id in old]
    missing = [n.node_id for n in rewritten if n.embedding is None]
    if missing:  # a node that keeps its text gets new links: its stored vector goes with it
        vectors = _embeddings(index.vector_store, missing)
        for node in rewritten:
            if node.embedding is None:
                node.embedding = vectors[node.node_id]
    drop = [n.node_id for n in replaced if n.node_id not in built_ids]
    return write, drop + [n.node_id for n in rewritten]


async def _summarise(
    index: Any,
    builder: Any,
    corpus: Iterable[str],
    replaced: list[BaseNode],
    new_leaves: list[BaseNode],
    unchanged: set[str],
    model: _KnownEmbeddings,
    report: SyncReport,
    show_progress: bool,
) -> list[BaseNode]:
    """The chunks and summaries of the documents summarised again: the ``new_leaves`` and the chunks of unchanged
    documents among the ``replaced`` nodes, each summary whose children keep their texts reused."""
    again = [n for n in replaced if node_level(n) == 0 and n.ref_doc_id in unchanged]
    summaries = [n for n in replaced if node_level(n) > 0]
    vectors = _embeddings(index.vector_store, [n.node_id for n in again] + [n.node_id for n in summaries])
    for leaf in again:
        leaf.embedding = vectors.get(leaf.node_id)
        _unlink_parents(leaf)
    model.remember(
        {s.get_content(metadata_mode=MetadataMode.EMBED): vectors[s.node_id] for s in summaries if s.node_id in vectors}
    )  # a summary written again with the same text is not embedded again
    builder.remember_summaries(replaced)
    built = list(await builder.acall(_in_corpus_order(corpus, again, new_leaves), show_progress=show_progress))
    stats = builder.level_stats_
    report.summaries_reused = sum(int(s["reused"]) for s in stats)
    report.summaries_written = sum(int(s["clusters"]) - int(s["reused"]) - int(s["failed"]) for s in stats)
    report.llm_calls += int(builder.usage_.get("calls", 0) or 0)
    return built


def _recorded_thresholds(manifest: Mapping[str, Any] | None) -> list[float] | None:
    """The similarity thresholds ``hierarchy.json`` records (None for an index of an earlier version, or none)."""
    thresholds = (manifest or {}).get("thresholds")
    if not isinstance(thresholds, list) or not thresholds:
        return None
    if not all(isinstance(t, (int, float)) and not isinstance(t, bool) for t in thresholds):
        return None
    return [float(t) for t in thresholds]


def _updated_manifest(
    manifest: Mapping[str, Any],
    replaced: list[BaseNode],
    built: list[BaseNode],
    builder: Any,
    thresholds: list[float] | None,
) -> dict[str, Any]:
    """``manifest`` with the ``replaced`` nodes out and the ``built`` ones in; ``thresholds``: the ones the
    build reused (None: the ones it learned)."""
    from llama_index_kgplus.hierarchy._retriever import hierarchy_manifest

    part = hierarchy_manifest(built, builder)
    gone = {n.node_id for n in replaced}
    levels = {int(k): int(v) for k, v in (manifest.get("nodes_per_level") or {}).items()}
    for node in replaced:
        levels[node_level(node)] = levels.get(node_level(node), 0) - 1
    for key, count in part["nodes_per_level"].items():
        levels[int(key)] = levels.get(int(key), 0) + count
    learned = part.get("thresholds") or []
    return {
        **part,
        "nodes_per_level": {str(k): v for k, v in sorted(levels.items()) if v > 0},
        "root_ids": [r for r in manifest.get("root_ids") or [] if r not in gone] + part["root_ids"],
        "failed_clusters": [
            f for f in manifest.get("failed_clusters") or [] if not gone & set(f.get("child_ids") or [])
        ]
        + part["failed_clusters"],
        "thresholds": thresholds if thresholds is not None and len(thresholds) >= len(learned) else learned,
    }


def _nodes_of(docstore: Any, doc_ids: Iterable[str]) -> dict[str, BaseNode]:
    """The stored nodes of the documents ``doc_ids`` (chunks and summaries), by id."""
    ids = [n for d in doc_ids if (info := docstore.get_ref_doc_info(d)) is not None for n in info.node_ids]
    return {node.node_id: node for node in docstore.get_nodes(ids)} if ids else {}


def _links(node: BaseNode) -> tuple[Any, ...]:
    """What the entity linker writes in a chunk (as new values each time)."""
    return tuple(node.metadata.get(key) for key in _LINK_KEYS)


def _linker_views(docstore: Any, doc_ids: set[str]) -> list[BaseNode]:
    """The chunks of the documents ``doc_ids`` as the entity linker reads them (their text, title, links and the
    relationships that place them), read one at a time: a fraction of the stored nodes' memory."""
    nodes = docstore.iter_nodes() if isinstance(docstore, SQLiteDocumentStore) else iter(docstore.docs.values())
    views: list[BaseNode] = []
    for node in nodes:
        if node_level(node) == 0 and node.ref_doc_id in doc_ids:
            views.append(
                TextNode(
                    id_=node.node_id,
                    text=node.get_content(metadata_mode=MetadataMode.NONE),
                    metadata={k: node.metadata[k] for k in ("title", *_LINK_KEYS) if k in node.metadata},
                    relationships={
                        k: RelatedNodeInfo(node_id=v.node_id)
                        for k, v in node.relationships.items()
                        if k in _PLACING and isinstance(v, RelatedNodeInfo)
                    },
                    start_char_idx=getattr(node, "start_char_idx", None),
                )
            )
    return views


def _take_links(node: BaseNode, view: BaseNode) -> None:
    """Give a stored chunk the links its view got."""
    for key in _LINK_KEYS:
        if key in view.metadata:
            node.metadata[key] = view.metadata[key]
        else:
            node.metadata.pop(key, None)
    for attr in ("excluded_embed_metadata_keys", "excluded_llm_metadata_keys"):
        setattr(node, attr, list(dict.fromkeys([*getattr(node, attr), *getattr(view, attr)])))


def _state(node: BaseNode) -> str:
    """A node as the docstore keeps it (no embedding), to tell which nodes a sync must write again."""
    data = node.to_dict()
    data.pop("embedding", None)
    return json.dumps(data, sort_keys=True, default=str)


def _in_corpus_order(corpus: Iterable[str], kept: list[BaseNode], new: list[BaseNode]) -> list[BaseNode]:
    """The chunks in the order a fresh ingest of the corpus makes them: by document, then by position."""
    by_doc: dict[str | None, list[BaseNode]] = {}
    for node in kept:
        by_doc.setdefault(node.ref_doc_id, []).append(node)
    for nodes in by_doc.values():
        nodes.sort(key=_position)
    for node in new:
        by_doc.setdefault(node.ref_doc_id, []).append(node)
    ordered = [n for doc_id in corpus for n in by_doc.pop(doc_id, [])]
    return ordered + [n for nodes in by_doc.values() for n in nodes]


def _position(node: BaseNode) -> tuple[bool, int]:
    start = getattr(node, "start_char_idx", None)
    return start is None, start or 0


def _unlink_parents(node: BaseNode) -> None:
    """Remove a chunk's links to the summaries of the last build (the builder links it again)."""
    node.relationships.pop(NodeRelationship.PARENT, None)
    node.metadata.pop(_PARENT_IDS_KEY, None)
    for attr in ("excluded_embed_metadata_keys", "excluded_llm_metadata_keys"):
        setattr(node, attr, [k for k in getattr(node, attr) if k != _PARENT_IDS_KEY])


def _embeddings(vector_store: Any, node_ids: Iterable[str]) -> dict[str, list[float]]:
    """The stored vectors of ``node_ids`` (the JSON store's, or the LanceDB table's)."""
    from llama_index.core.vector_stores.simple import SimpleVectorStore

    ids = list(dict.fromkeys(node_ids))
    if isinstance(vector_store, SimpleVectorStore):
        stored = vector_store.data.embedding_dict
        return {i: stored[i] for i in ids if i in stored}
    vectors: dict[str, list[float]] = {}
    from llama_index_kgplus._lancedb import is_pack_store

    try:
        for start in range(0, len(ids), _BATCH):
            batch = ids[start : start + _BATCH]
            if is_pack_store(vector_store):  # the table reads the vectors alone
                vectors.update(vector_store.get_embeddings(batch))
            else:
                vectors.update((node.node_id, node.get_embedding()) for node in vector_store.get_nodes(node_ids=batch))
    except NotImplementedError as exc:
        raise InputDataError(
            f"A sync reads the stored vectors back, which {type(vector_store).__name__} does not allow: use the "
            "simple or lancedb vector store."
        ) from exc
    return vectors


def _apply(index: Any, write: list[BaseNode], drop: list[str]) -> None:
    """Delete the ``drop`` nodes from the vector store and docstore, then add the ``write`` nodes (embedded)."""
    present = [i for i in dict.fromkeys(drop) if index.docstore.document_exists(i)]
    for start in range(0, len(present), _BATCH):
        index.delete_nodes(present[start : start + _BATCH], delete_from_docstore=True)
    if write:
        index.insert_nodes(write)


async def _sync_graphrag(
    persist_dir: Path,
    store: str | Path | None,
    llm: Any,
    documents: Sequence[Document | CorpusRecord] | None,
    delete: str | None,
) -> tuple[dict[str, Any] | None, int]:
    """The GraphRAG store's incremental update (the index folder's ``graphrag/``, or ``store``) to ``documents``,
    or its delete of the document ``delete``: its figures and LLM calls; nothing without a store (or, to delete,
    a store that does not hold the document)."""
    from llama_index_kgplus.graphrag import GraphRAGIndex
    from llama_index_kgplus.graphrag._index import STATE_FILE

    folder = user_path(store) if store is not None else persist_dir / GRAPHRAG_DIR
    if not (folder / STATE_FILE).is_file():
        if store is not None:
            raise InputDataError(
                f"{folder} holds no GraphRAG store (no {STATE_FILE}): build one with `kgplus graphrag index`."
            )
        return None, 0
    if documents is None:
        with GraphRAGIndex(store_dir=folder) as stored:  # no LLM: whether the store holds the document
            if delete not in stored.documents():
                return None, 0
    graphrag = GraphRAGIndex.from_defaults(folder, llm=_llm(llm, None), show_progress=False)
    try:
        stats = await (
            graphrag.aupdate([_built(d) for d in documents])
            if documents is not None
            else graphrag.adelete_ref_doc(str(delete))
        )
    finally:
        graphrag.close()
    data = stats.as_dict()
    return data, int(data.get("llm_calls", 0))
