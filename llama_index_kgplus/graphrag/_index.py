"""The GraphRAG index of a corpus in a store folder: build it, update it incrementally, query it globally.

A store folder holds ``graph.lbug`` (the graph, see :mod:`._graph_sink`) and ``state.sqlite`` (documents and
their hashes, chunks, per-chunk extractions, the merged graph, communities, reports and the runs with their LLM
usage, see :mod:`._state`). The graph is plain entities and relationships with provenance, so any LlamaIndex
``PropertyGraphStore`` can hold it instead (pass ``graph_sink=PropertyGraphStoreSink(store)``).

Indexing and updating are one procedure, each step resumable:

1. documents are compared by content hash (``Document.hash``, as LlamaIndex's ingestion docstore does):
   added and changed ones are split into chunks, deleted ones are dropped with their chunks;
2. every chunk whose text has no stored extraction is sent to the LLM (only new or changed text);
3. the extractions are merged into the graph (entities by normalised name) and the graph store is brought
   up to date, so entities and relationships that only deleted documents supported disappear;
4. communities are recomputed (same seed, warm start, matched to the previous ones by membership);
5. a report is written for each community whose fingerprint has no stored report; the others are reused.

Example:

```python
index = GraphRAGIndex.from_defaults("./grag", llm=llm_from_spec("qwen2.5-coder-0.5b"))
stats = index.build(load_corpus("docs.jsonl"))        # later: index.update(load_corpus("docs.jsonl"))
print(stats.reports_regenerated, "of", stats.reports_total)
response = index.as_query_engine(response_type="bulleted report").query("What are the main themes?")
```
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any

from llama_index.core import Document
from llama_index.core.llms import LLM
from llama_index.core.node_parser import TextSplitter
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from llama_index_kgplus._lock import writer_lock
from llama_index_kgplus._paths import inside, user_path
from llama_index_kgplus._redact import get_logger
from llama_index_kgplus._sync import run_sync
from llama_index_kgplus.errors import InputDataError, KGPlusError
from llama_index_kgplus.graphrag._communities import Community, CommunityDetector
from llama_index_kgplus.graphrag._documents import check_corpus, chunker, sync_documents
from llama_index_kgplus.graphrag._executor import AsyncioExecutor, BaseExecutor, LLMTask, TaskOutcome
from llama_index_kgplus.graphrag._extraction import ExtractionResult, GraphExtractor
from llama_index_kgplus.graphrag._graph_sink import GraphDiff, GraphSink, LadybugGraphSink
from llama_index_kgplus.graphrag._merge import ChunkExtraction, Entity, Relationship, merge_extractions
from llama_index_kgplus.graphrag._reports import CommunityReport, CommunityReportGenerator, ReportContext
from llama_index_kgplus.graphrag._state import ChunkRecord, DocumentRecord, GraphRAGState, check_state_file
from llama_index_kgplus.graphrag._stats import IndexStats, StoredReport
from llama_index_kgplus.llm._usage import LLMUsage, metered, usage_meter

logger = get_logger(__name__)

STATE_FILE = "state.sqlite"


def require_store(store_dir: str | Path) -> Path:
    """Check that ``store_dir`` holds a GraphRAG index (cheap: no model needed)."""
    store_dir = user_path(store_dir)
    if not (store_dir / STATE_FILE).is_file():
        raise InputDataError(
            f"{store_dir} holds no GraphRAG index: run `kgplus graphrag index DOCS --store {store_dir}` first."
        )
    check_state_file(store_dir / STATE_FILE)
    return store_dir


GRAPH_FILE = "graph.lbug"
# Settings stored with the index, so that an update runs with the settings of the build.
_PERSISTED = (
    "chunk_size",
    "chunk_overlap",
    "min_community_size",
    "max_descriptions",
    "extractor",
    "detector",
    "reporter",
)


async def _extract_task(extractor_config: dict[str, Any], text: str, llm: LLM) -> dict[str, Any]:
    result = await GraphExtractor(**extractor_config).aextract_text(text, llm=llm)
    return result.model_dump()


async def _report_task(reporter_config: dict[str, Any], context: ReportContext, llm: LLM) -> dict[str, Any]:
    report = await CommunityReportGenerator(**reporter_config).agenerate(context, llm=llm)
    return report.model_dump()


class GraphRAGIndex(BaseModel):
    """Entities, communities and community reports of a corpus, kept in a store folder; see the module docstring.

    Example:

    ```python
    index = GraphRAGIndex.from_defaults("./grag", llm=llm)
    index.build(docs)
    index.update(docs_with_one_more)     # prints nothing; returns IndexStats
    index.as_query_engine().query("What are the main themes of the collection?")
    ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store_dir: Path = Field(description="Folder of the store: graph.lbug and state.sqlite.")
    chunk_size: int = Field(default=512, ge=32, description="Chunk size in tokens (SentenceSplitter).")
    chunk_overlap: int = Field(default=32, ge=0, description="Chunk overlap in tokens.")
    text_splitter: TextSplitter | None = Field(
        default=None,
        exclude=True,
        description="Splits documents into chunks instead of SentenceSplitter(chunk_size, chunk_overlap), as a "
        "LlamaIndex index's transformations do; not stored with the index: pass it again when reopening. A "
        "different splitter re-chunks (and re-extracts) the documents on the next update.",
    )
    min_community_size: int = Field(default=2, ge=1, description="Communities with fewer entities get no report.")
    max_descriptions: int = Field(default=4, ge=1, description="Distinct descriptions an entity or relationship keeps.")
    show_progress: bool = Field(default=True, description="Show progress bars for the LLM steps.")
    extractor: GraphExtractor = Field(
        default_factory=GraphExtractor, description="Entity and relationship extraction settings."
    )
    detector: CommunityDetector = Field(default_factory=CommunityDetector, description="Community detection settings.")
    reporter: CommunityReportGenerator = Field(
        default_factory=CommunityReportGenerator, description="Community report settings."
    )
    executor: BaseExecutor = Field(default_factory=AsyncioExecutor, description="Runs the batches of LLM calls.")

    _llm: LLM | None = PrivateAttr(default=None)
    _state: GraphRAGState | None = PrivateAttr(default=None)
    _sink: GraphSink | None = PrivateAttr(default=None)
    _own_sink: bool = PrivateAttr(default=True)

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this component under."""
        return "GraphRAGIndex"

    def __getstate__(self) -> dict[str, Any]:
        # a copy (a worker process) reopens the store folder's state and graph on first use
        state = super().__getstate__()
        private = dict(state["__pydantic_private__"])
        private["_state"] = None
        if private["_own_sink"]:
            private["_sink"] = None
        return {**state, "__pydantic_private__": private}

    @classmethod
    def from_defaults(
        cls,
        store_dir: str | Path,
        llm: LLM | None = None,
        *,
        executor: BaseExecutor | None = None,
        graph_sink: GraphSink | None = None,
        **settings: Any,
    ) -> GraphRAGIndex:
        """Open (or prepare) the store in ``store_dir``; ``llm`` defaults to ``Settings.llm``.

        The settings of an existing store are read back from it; ``settings`` override them.
        """
        from llama_index.core import Settings

        store_dir = user_path(store_dir).resolve()
        fix = "give a store folder whose files are its own"
        for name in (STATE_FILE, f"{STATE_FILE}-wal", f"{STATE_FILE}-shm", GRAPH_FILE, f"{GRAPH_FILE}.wal"):
            inside(store_dir, name, fix=fix)  # SQLite and the graph store would write through a link
        stored: dict[str, Any] = {}
        if (store_dir / STATE_FILE).is_file():
            state = GraphRAGState(store_dir / STATE_FILE)
            try:
                stored = state.get_meta("config", {}) or {}
            finally:
                state.close()
        config = {**stored, **settings}
        if executor is not None:
            config["executor"] = executor
        index = cls(store_dir=store_dir, **config)
        index._llm = metered(llm or Settings.llm)
        if graph_sink is not None:
            index._sink, index._own_sink = graph_sink, False
        return index

    # ------------------------------------------------------------------ resources

    @property
    def llm(self) -> LLM:
        """The metered LLM of extraction and reports (``Settings.llm`` unless one was given)."""
        if self._llm is None:
            from llama_index.core import Settings

            self._llm = metered(Settings.llm)
        return self._llm

    @property
    def state(self) -> GraphRAGState:
        """The index state stored in ``store_dir`` (documents, chunks, graph, communities, reports), opened on first
        use."""
        if self._state is None:
            try:
                self.store_dir.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise KGPlusError(f"Cannot create the store folder {self.store_dir}: {exc}") from exc
            self._state = GraphRAGState(self.store_dir / STATE_FILE)
        return self._state

    def exists(self) -> bool:
        """True when the store holds a finished build."""
        return (self.store_dir / STATE_FILE).is_file() and self.state.get_meta("built", False)

    def close(self) -> None:
        """Close the state file and the graph store (if this index opened it)."""
        self._close_sink()
        if self._state is not None:
            self._state.close()
            self._state = None

    def _close_sink(self) -> None:
        if self._sink is not None and self._own_sink:
            self._sink.close()
            self._sink = None

    def __enter__(self) -> GraphRAGIndex:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------ building and updating

    def build(self, documents: Sequence[Document]) -> IndexStats:
        """Index ``documents`` (resuming an interrupted run); same procedure as :meth:`update`."""
        return run_sync(self.abuild(documents))

    async def abuild(self, documents: Sequence[Document]) -> IndexStats:
        """Async :meth:`build`."""
        return await self._arefresh(documents, "index")

    def update(self, documents: Sequence[Document]) -> IndexStats:
        """Bring the index up to date with ``documents``, the whole corpus as it is now (added, changed
        and missing documents are detected by content hash); only what changed goes to the LLM."""
        return run_sync(self.aupdate(documents))

    async def aupdate(self, documents: Sequence[Document]) -> IndexStats:
        """Async :meth:`update`."""
        return await self._arefresh(documents, "update")

    def delete_ref_doc(self, ref_doc_id: str) -> IndexStats:
        """Drop the document ``ref_doc_id`` with its chunks, then bring the graph, communities and reports up to
        date as :meth:`update` does (only the reports of changed communities go to the LLM). An id the store does
        not hold is an :class:`InputDataError`.

        Example:

        ```python
        stats = index.delete_ref_doc("Lothair II")
        stats.documents_deleted, stats.reports_regenerated
        ```
        """
        return run_sync(self.adelete_ref_doc(ref_doc_id))

    async def adelete_ref_doc(self, ref_doc_id: str) -> IndexStats:
        """Async :meth:`delete_ref_doc`."""

        def delete(state: GraphRAGState) -> tuple[int, int, int]:
            state.delete_document(ref_doc_id)
            return 0, 0, 1

        with writer_lock(self.store_dir, "GraphRAG delete"):
            if ref_doc_id not in self.documents():
                raise InputDataError(f"{self.store_dir} holds no document {ref_doc_id!r}: nothing was deleted.")
            return await self._arefresh_locked(delete, "delete")

    async def _arefresh(self, documents: Sequence[Document], command: str) -> IndexStats:
        docs = check_corpus(documents)
        splitter, key = chunker(self.text_splitter, self.chunk_size, self.chunk_overlap)
        with writer_lock(self.store_dir, f"GraphRAG {command}"):  # one writer per store at a time
            return await self._arefresh_locked(lambda state: sync_documents(state, docs, splitter, key), command)

    async def _arefresh_locked(
        self, store_documents: Callable[[GraphRAGState], tuple[int, int, int]], command: str
    ) -> IndexStats:
        """One run: ``store_documents`` stores the documents' changes, ``(added, changed, deleted)``, then the
        graph, communities and reports follow."""
        started = time.perf_counter()
        state, meter = self.state, usage_meter(self.llm)
        usage_before = meter.snapshot()
        interrupted = state.interrupted_runs()
        if interrupted:
            logger.warning("Resuming after %d interrupted run(s) of %s.", len(interrupted), self.store_dir)
        state.set_meta("config", self.model_dump(include=set(_PERSISTED)))
        run_id = state.start_run(command)

        added, changed, deleted = store_documents(state)
        extracted, failed_chunks = await self._aextract(state)
        entities, relationships = self._merge_and_write(state)
        previous_ids = {c.id for c, _ in state.communities()}
        communities, next_id, edges = self._detect(state, entities, relationships)
        fingerprints, generated, reused, failed_reports = await self._areport(
            state, communities, entities, relationships, run_id
        )
        regenerated = len(generated)
        state.replace_communities([(c, fingerprints.get(c.id)) for c in communities], next_id, edges)
        state.prune_reports()
        state.prune_extractions()
        state.set_meta("built", True)

        usage = meter.snapshot() - usage_before
        stats = IndexStats(
            documents=state.count("documents"),
            chunks=state.count("chunks"),
            entities=len(entities),
            relationships=len(relationships),
            communities=len(communities),
            reports_total=len(fingerprints),
            reports_regenerated=regenerated,
            llm_calls=usage.llm_calls,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            seconds=round(time.perf_counter() - started, 2),
            documents_added=added,
            documents_changed=changed,
            documents_deleted=deleted,
            chunks_extracted=extracted,
            chunks_failed=failed_chunks,
            reports_new=sum(cid not in previous_ids for cid in generated),
            reports_reused=reused,
            reports_failed=failed_reports,
            resumed=bool(interrupted),
            tokens_estimated=usage.estimated,
        )
        state.finish_run(run_id, stats.as_dict())
        state.mark_runs(interrupted, "resumed")
        logger.info("%s: regenerated %d of %d community reports.", command, regenerated, len(fingerprints))
        return stats

    async def _aextract(self, state: GraphRAGState) -> tuple[int, int]:
        config = self.extractor.config_hash()
        pending = state.pending_chunks(config)
        extractor_config = self.extractor.model_dump()
        tasks = [LLMTask(c.text_hash, partial(_extract_task, extractor_config, c.text)) for c in pending]

        def save(outcome: TaskOutcome) -> None:
            state.save_extraction(outcome.key, config, outcome.result, outcome.error)

        outcomes = await self.executor.arun(
            tasks, self.llm, on_result=save, desc="Extracting entities", show_progress=self.show_progress
        )
        failed = [o for o in outcomes if not o.ok]
        for o in failed[:5]:
            logger.warning("Extraction failed for a chunk (text %s): %s", o.key, o.error)
        return len(outcomes) - len(failed), len(failed)

    def _merge_and_write(self, state: GraphRAGState) -> tuple[dict[str, Entity], dict[str, Relationship]]:
        rows = state.extractions(self.extractor.config_hash())
        entities, relationships = merge_extractions(
            (ChunkExtraction(c.chunk_id, c.doc_id, ExtractionResult.model_validate(r), c.text) for c, r in rows),
            max_descriptions=self.max_descriptions,
        )
        chunks = {c.chunk_id: c for c in state.chunks()}
        old_e, old_r = state.graph_hashes()
        old_c: dict[str, str] = state.get_meta("graph_chunks", {}) or {}
        old_rel_endpoints = {rid: tuple(r) for rid, r in (state.get_meta("graph_rel_endpoints", {}) or {}).items()}
        chunk_hashes = {i: c.text_hash for i, c in chunks.items()}
        diff = GraphDiff.between((old_e, old_r, old_c), entities, relationships, chunk_hashes, old_rel_endpoints)
        sink = self._graph_sink()
        try:
            sink.write(entities, relationships, chunks, diff)
        finally:
            self._close_sink()
        state.replace_graph(entities.values(), relationships.values())
        state.set_meta("graph_chunks", chunk_hashes)
        state.set_meta("graph_rel_endpoints", {rid: [r.source, r.target] for rid, r in relationships.items()})
        return entities, relationships

    def _graph_sink(self) -> GraphSink:
        if self._sink is None:
            self._sink, self._own_sink = LadybugGraphSink(self.store_dir / GRAPH_FILE), True
        return self._sink

    def _detect(
        self, state: GraphRAGState, entities: dict[str, Entity], relationships: dict[str, Relationship]
    ) -> tuple[list[Community], int, dict[tuple[str, str], float]]:
        edges: dict[tuple[str, str], float] = {}
        for r in relationships.values():
            pair = (min(r.source, r.target), max(r.source, r.target))
            edges[pair] = edges.get(pair, 0.0) + r.weight
        previous = [c for c, _ in state.communities()]
        detector = self.detector.model_copy().fit(
            entities,
            edges,
            previous,
            previous_edges=state.community_edges(),
            next_id=int(state.get_meta("next_community_id", 0)),
        )
        return list(detector.communities_ or []), int(detector.next_id_ or 0), edges

    async def _areport(
        self,
        state: GraphRAGState,
        communities: list[Community],
        entities: dict[str, Entity],
        relationships: dict[str, Relationship],
        run_id: int,
    ) -> tuple[dict[str, str], list[str], int, int]:
        """Reports for the communities that need one: ``(fingerprints by community id, ids of the communities
        whose report was generated now, reports reused, reports failed)``."""
        rels = list(relationships.values())
        fingerprints: dict[str, str] = {}
        contexts: dict[str, ReportContext] = {}
        tasks: list[LLMTask] = []
        reused = 0
        reporter_config = self.reporter.model_dump()
        for community in communities:
            if community.size < self.min_community_size:
                continue
            context = self.reporter.context(community, entities, rels)
            fp = self.reporter.fingerprint(community, context)
            fingerprints[community.id], contexts[fp] = fp, context
            stored = state.report(fp)
            if stored is not None and stored.status == "ok":
                reused += 1
                if stored.community_id != community.id:  # same input under a new id
                    state.save_report(fp, community.id, stored.report, None, asdict(context), stored.run_id)
            elif fp not in {t.key for t in tasks}:
                tasks.append(LLMTask(fp, partial(_report_task, reporter_config, context)))

        def save(outcome: TaskOutcome) -> None:
            context = contexts[outcome.key]
            state.save_report(outcome.key, context.community_id, outcome.result, outcome.error, asdict(context), run_id)

        outcomes = await self.executor.arun(
            tasks, self.llm, on_result=save, desc="Community reports", show_progress=self.show_progress
        )
        failed = [o for o in outcomes if not o.ok]
        for o in failed[:5]:
            logger.warning("Report failed for community %s: %s", contexts[o.key].community_id, o.error)
        generated = [contexts[o.key].community_id for o in outcomes if o.ok]
        return fingerprints, generated, reused, len(failed)

    # ------------------------------------------------------------------ reading

    def documents(self) -> dict[str, DocumentRecord]:
        """The indexed documents by id."""
        return self.state.documents()

    def chunks(self, chunk_ids: Sequence[str] | None = None) -> list[ChunkRecord]:
        """The chunks with ``chunk_ids`` (default: all)."""
        return self.state.chunks(chunk_ids)

    def entities(self) -> dict[str, Entity]:
        """The merged entities by id."""
        return self.state.entities()

    def relationships(self) -> dict[str, Relationship]:
        """The merged relationships by id."""
        return self.state.relationships()

    def communities(self) -> list[Community]:
        """The communities of every level."""
        return [c for c, _ in self.state.communities()]

    def reports(self, level: int | None = None) -> list[StoredReport]:
        """Stored reports of the communities; with ``level``, those of the cut at that level (the
        communities of that level plus the leaves above it), as the global search reads them."""
        out = []
        for community, fp in self.state.communities():
            if fp is None or (level is not None and not _in_cut(community, level)):
                continue
            record = self.state.report(fp)
            if record is None:
                continue
            report = CommunityReport.model_validate(record.report) if record.report else None
            out.append(StoredReport(community, fp, report, record.error, record.context))
        return out

    def runs(self) -> list[dict[str, Any]]:
        """Every command run on this store, with its status and figures (LLM usage included)."""
        return self.state.runs()

    def usage(self) -> LLMUsage:
        """LLM usage of this index object so far (all commands)."""
        return usage_meter(self.llm).snapshot()

    def as_query_engine(self, **kwargs: Any) -> Any:
        """A :class:`~llama_index_kgplus.graphrag.GlobalSearchEngine` over this index."""
        from llama_index_kgplus.graphrag._search import GlobalSearchEngine

        return GlobalSearchEngine.from_index(self, **kwargs)


def _in_cut(community: Community, level: int) -> bool:
    return community.level == level or (community.level < level and not community.children)
