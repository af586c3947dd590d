"""Question -> entities -> every pair -> all shortest paths (bounded) -> deduplicated, ranked, capped paths.

Ranking rule (documented, deterministic): shorter paths first; then the lower sum of the relationships'
``rank`` property (rank 1 = most important; a missing or non-numeric rank counts as last; set
``higher_rank_first`` for scores where more is better); then the order in which the question mentions the
pair's entities; then the path text.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from llama_index.core.bridge.pydantic import BaseModel, Field, PrivateAttr
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.schema import BaseComponent

from llama_index_kgplus.events import KGEntitiesEvent, KGPathsEvent
from llama_index_kgplus.graph_stores._dialects import MAX_HOPS_LIMIT, RawPath
from llama_index_kgplus.kg._graph import KnowledgeGraph
from llama_index_kgplus.kg._matcher import EntityMatcher, EntityMention
from llama_index_kgplus.kg._paths import KGPath

dispatcher = get_dispatcher(__name__)


class KGPathResult(BaseModel):
    """Entities found in a text and the paths between them."""

    entities: list[EntityMention] = Field(default_factory=list, description="Mentions in text order.")
    paths: list[KGPath] = Field(default_factory=list, description="Ranked paths (at most max_paths).")

    def to_dict(self) -> dict[str, Any]:
        """Exactly ``{"entities": [{"cid","name","start","end"}], "paths": [{"nodes","relationships","length","text"}]}``."""
        return {"entities": [e.to_dict() for e in self.entities], "paths": [p.to_dict() for p in self.paths]}


class KGPathFinder(BaseComponent):
    """Finds the relationship paths between the entities a text mentions.

    Example:

    ```python
    kg = KnowledgeGraph.open("ladybug:///tmp/kg.lbug")
    finder = KGPathFinder.from_defaults(kg, max_hops=2, max_paths=20)
    result = finder.find("Does aspirin help with a migraine headache?")
    [p.text for p in result.paths]   # ['aspirin -[TREATS]-> headache <-[ISA]- migraine', ...]
    ```
    """

    max_hops: int = Field(2, ge=1, le=MAX_HOPS_LIMIT, description="Longest path, in relationships.")
    max_paths: int = Field(20, ge=1, description="At most this many paths per text, after ranking.")
    single_entity: Literal["neighbours", "none"] = Field(
        "neighbours", description="With one entity only: its direct relationships ('neighbours') or nothing."
    )
    max_rows: int = Field(10_000, ge=1, description="Safety bound on the rows one graph query may return (LIMIT).")
    name_property: str | None = Field(
        "relname", description="Relationship property shown as its type when set; else the :TYPE is shown."
    )
    rank_property: str | None = Field("rank", description="Numeric relationship property used for ranking.")
    higher_rank_first: bool = Field(False, description="Rank descending (scores) instead of ascending (positions).")
    graph_uri: str | None = Field(
        None,
        description="URI of the graph store when the graph was opened by URI (to_dict records it, from_dict reopens it).",
    )
    node_label: str = Field("Ent", description="Label of the graph's entity nodes (the import's --label).")
    store_options: dict[str, Any] = Field(
        default_factory=dict, description="Options the store was opened with, e.g. database (never credentials)."
    )
    path_engine: Literal["auto", "snapshot", "store"] | None = Field(
        None,
        description="Where paths are searched: 'snapshot' (an in-process CSR snapshot of the graph, cached next to "
        "the store and rebuilt when the store changes), 'store' (the store's shortest-path query) or 'auto' (the "
        "snapshot on an embedded store, the query on a server); None uses the graph's own setting (default auto).",
    )

    _graph: KnowledgeGraph | None = PrivateAttr(default=None)
    _matcher: EntityMatcher | None = PrivateAttr(default=None)

    def __init__(
        self, graph: KnowledgeGraph | None = None, matcher: EntityMatcher | None = None, **kwargs: Any
    ) -> None:
        if graph is not None:
            kwargs.update(graph_uri=graph.uri, node_label=graph.node_label, store_options=graph.store_options)
        super().__init__(**kwargs)
        self._graph = graph
        self._matcher = matcher

    def _check_portable(self) -> None:
        if self._graph is not None:  # a graph on a store object cannot be copied: say so, do not drop it silently
            self._graph.__getstate__()

    def __getstate__(self) -> dict[Any, Any]:
        self._check_portable()
        return super().__getstate__()

    def __setstate__(self, state: dict[Any, Any]) -> None:
        # pydantic's restore, which keeps the graph handle and the dictionary (LlamaIndex's calls __init__ and
        # would drop them, so the copy would reopen the store without its options, e.g. the database name)
        BaseModel.__setstate__(self, state)

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        """The settings and ``graph_uri``: ``KGPathFinder.from_dict`` reopens the graph by its URI."""
        self._check_portable()
        return super().to_dict(**kwargs)

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this component under."""
        return "KGPathFinder"

    @classmethod
    def from_defaults(
        cls, graph: KnowledgeGraph | str | Any | None = None, matcher: EntityMatcher | None = None, **kwargs: Any
    ) -> KGPathFinder:
        """``graph``: a :class:`KnowledgeGraph`, a store URI, a LlamaIndex property graph store, or ``None``
        for the default store. ``matcher`` defaults to the graph's cached dictionary."""
        return cls(as_knowledge_graph(graph), matcher, **kwargs)

    @property
    def graph(self) -> KnowledgeGraph:
        """The graph (a finder made by ``from_dict`` opens ``graph_uri`` here, on first use)."""
        if self._graph is None:
            self._graph = KnowledgeGraph.open(self.graph_uri, node_label=self.node_label, **self.store_options)
        return self._graph

    @property
    def matcher(self) -> EntityMatcher:
        """The entity matcher of the graph's dictionary (built on first use)."""
        if self._matcher is None:
            self._matcher = self.graph.entity_matcher()
        return self._matcher

    def warm_up(self) -> None:
        """Load the manifest, the entity dictionary and the path snapshot (if one is used) now rather than on
        the first question."""
        _ = self.graph.layout, self.matcher, self.graph.path_snapshot(self.path_engine)

    # ------------------------------------------------------------------ search

    @dispatcher.span
    def find(self, text: str) -> KGPathResult:
        """The entities ``text`` mentions and the ranked paths between them."""
        mentions, pairs, single = self._match(text)
        if pairs:
            raw = self.graph.shortest_paths(pairs, self.max_hops, self.max_rows, engine=self.path_engine)
        elif single:
            raw = self.graph.neighbours(single, self.max_rows, engine=self.path_engine)
        else:
            raw = []
        return self._result(text, mentions, pairs, raw)

    @dispatcher.span
    async def afind(self, text: str) -> KGPathResult:
        """Async twin of :meth:`find`."""
        mentions, pairs, single = self._match(text)
        if pairs:
            raw = await self.graph.ashortest_paths(pairs, self.max_hops, self.max_rows, engine=self.path_engine)
        elif single:
            raw = await self.graph.aneighbours(single, self.max_rows, engine=self.path_engine)
        else:
            raw = []
        return self._result(text, mentions, pairs, raw)

    def _match(self, text: str) -> tuple[list[EntityMention], list[tuple[str, str]], list[str]]:
        mentions = self.matcher.find(text)
        dispatcher.event(KGEntitiesEvent(text=text, entities=[m.to_dict() for m in mentions]))
        return (mentions, *self._plan(mentions))

    def _result(
        self, text: str, mentions: list[EntityMention], pairs: list[tuple[str, str]], raw: list[RawPath]
    ) -> KGPathResult:
        result = KGPathResult(entities=mentions, paths=self._rank(raw, pairs))
        dispatcher.event(KGPathsEvent(text=text, pairs=len(pairs), paths=[p.text for p in result.paths]))
        return result

    def _plan(self, mentions: list[EntityMention]) -> tuple[list[tuple[str, str]], list[str]]:
        """Every unordered pair of distinct entities, in mention order; alternatives for one span (an
        ambiguous name) are not paired with each other. With one entity: it, for its neighbours."""
        order: list[str] = []
        spans: dict[str, set[tuple[int, int]]] = {}
        for m in mentions:
            if m.cid not in spans:
                order.append(m.cid)
                spans[m.cid] = set()
            spans[m.cid].add((m.start, m.end))
        pairs = [
            (a, b)
            for i, a in enumerate(order)
            for b in order[i + 1 :]
            if not (len(spans[a]) == 1 and spans[a] == spans[b])
        ]
        single = order if not pairs and len(order) == 1 and self.single_entity == "neighbours" else []
        return pairs, single

    def _rank(self, raw: list[RawPath], pairs: list[tuple[str, str]]) -> list[KGPath]:
        pair_order = {frozenset(p): i for i, p in enumerate(pairs)}
        seen, ranked = set(), []
        for item in raw:
            path = KGPath.from_raw(item, self.name_property)
            key = path.identity()
            if key in seen:
                continue
            seen.add(key)
            ranked.append(
                ((path.length, self._rank_sum(path), pair_order.get(frozenset(path.endpoints), 0), path.text), path)
            )
        ranked.sort(key=lambda kv: kv[0])
        return [path for _, path in ranked[: self.max_paths]]

    def _rank_sum(self, path: KGPath) -> float:
        if not self.rank_property:
            return 0.0
        total = 0.0
        for rel in path.relationships:
            try:
                value = float(rel.properties[self.rank_property])
            except (KeyError, TypeError, ValueError):
                return math.inf
            total += -value if self.higher_rank_first else value
        return total


def as_knowledge_graph(graph: KnowledgeGraph | str | Any | None) -> KnowledgeGraph:
    """A :class:`KnowledgeGraph` from itself, a URI, a property graph store, or ``None`` (default store)."""
    if isinstance(graph, KnowledgeGraph):
        return graph
    if graph is None or isinstance(graph, str):
        return KnowledgeGraph.open(graph)
    return KnowledgeGraph(graph)
