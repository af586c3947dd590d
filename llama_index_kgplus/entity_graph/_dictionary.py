"""The entity dictionary: every entity the sources name, its aliases, and a whole-word matcher over them.

Entities from different sources merge when their keys are equal (see :mod:`._names`). An alias of one entity
that is the exact name of another makes the two ``SAME_AS``; an alias shared by several entities (``"Lloyd"``
of ``"Lloyd (film)"`` and ``"Lloyd (actor)"``) is a mention of each of them.

Example:

```python
entities = EntityDictionary()
entities.add("Lloyd (film)", "titles", aliases=["Lloyd"], doc_id="doc-17")
[m.key for m in entities.find("Lloyd was released in 1929.")]   # ['lloyd film']
```
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import cast

from llama_index_kgplus._text import PhraseMatcher
from llama_index_kgplus.entity_graph._names import entity_key, surface_forms

#: Relationship type of the edge between two entities that one of them names as an alias.
SAME_AS = "SAME_AS"


#: Sources whose entities need no document (they stay when every document is deleted).
STANDING_SOURCES = ("kg", "glossary")


@dataclass
class Entity:
    """One entity: its key (id), display name, where it comes from and what else it is called.

    ``sources`` maps each source to the documents that gave the entity (a title, or passages the ``ner`` /
    ``llm`` sources read); ``kg`` and ``glossary`` need no document. ``kg_id`` is the knowledge graph's id.
    """

    key: str
    name: str
    sources: dict[str, set[str]] = field(default_factory=dict)
    aliases: set[str] = field(default_factory=set)
    kg_id: str | None = None

    @property
    def doc_ids(self) -> set[str]:
        return set().union(*self.sources.values()) if self.sources else set()


@dataclass(frozen=True)
class EntityMatch:
    """``text[start:end]`` names entity ``key`` (``exact``: by its name, else by an alias)."""

    key: str
    start: int
    end: int
    text: str
    exact: bool


class EntityDictionary:
    """Entities by key, their relationships, and a matcher over their names and aliases (built on first use).

    Example:

    ```python
    from llama_index_kgplus.entity_graph import EntityDictionary

    entities = EntityDictionary()
    entities.add("Lothair II", "titles", aliases=["Lothar II"])
    [m.key for m in entities.find("When did Lothar II's mother die?")]
    ```
    """

    def __init__(self) -> None:
        self.entities: dict[str, Entity] = {}
        self.relationships: set[tuple[str, str, str]] = set()
        self._matcher: PhraseMatcher | None = None

    def __len__(self) -> int:
        return len(self.entities)

    def __contains__(self, key: object) -> bool:
        return key in self.entities

    def __iter__(self) -> Iterator[Entity]:
        return iter(self.entities.values())

    def add(
        self,
        name: str,
        source: str,
        *,
        aliases: Iterable[str] = (),
        doc_id: str | None = None,
        kg_id: str | None = None,
    ) -> str | None:
        """Add (or merge into) the entity called ``name``; returns its key, or None for a blank name."""
        key = entity_key(name)
        if not key:
            return None
        entity = self.entities.get(key)
        if entity is None:
            entity = self.entities[key] = Entity(key=key, name=" ".join(name.split()))
        docs = entity.sources.setdefault(source, set())
        if doc_id is not None:
            docs.add(doc_id)
        entity.aliases.update(a for a in (" ".join(a.split()) for a in aliases) if entity_key(a) not in ("", key))
        if kg_id is not None and entity.kg_id is None:
            entity.kg_id = kg_id
        self._matcher = None
        return key

    def relate(self, source_name: str, target_name: str, rel_type: str) -> None:
        """A relationship between two entities (of a knowledge graph, or extracted by the LLM)."""
        a, b = entity_key(source_name), entity_key(target_name)
        if a and b and a != b:
            self.relationships.add((a, b, rel_type))

    def merge(self, other: EntityDictionary) -> EntityDictionary:
        """Add every entity and relationship of ``other`` to this dictionary (in place); returns self."""
        for entity in other:
            mine = self.entities.get(entity.key)
            if mine is None:
                mine = self.entities[entity.key] = Entity(key=entity.key, name=entity.name, kg_id=entity.kg_id)
            for source, docs in entity.sources.items():
                mine.sources.setdefault(source, set()).update(docs)
            mine.aliases.update(entity.aliases)
            mine.kg_id = mine.kg_id or entity.kg_id
        self.relationships |= other.relationships
        self._matcher = None
        return self

    def forget_documents(self, doc_ids: Iterable[str]) -> list[str]:
        """Drop ``doc_ids`` from every entity's provenance, then the entities left with no source; returns
        the keys of the entities dropped."""
        gone = set(doc_ids)
        orphans = []
        for entity in self.entities.values():
            for source in list(entity.sources):
                entity.sources[source] -= gone
                if not entity.sources[source] and source not in STANDING_SOURCES:
                    del entity.sources[source]
            if not entity.sources:
                orphans.append(entity.key)
        self.remove(orphans)
        return orphans

    def remove(self, keys: Iterable[str]) -> None:
        """Drop the entities ``keys`` and every relationship that touches one of them."""
        drop = set(keys)
        for key in drop:
            self.entities.pop(key, None)
        self.relationships = {r for r in self.relationships if r[0] not in drop and r[1] not in drop}
        self._matcher = None

    def same_as(self) -> list[tuple[str, str]]:
        """``(a, b)`` pairs where an alias of entity ``a`` is the exact name of entity ``b``."""
        pairs = []
        for entity in self.entities.values():
            for alias in entity.aliases:
                other = entity_key(alias)
                if other != entity.key and other in self.entities:
                    pairs.append((entity.key, other))
        return sorted(set(pairs))

    # ------------------------------------------------------------------ matching

    @property
    def matcher(self) -> PhraseMatcher:
        """The whole-word matcher of every entity name and alias (built on first use, rebuilt after a change)."""
        if self._matcher is None:
            self._matcher = PhraseMatcher.from_pairs(self._surfaces())
        return self._matcher

    def _surfaces(self) -> Iterator[tuple[str, tuple[str, bool]]]:
        for entity in self.entities.values():
            for surface in surface_forms(entity.name):
                yield surface, (entity.key, True)
            for alias in entity.aliases:
                for surface in surface_forms(alias):
                    yield surface, (entity.key, False)

    def find(self, text: str) -> list[EntityMatch]:
        """Whole-word, case-insensitive, leftmost-longest mentions in text order; where one span names an
        entity exactly and others by alias, only the exact one."""
        out = []
        for match in self.matcher.find(text):
            values = cast("list[tuple[str, bool]]", list(match.values))  # (key, is_exact), as indexed above
            exact = [v for v in values if v[1]]
            for key, is_exact in sorted(set(exact or values)):
                out.append(EntityMatch(key, match.start, match.end, match.text, is_exact))
        return out
