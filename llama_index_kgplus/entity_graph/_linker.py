"""``EntityLinker``: records on every node the entities it mentions (an ingestion ``TransformComponent``).

The entity dictionary is built from the chosen sources (see :mod:`._sources`) over the nodes of the call, then
every node is matched against all of it (whole words, case-insensitive, leftmost-longest; see
:mod:`._names` for when two names are one entity). A node's result is ``metadata["entities"]``::

    [{"id": "ermengarde of tours", "name": "Ermengarde of Tours", "count": 1}, ...]

``count`` is how often the text names the entity. ``"about"`` marks the entity the node's document is about
(present even where the text does not name it): ``"title"``, its document title, or, for a document without
a title entity, ``"lead"``, the first entity that the reading sources found in its first chunk (encyclopedic
and news texts name their subject first). ``"extracted": "ner"|"llm"`` marks entities that the reading sources
found in this node (they link it even if spelled differently in the text; ``aliases`` lists a person's short
name and surname).
The ``llm`` source also records the relationships it read, as ``metadata["entity_relationships"]``. Both keys
are hidden from the embedding and the LLM.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Collection, Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from llama_index.core.async_utils import run_jobs
from llama_index.core.bridge.pydantic import Field, PrivateAttr, field_validator
from llama_index.core.schema import BaseNode, NodeRelationship, TransformComponent
from tqdm.auto import tqdm

from llama_index_kgplus._redact import get_logger
from llama_index_kgplus._structured import StructuredOutputError
from llama_index_kgplus._sync import run_sync
from llama_index_kgplus.entity_graph._dictionary import EntityDictionary, EntityMatch
from llama_index_kgplus.entity_graph._names import entity_key, is_linkable_name
from llama_index_kgplus.entity_graph._ner import DEFAULT_NER_LABELS, DEFAULT_NER_MODEL, SpacyEntityExtractor
from llama_index_kgplus.entity_graph._sources import (
    add_glossary,
    add_kg,
    add_titles,
    extraction_records,
    graph_extractor,
    llm_usage,
    load_glossary,
    metered_llm,
    node_text,
    parse_sources,
    read_kg,
)
from llama_index_kgplus.errors import InputDataError, KGPlusSetupError, NotFittedError

logger = get_logger(__name__)

ENTITIES_KEY = "entities"
RELATIONSHIPS_KEY = "entity_relationships"
_HIDDEN_KEYS = (ENTITIES_KEY, RELATIONSHIPS_KEY)


class EntityLinker(TransformComponent):
    """Links every node to the entities it mentions, from one or more entity sources.

    Sources: ``titles`` (document titles), ``kg`` (a knowledge graph in ``kg_store``), ``glossary``
    (``glossary``), ``ner`` (spaCy's English pipeline; the ``ner`` extra), ``llm`` (the GraphRAG extractor with
    an LLM: one call per node). After a call: ``dictionary_`` (the :class:`EntityDictionary` the sources
    gave for these nodes), ``n_entities_``, ``n_linked_nodes_``, ``llm_calls_`` and ``usage_`` (the LLM's own
    call and token counts, retries included; zero without the ``llm`` source).

    Example:

    ```python
    linker = EntityLinker.from_defaults(sources=["titles", "ner"])
    index = build_index(load_corpus("docs.jsonl"), "./index", extra_transformations=[linker])
    graph = EntityGraph.from_nodes(index.docstore.docs.values(), linker.dictionary_)
    ```
    """

    sources: list[str] = Field(default_factory=lambda: ["titles"], description="Entity sources, in order.")
    kg_store: str | None = Field(default=None, description="Graph store URI of the knowledge graph (kg source).")
    glossary: Any = Field(default=None, description="A Glossary, or the path of one (glossary source).")
    ner_model: str = Field(default=DEFAULT_NER_MODEL, description="spaCy pipeline of the ner source.")
    ner_labels: list[str] = Field(default_factory=lambda: list(DEFAULT_NER_LABELS), description="NER labels kept.")
    ner_noun_phrases: bool = Field(default=True, description="ner: also runs of proper nouns.")
    ner_parser: bool = Field(
        default=False,
        description="ner: also run spaCy's parser and keep only proper-noun runs inside noun chunks (slower).",
    )
    ner_recognizer: bool = Field(
        default=True,
        description="ner: run spaCy's entity recognizer (False: names are proper-noun runs alone, about 2x faster).",
    )
    ner_compound_nouns: bool = Field(
        default=False, description='ner: also runs of two or more nouns with a common noun ("church courts").'
    )
    ner_processes: int | None = Field(
        default=None,
        ge=1,
        exclude=True,
        description="ner: reading processes (None: as many as the usable cores; 1: in this process).",
    )
    llm_model: str | None = Field(
        default=None, description="Name of the llm source's model (set by from_defaults; part of the cache key)."
    )
    extractor: Any = Field(
        default=None,
        description="The GraphRAG GraphExtractor of the llm source (None: its defaults with min_entities=1).",
    )
    lead_entity: bool = Field(
        default=True, description="A document without a title entity is about the first entity ner/llm read in it."
    )
    min_name_length: int = Field(default=2, ge=1, description="Names shorter than this (in characters) never link.")
    stop_names: list[str] = Field(
        default_factory=list, description="Names that never link (besides names made only of stop words)."
    )
    num_workers: int = Field(default=4, ge=1, exclude=True, description="Concurrent LLM calls (llm source).")
    show_progress: bool = Field(default=False, exclude=True, description="Show progress bars.")

    _llm: Any = PrivateAttr(default=None)
    _known: EntityDictionary | None = PrivateAttr(default=None)
    _kg: tuple[list, list] | None = PrivateAttr(default=None)
    _ner: SpacyEntityExtractor | None = PrivateAttr(default=None)
    _learned: dict[str, Any] = PrivateAttr(default_factory=dict)

    @field_validator("sources", mode="before")
    @classmethod
    def _valid_sources(cls, value: Any) -> list[str]:
        return parse_sources(value)

    @field_validator("glossary", mode="before")
    @classmethod
    def _load_glossary(cls, value: Any) -> Any:
        return load_glossary(str(value)) if isinstance(value, (str, bytes)) or hasattr(value, "__fspath__") else value

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this component under."""
        return "EntityLinker"

    @classmethod
    def from_defaults(
        cls,
        sources: str | Sequence[str] = ("titles",),
        *,
        llm: Any = None,
        known_entities: EntityDictionary | None = None,
        **kwargs: Any,
    ) -> EntityLinker:
        """A linker over ``sources``; the ``llm`` source uses ``llm`` (else ``Settings.llm``).
        ``known_entities`` (e.g. ``EntityGraph.entities`` of an existing index) are matched too, so documents
        added later link to the entities of the earlier ones (they are not part of ``dictionary_``)."""
        if isinstance(kwargs.get("glossary"), (str, Path)):
            kwargs["glossary"] = load_glossary(str(kwargs["glossary"]))
        linker = cls(sources=parse_sources(sources), **kwargs)
        if "llm" in linker.sources:
            if llm is None:
                from llama_index.core import Settings

                llm = Settings.llm
            linker._llm = metered_llm(llm)
            if linker.llm_model is None:
                linker.llm_model = str(getattr(llm.metadata, "model_name", type(llm).__name__))
        linker._known = known_entities
        return linker

    # ------------------------------------------------------------------ learned attributes

    def _get(self, name: str) -> Any:
        if name not in self._learned:
            raise NotFittedError(f"EntityLinker: {name}_ is set when the linker runs (call it, or fit(nodes)).")
        return self._learned[name]

    @property
    def dictionary_(self) -> EntityDictionary:
        """The entities found in the nodes the linker ran on (:class:`EntityDictionary`); set when it runs."""
        return self._get("dictionary")

    @property
    def n_entities_(self) -> int:
        """Number of entities in :attr:`dictionary_`; set when the linker runs."""
        return len(self._get("dictionary"))

    @property
    def n_linked_nodes_(self) -> int:
        """Number of nodes that got at least one entity; set when the linker runs."""
        return self._get("n_linked_nodes")

    @property
    def llm_calls_(self) -> int:
        """LLM calls made by the ``llm`` source in the last run (0 without it)."""
        return self.usage_.llm_calls

    @property
    def usage_(self) -> Any:
        """``LLMUsage`` of the last call: LLM calls, prompt and completion tokens."""
        return self._get("usage")

    # ------------------------------------------------------------------ the dictionary

    def fit(self, nodes: Iterable[BaseNode]) -> EntityLinker:
        """Build ``dictionary_`` from the sources over ``nodes`` without reading any text again: the reading
        sources contribute what earlier calls (or :meth:`read`) recorded in the nodes' metadata. ``nodes`` is
        iterated twice: a list, or an iterable that reads its items anew each time (``load_corpus(path,
        stream=True)``) for memory flat in their number. Fitted on a corpus, it is the dictionary that :meth:`link`
        links each batch of its chunks with."""
        self._learned["dictionary"] = self._dictionary(nodes, None)
        return self

    def read(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        """Record in ``nodes``' metadata the names that the reading sources (``ner``, ``llm``) find in them, without
        linking anything: the first pass of a streaming ingest, whose chunks :meth:`fit` then builds the
        dictionary from. Nothing to read for the dictionary sources. ``usage_`` adds up the LLM calls of the
        reads since the linker was last called."""
        return run_sync(self.aread(nodes, **kwargs))

    async def aread(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        """Async :meth:`read`."""
        show_progress = kwargs.get("show_progress", self.show_progress)
        earlier = self._learned.get("usage") or llm_usage(None)
        readings = self._start(nodes)
        if "ner" in self.sources:
            await asyncio.to_thread(self._read_ner, nodes, readings, show_progress)
        if "llm" in self.sources:
            await self._aread_llm(nodes, readings, show_progress)
        self._learned["usage"] = earlier + self._learned["usage"]  # the reads of one corpus, in batches
        for node in nodes:
            reading = readings[node.node_id]
            node.metadata[ENTITIES_KEY] = [
                {"id": entity_key(name), "name": name, "count": 0, "extracted": source, "aliases": list(aliases)}
                for source, names in reading.names.items()
                for name, aliases in names
            ]
            if reading.relationships:
                node.metadata[RELATIONSHIPS_KEY] = reading.relationships
        return nodes

    def link(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        """Link ``nodes`` with ``dictionary_`` as :meth:`fit` left it, adding no entity; the reading sources bring
        what :meth:`read` recorded in each node. The batches of a streaming ingest are linked so, with the
        dictionary of every document, and get the links a call on every chunk at once would give.

        Example:

        ```python
        linker = EntityLinker.from_defaults(sources=["titles"]).fit(documents)
        linker.link(chunks)  # each chunk's metadata["entities"]
        ```
        """
        readings = {n.node_id: _recorded(n) for n in nodes}
        linked = self._link(nodes, self.dictionary_, readings, kwargs.get("show_progress", self.show_progress))
        self._learned["n_linked_nodes"] = linked
        self._learned.setdefault("usage", llm_usage(None))
        return nodes

    def _check(self) -> None:
        if "kg" in self.sources and not self.kg_store:
            raise InputDataError("The 'kg' entity source needs a knowledge graph: give kg_store (--kg-store URI).")
        if "glossary" in self.sources and self.glossary is None:
            raise InputDataError("The 'glossary' entity source needs a glossary: give glossary (--glossary FILE).")

    def _dictionary(self, nodes: Iterable[BaseNode], extracted: dict[str, _Reading] | None) -> EntityDictionary:
        """The dictionary of the sources over ``nodes`` (iterated twice: titles first, as they name their entities);
        ``extracted``: what the reading sources found in each node (None: what calls recorded in their metadata)."""
        self._check()
        if iter(nodes) is nodes:
            nodes = list(nodes)
        entities = EntityDictionary()
        if "titles" in self.sources:
            add_titles(entities, nodes)
        if "kg" in self.sources:
            if self._kg is None:
                self._kg = read_kg(self.kg_store)  # type: ignore[arg-type]
            add_kg(entities, *self._kg)
        if "glossary" in self.sources:
            add_glossary(entities, self.glossary)
        for node in nodes:
            reading = _recorded(node) if extracted is None else extracted.get(node.node_id)
            if reading is None:
                continue
            for source, names in reading.names.items():
                for name, aliases in names:
                    entities.add(name, source, aliases=aliases, doc_id=node.ref_doc_id or node.node_id)
            for source_name, target_name, rel_type in reading.relationships:
                entities.relate(source_name, target_name, rel_type)
        stop = frozenset(entity_key(s) for s in self.stop_names)
        entities.remove([e.key for e in entities if not is_linkable_name(e.name, self.min_name_length, stop)])
        for entity in entities:
            entity.aliases = {a for a in entity.aliases if is_linkable_name(a, self.min_name_length, stop)}
        return entities

    # ------------------------------------------------------------------ reading sources

    def _ner_extractor(self) -> SpacyEntityExtractor:
        if self._ner is None:
            self._ner = SpacyEntityExtractor(
                self.ner_model,
                self.ner_labels,
                self.ner_noun_phrases,
                parser=self.ner_parser,
                recognizer=self.ner_recognizer,
                compound_nouns=self.ner_compound_nouns,
                n_process=self.ner_processes,
            )
        return self._ner

    def _graph_extractor(self) -> Any:
        if self._llm is None:
            raise KGPlusSetupError(
                "The 'llm' entity source needs an LLM: build the linker with from_defaults(llm=...)."
            )
        if self.extractor is None:
            self.extractor = graph_extractor()
        return self.extractor

    def _read_ner(self, nodes: Sequence[BaseNode], readings: dict[str, _Reading], show_progress: bool) -> None:
        extractor = self._ner_extractor()
        names = self._ner_names(extractor, [node_text(n) for n in nodes], show_progress)
        for node, found in zip(nodes, names):
            readings[node.node_id].names["ner"] = [(e.name, e.aliases) for e in found]

    async def _aread_llm(self, nodes: Sequence[BaseNode], readings: dict[str, _Reading], show_progress: bool) -> None:
        extractor = self._graph_extractor()
        before = llm_usage(self._llm)
        jobs = [self._aextract(extractor, node_text(n)) for n in nodes]
        results = await run_jobs(
            jobs, workers=self.num_workers, show_progress=show_progress, desc="Extracting entities (LLM)"
        )
        for node, (found, relationships) in zip(nodes, results):
            readings[node.node_id].names["llm"] = [(name, ()) for name in found]
            readings[node.node_id].relationships = relationships
        self._learned["usage"] = llm_usage(self._llm) - before

    def _ner_names(self, extractor: SpacyEntityExtractor, texts: list[str], show_progress: bool) -> list[list[Any]]:
        with tqdm(total=len(texts), desc="Named entities", disable=not show_progress) as bar:
            return extractor.extract(texts, on_progress=bar.update)

    async def _aextract(self, extractor: Any, text: str) -> tuple[list[str], list[list[str]]]:
        try:
            return extraction_records(await extractor.aextract_text(text, llm=self._llm))
        except StructuredOutputError as exc:
            logger.warning("LLM entity extraction failed for one node (%s); it keeps its dictionary links.", exc)
            return [], []

    # ------------------------------------------------------------------ linking

    def _link(
        self, nodes: Sequence[BaseNode], entities: EntityDictionary, readings: dict[str, _Reading], show_progress: bool
    ) -> int:
        found = {
            node.node_id: entities.find(node_text(node))
            for node in tqdm(nodes, desc="Linking entities", disable=not show_progress)
        }  # each text is matched once: the lead entities below are read from these matches too
        about = self._about(nodes, entities, readings, found)
        linked = 0
        for node in nodes:
            records: dict[str, dict[str, Any]] = {}
            record = partial(_record, records, entities)
            for match in found[node.node_id]:
                record(match.key)["count"] += 1
            doc_about = about.get(node.ref_doc_id or node.node_id)
            if doc_about is not None:
                record(doc_about[0])["about"] = doc_about[1]
            reading = readings.get(node.node_id) or _Reading()
            for source, names in reading.names.items():
                for name, aliases in names:
                    if (key := entity_key(name)) in entities:
                        extracted = record(key)
                        extracted.setdefault("extracted", source)
                        if aliases:
                            extracted["aliases"] = sorted(set(extracted.get("aliases", [])) | set(aliases))
            node.metadata[ENTITIES_KEY] = list(records.values())
            if reading.relationships:
                node.metadata[RELATIONSHIPS_KEY] = reading.relationships
            for key in _HIDDEN_KEYS:
                for excluded in (node.excluded_embed_metadata_keys, node.excluded_llm_metadata_keys):
                    if key not in excluded:
                        excluded.append(key)
            linked += bool(records)
        return linked

    def _about(
        self,
        nodes: Sequence[BaseNode],
        entities: EntityDictionary,
        readings: dict[str, _Reading],
        found: dict[str, list[EntityMatch]],
    ) -> dict[str, tuple[str, str]]:
        """Per document: the entity it is about (its title's, else its lead entity) and why (``found``: the
        dictionary's matches in each node)."""
        about: dict[str, tuple[str, str]] = {}
        first: dict[str, BaseNode] = {}
        for node in nodes:
            doc_id = node.ref_doc_id or node.node_id
            title = node.metadata.get("title")
            if "titles" in self.sources and isinstance(title, str) and entity_key(title) in entities:
                about[doc_id] = (entity_key(title), "title")
            elif NodeRelationship.PREVIOUS not in node.relationships:
                first.setdefault(doc_id, node)
        if not self.lead_entity:
            return about
        for doc_id, node in first.items():
            reading = readings.get(node.node_id)
            read = {entity_key(n) for names in (reading.names.values() if reading else ()) for n, _ in names}
            lead = next((m.key for m in found[node.node_id] if m.key in read), None)
            if doc_id not in about and lead is not None:
                about[doc_id] = (lead, "lead")
        return about

    def _start(self, nodes: Sequence[BaseNode]) -> dict[str, _Reading]:
        self._check()
        if "llm" in self.sources:
            self._graph_extractor()  # fails now, not inside the event loop, without an LLM
        self._learned["usage"] = llm_usage(None)
        return {n.node_id: _Reading() for n in nodes}

    def _finish(self, nodes: Sequence[BaseNode], readings: dict[str, _Reading], show_progress: bool) -> None:
        entities = self._dictionary(nodes, readings)
        matching = copy.deepcopy(self._known).merge(entities) if self._known is not None else entities
        linked = self._link(nodes, matching, readings, show_progress)
        self._learned.update(dictionary=entities, n_linked_nodes=linked)

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        show_progress = kwargs.get("show_progress", self.show_progress)
        readings = self._start(nodes)
        if "ner" in self.sources:
            self._read_ner(nodes, readings, show_progress)
        if "llm" in self.sources:
            run_sync(self._aread_llm(nodes, readings, show_progress))
        self._finish(nodes, readings, show_progress)
        return nodes

    async def acall(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        """Async ``__call__``: link the entities of ``nodes`` (spaCy runs in a thread, LLM reads concurrently)."""
        show_progress = kwargs.get("show_progress", self.show_progress)
        readings = self._start(nodes)
        if "ner" in self.sources:
            await asyncio.to_thread(self._read_ner, nodes, readings, show_progress)
        if "llm" in self.sources:
            await self._aread_llm(nodes, readings, show_progress)
        await asyncio.to_thread(self._finish, nodes, readings, show_progress)
        return nodes

    def relink(self, nodes: Sequence[BaseNode], unread: Collection[str], **kwargs: Any) -> Sequence[BaseNode]:
        """Link ``nodes`` as a call on all of them would, reading (``ner``, ``llm``) only the nodes whose ids are in
        ``unread``: the others bring what an earlier call recorded in their metadata. The dictionary is built
        and matched over all of them, so a node that was not read is linked to the entities of the new ones too
        (an index sync reads only the chunks of new and changed documents)."""
        return run_sync(self.arelink(nodes, unread, **kwargs))

    async def arelink(self, nodes: Sequence[BaseNode], unread: Collection[str], **kwargs: Any) -> Sequence[BaseNode]:
        """Async :meth:`relink`."""
        show_progress = kwargs.get("show_progress", self.show_progress)
        unread = set(unread)
        readings = self._start(nodes)
        fresh = [n for n in nodes if n.node_id in unread]
        readings.update({n.node_id: _recorded(n) for n in nodes if n.node_id not in unread})
        if "ner" in self.sources and fresh:
            await asyncio.to_thread(self._read_ner, fresh, readings, show_progress)
        if "llm" in self.sources and fresh:
            await self._aread_llm(fresh, readings, show_progress)
        await asyncio.to_thread(self._finish, nodes, readings, show_progress)
        return nodes


def _record(records: dict[str, dict[str, Any]], entities: EntityDictionary, key: str) -> dict[str, Any]:
    """The node's record of entity ``key`` (made on first use)."""
    return records.setdefault(key, {"id": key, "name": entities.entities[key].name, "count": 0})


class _Reading:
    """What the reading sources found in one node: ``(name, aliases)`` per source, and ``[source, target, type]``
    relationships."""

    def __init__(self) -> None:
        self.names: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
        self.relationships: list[list[str]] = []


def _recorded(node: BaseNode) -> _Reading:
    """The reading sources' results that an earlier call left in the node's metadata."""
    reading = _Reading()
    for record in node.metadata.get(ENTITIES_KEY) or []:
        source = record.get("extracted") if isinstance(record, dict) else None
        if source:
            reading.names.setdefault(source, []).append((record["name"], tuple(record.get("aliases", ()))))
    reading.relationships = [list(r) for r in node.metadata.get(RELATIONSHIPS_KEY) or [] if len(r) == 3]
    return reading
