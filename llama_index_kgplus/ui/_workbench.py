"""The workbench's data and engines, without any page code: the sources of a :class:`WorkbenchConfig` opened
once, the same routed engines ``kgplus ask`` builds (streaming), and the reads the Browse page needs (documents,
chunks, summary trees, KG entities and their neighbourhood, GraphRAG communities and reports)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from llama_index_kgplus import KGPlusSources
from llama_index_kgplus._assembly import ENGINE_NAMES
from llama_index_kgplus.llm import resolve_model_spec
from llama_index_kgplus.ui._config import WorkbenchConfig
from llama_index_kgplus.ui._evidence import EvidenceItem, evidence_items, glossary_view, paths_dot

__all__ = ["Answer", "Workbench"]


@dataclass
class Answer:
    """A finished answer and everything the Ask page shows beside it."""

    question: str
    text: str
    route: str | None
    engine: str | None
    reason: str
    fallback: str | None
    usage: dict[str, Any] | None
    items: list[EvidenceItem] = field(default_factory=list)
    glossary: dict[str, Any] | None = None
    summary_level: Any = None


class Workbench:
    """The sources of one ``kgplus ui`` session; models load on the first question, not at start-up.

    Example:

    ```python
    bench = Workbench(WorkbenchConfig(index="./index").check())
    response = bench.query("How do I create a virtual environment?")
    text = "".join(bench.tokens(response))          # the stream, as the Ask page shows it
    answer = bench.finish("How do I ...?", response, text)
    [item.title for item in answer.items]
    ```
    """

    _shared: dict[str, Workbench] = {}
    _shared_lock = threading.Lock()

    @classmethod
    def shared(cls, config_json: str) -> Workbench:
        """The one workbench of this process for a configuration (JSON of :class:`WorkbenchConfig`): every
        browser session shares its sources and models."""
        with cls._shared_lock:
            if config_json not in cls._shared:
                cls._shared[config_json] = cls(WorkbenchConfig.model_validate_json(config_json))
            return cls._shared[config_json]

    def __init__(self, config: WorkbenchConfig, *, llm: Any = None, embed_model: Any = None) -> None:
        self.config = config
        self._llm, self._embed_model = llm, embed_model
        self._stack = contextlib.ExitStack()
        self._lock = threading.Lock()
        self._answer_lock = threading.Lock()
        self._open_lock = threading.Lock()  # browser sessions share this object: each source is opened once
        self._sources: KGPlusSources | None = None
        self._docstore: Any = None
        self._graphrag: Any = None

    # ------------------------------------------------------------------ asking

    @property
    def sources(self) -> KGPlusSources:
        """The checked, opened sources (the :class:`~llama_index_kgplus.KGPlusSources` of ``kgplus ask``, with
        streaming engines and the glossary), opened on first use."""
        with self._open_lock:
            if self._sources is None:
                c = self.config
                sources = KGPlusSources(
                    index=c.index, kg_store=c.kg_store, graphrag=c.graphrag, tables=c.tables or None,
                    glossary=c.glossary, llm=self._llm or resolve_model_spec(c.llm, "llm"),
                    embed_model=self._embed_model or resolve_model_spec(None, "embed_model"),
                    similarity_top_k=c.top_k, context_budget=c.context_budget, streaming=True,
                )  # fmt: skip
                self._sources = self._stack.enter_context(sources)
        return self._sources

    @property
    def routes(self) -> list[str]:
        """The routes the given sources answer."""
        return list(self.sources.routes) if self._has_answer_sources() else []

    def warm_sources(self) -> list[str]:
        """Open the sources now (the server does it before it listens, so the first page is quick); the routes."""
        routes = self.routes
        if self.config.index is not None:
            self.documents()
        return routes

    def _has_answer_sources(self) -> bool:
        c = self.config
        return bool(c.index or c.kg_store or c.graphrag or c.tables)

    def warm_up(self) -> None:
        """Load the models and build the routed engine (the first question does it otherwise)."""
        self.sources.routed_query_engine()

    def query(self, question: str) -> Any:
        """Route ``question`` and retrieve; the response streams its answer (``tokens``) when its engine can, and
        carries its ``usage``."""
        with self._lock:
            return self.sources.routed_query_engine().query(question)

    @contextlib.contextmanager
    def answering(self) -> Iterator[None]:
        """Hold while one question is answered, from retrieval to the last streamed token: every browser session
        shares the local model, and one llama.cpp model must not run two generations at once (a second tab
        waits; Streamlit's Stop leaves the block and frees it)."""
        with self._answer_lock:
            yield

    @staticmethod
    def tokens(response: Any) -> Iterator[str]:
        """The answer's text as it is generated (one piece for an engine that does not stream)."""
        gen = getattr(response, "response_gen", None)
        if gen is None:
            yield str(response.response or "")
            return
        yield from gen

    def finish(self, question: str, response: Any, text: str) -> Answer:
        """The :class:`Answer` of a response whose stream was read into ``text``."""
        meta = dict(response.metadata or {})
        routing = meta.get("routing") or {}
        engine = ENGINE_NAMES.get(meta.get("engine", ""), meta.get("engine"))
        return Answer(
            question=question, text=text.strip(), route=meta.get("route"), engine=engine,
            reason=routing.get("reason", ""), fallback=routing.get("fallback"), usage=meta.get("usage"),
            items=evidence_items(response, text, engine), glossary=glossary_view(meta), summary_level=meta.get("level"),
        )  # fmt: skip

    # ------------------------------------------------------------------ browsing an index

    @property
    def docstore(self) -> Any:
        """The index's docstore (read from disk, no model)."""
        if self.config.index is None:
            return None
        with self._open_lock:
            if self._docstore is None:
                from llama_index.core.storage.docstore import SimpleDocumentStore

                from llama_index_kgplus._indexing import check_index_files

                check_index_files(self.config.index)
                self._docstore = SimpleDocumentStore.from_persist_dir(str(self.config.index))
        return self._docstore

    def _nodes(self) -> list[Any]:
        return list(self.docstore.docs.values()) if self.docstore is not None else []

    def documents(self) -> list[str]:
        """The document ids of the index, sorted."""
        ids = {n.metadata.get("doc_id") or n.ref_doc_id for n in self._nodes() if not n.metadata.get("level")}
        return sorted(i for i in ids if i)

    def chunks(self, doc_id: str) -> list[Any]:
        """The chunks (level 0) of one document, in document order."""
        chunks = [
            n for n in self._nodes()
            if not n.metadata.get("level") and (n.metadata.get("doc_id") or n.ref_doc_id) == doc_id
        ]  # fmt: skip
        return sorted(chunks, key=lambda n: (n.start_char_idx or 0, n.node_id))

    def document_text(self, doc_id: str) -> str:
        """The whole document, joined from its chunks (their overlaps removed where offsets are known)."""
        chunks, parts, end = self.chunks(doc_id), [], 0
        for chunk in chunks:
            text, start = chunk.get_content(), chunk.start_char_idx
            if start is not None and end > start:
                text = text[end - start :]
            parts.append(text)
            end = chunk.end_char_idx if chunk.end_char_idx is not None else end
        return "".join(parts) if all(c.start_char_idx is not None for c in chunks) else "\n".join(parts)

    def summaries(self, doc_id: str | None = None) -> list[Any]:
        """Summary nodes (level 1 and up), of one document if given, highest level first."""
        nodes = [n for n in self._nodes() if n.metadata.get("level")]
        if doc_id is not None:
            nodes = [n for n in nodes if doc_id in (n.metadata.get("doc_ids") or [n.metadata.get("doc_id")])]
        return sorted(nodes, key=lambda n: (-int(n.metadata["level"]), n.node_id))

    def node(self, node_id: str) -> Any:
        """One node of the index by id (None if unknown)."""
        return self.docstore.docs.get(node_id) if self.docstore is not None else None

    # ------------------------------------------------------------------ browsing the knowledge graph

    def kg_entities(self, search: str = "", limit: int = 50) -> list[tuple[str, str]]:
        """``(id, name)`` of KG entities whose name contains ``search`` (case-insensitive), at most ``limit``."""
        kg = self.sources.knowledge_graph if self._has_answer_sources() else None
        if kg is None:
            return []
        needle = search.strip().lower()
        seen: dict[str, str] = {}
        for cid, name, synonym in kg.names():
            if not synonym and needle in name.lower() and cid not in seen:
                seen[cid] = name
                if len(seen) >= limit:
                    break
        return sorted(seen.items(), key=lambda x: x[1].lower())

    def kg_neighbourhood(self, cid: str, limit: int = 40) -> tuple[list[str], str]:
        """The relationships of one entity: ``(path texts, Graphviz DOT)``."""
        from llama_index_kgplus.kg import KGPath

        paths = [KGPath.from_raw(raw).to_dict() for raw in self.sources.knowledge_graph.neighbours([cid], limit=limit)]
        return [p["text"] for p in paths], paths_dot(paths)

    # ------------------------------------------------------------------ browsing GraphRAG

    def communities(self, search: str = "") -> list[dict[str, Any]]:
        """GraphRAG communities with their report (title, rating, summary, findings), entities and source
        documents, filtered by ``search`` in the title, summary or entity names."""
        if self.config.graphrag is None:
            return []
        with self._open_lock:
            if self._graphrag is None:
                from llama_index.core.llms import MockLLM

                from llama_index_kgplus.graphrag import GraphRAGIndex

                self._graphrag = GraphRAGIndex.from_defaults(self.config.graphrag, llm=MockLLM(), show_progress=False)
                self._stack.callback(self._graphrag.close)
        entities = self._graphrag.entities()
        needle = search.strip().lower()
        out = []
        for stored in self._graphrag.reports():
            names = [entities[e].name if e in entities else e for e in stored.community.entity_ids]
            report = stored.report
            record = {
                "id": stored.community.id, "level": stored.community.level, "entities": names,
                "title": report.title if report else f"(no report: {stored.error})",
                "rating": report.rating if report else None, "summary": report.summary if report else "",
                "findings": [f.summary + ": " + f.explanation for f in report.findings] if report else [],
                "documents": sorted({d for e in stored.community.entity_ids if e in entities
                                     for d in entities[e].doc_ids}),
            }  # fmt: skip
            haystack = " ".join([record["title"], record["summary"], *names]).lower()
            if needle in haystack:
                out.append(record)
        return sorted(out, key=lambda r: (-(r["rating"] or 0), r["id"]))

    def close(self) -> None:
        """Close every opened source."""
        self._stack.close()
