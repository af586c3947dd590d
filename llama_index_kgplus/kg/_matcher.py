"""Dictionary entity recognition: the graph's entity names and synonyms over the shared Aho-Corasick matcher.

Case-insensitive, whole words only, leftmost-longest and non-overlapping (see
:class:`llama_index_kgplus._text.PhraseMatcher`); no LLM call, microseconds per question.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from llama_index_kgplus._files import atomic_write_json
from llama_index_kgplus._text import PhraseMatcher
from llama_index_kgplus.errors import InputDataError, NotFittedError

if TYPE_CHECKING:
    from llama_index_kgplus.kg._graph import KnowledgeGraph

_FORMAT = "kgplus-entity-matcher/2"


@dataclass(frozen=True)
class EntityMention:
    """An entity found in a text: ``text[start:end]`` matched a name or synonym of entity ``cid``."""

    cid: str
    name: str
    start: int
    end: int
    text: str

    def to_dict(self) -> dict[str, Any]:
        """The ``kgplus kg paths --json`` form: ``{"cid", "name", "start", "end"}``."""
        return {"cid": self.cid, "name": self.name, "start": self.start, "end": self.end}


class EntityMatcher:
    """Finds a knowledge graph's entities in text by their names and synonyms.

    Parameters are only stored by the constructor; :meth:`fit` (or a ``from_*`` constructor) builds the
    dictionary. Learned attributes: ``n_names_`` (dictionary keys), ``n_entities_``.

    - ``min_length``: names shorter than this many characters are left out (1 keeps all).
    - ``ambiguous``: a name shared by several entities gives one mention per entity (``"all"``) or none
      (``"skip"``).

    Example:

    ```python
    matcher = EntityMatcher.from_pairs([("C1", "aspirin"), ("C2", "headache")], synonyms=[("C1", "ASA")])
    [(m.cid, m.start, m.end) for m in matcher.find("Does ASA help a headache?")]
    # [('C1', 5, 8), ('C2', 16, 24)]
    ```
    """

    def __init__(self, *, min_length: int = 1, ambiguous: Literal["all", "skip"] = "all") -> None:
        self.min_length = min_length
        self.ambiguous = ambiguous

    # ------------------------------------------------------------------ building

    def fit(self, names: Iterable[tuple[str, str]], synonyms: Iterable[tuple[str, str]] = ()) -> EntityMatcher:
        """Build from ``(cid, name)`` pairs and optional ``(cid, synonym)`` pairs."""
        if self.ambiguous not in ("all", "skip"):
            raise ValueError(f"ambiguous must be 'all' or 'skip', got {self.ambiguous!r}.")
        if not isinstance(self.min_length, int) or self.min_length < 1:
            raise ValueError(f"min_length must be a positive integer, got {self.min_length!r}.")
        matcher = PhraseMatcher()
        canonical: dict[str, str] = {}
        for cid, name in names:
            cid, name = str(cid), str(name)
            canonical.setdefault(cid, name)
            self._add(matcher, name, cid, name)
        for cid, synonym in synonyms:
            cid = str(cid)
            self._add(matcher, str(synonym), cid, canonical.get(cid, cid))
        self.phrase_matcher_ = matcher
        self.n_names_ = len(matcher)
        self.n_entities_ = len(canonical)
        return self

    def _add(self, matcher: PhraseMatcher, phrase: str, cid: str, name: str) -> None:
        if len(phrase.strip()) >= self.min_length:
            matcher.add(phrase, (cid, name))

    @classmethod
    def from_pairs(
        cls, names: Iterable[tuple[str, str]], synonyms: Iterable[tuple[str, str]] = (), **params: Any
    ) -> EntityMatcher:
        """From ``(cid, name)`` pairs (any iterable, e.g. a generator over a database cursor)."""
        return cls(**params).fit(names, synonyms)

    @classmethod
    def from_csv(
        cls, nodes: str | Path, synonyms: str | Path | None = None, *, name_column: str | None = None, **params: Any
    ) -> EntityMatcher:
        """From a neo4j-admin nodes file (and a ``cid,synonym`` file)."""
        from llama_index_kgplus.kg._csv import _read_synonyms, read_nodes

        records, id_property, name_property, _, _ = read_nodes(nodes, name_column=name_column)
        pairs = [(n.id, n.properties[name_property]) for n in records if n.properties.get(name_property)]
        aliases: list[tuple[str, str]] = []
        if synonyms is not None:
            aliases, _ = _read_synonyms(Path(synonyms), {n.id for n in records}, id_property, "skip", ",")
        return cls.from_pairs(pairs, aliases, **params)

    @classmethod
    def from_graph(cls, graph: KnowledgeGraph, **params: Any) -> EntityMatcher:
        """From the names and synonyms stored in a knowledge graph (one read of the store)."""
        names: list[tuple[str, str]] = []
        synonyms: list[tuple[str, str]] = []
        for cid, text, is_alias in graph.names():
            (synonyms if is_alias else names).append((cid, text))
        return cls.from_pairs(names, synonyms, **params)

    # ------------------------------------------------------------------ matching

    def find(self, text: str) -> list[EntityMention]:
        """Mentions in text order; a span shared by several entities gives one mention each (or none)."""
        matcher = self._fitted()
        out = []
        for match in matcher.find(text):
            if len(match.values) > 1 and self.ambiguous == "skip":
                continue
            for cid, name in cast("tuple[tuple[str, str], ...]", match.values):  # (cid, name), as indexed
                out.append(EntityMention(cid, name, match.start, match.end, match.text))
        return out

    def __len__(self) -> int:
        return len(self._fitted())

    def _fitted(self) -> PhraseMatcher:
        matcher = getattr(self, "phrase_matcher_", None)
        if matcher is None:
            raise NotFittedError("This EntityMatcher is not built yet: call fit(...) or use a from_* constructor.")
        return matcher

    # ------------------------------------------------------------------ persistence

    def save(self, path: str | Path, **extra: Any) -> None:
        """Write the built dictionary as JSON (data only: loading it never runs code), atomically; ``extra``
        JSON fields are stored beside it (the knowledge graph records its import id)."""
        payload = {
            **extra,
            "format": _FORMAT,
            "params": {"min_length": self.min_length, "ambiguous": self.ambiguous},
            "n_entities": self.n_entities_,
            "matcher": self._fitted().to_dict(),
        }
        atomic_write_json(path, payload)

    @classmethod
    def load(cls, path: str | Path, *, expect: dict[str, Any] | None = None) -> EntityMatcher:
        """Read a dictionary written by :meth:`save`; ``InputDataError`` names what is wrong with it, or which
        ``expect`` field (extra fields given to :meth:`save`) differs."""
        try:
            payload = json.loads(Path(path).read_bytes())
        except (OSError, ValueError, RecursionError) as exc:
            raise InputDataError(f"Cannot load the entity dictionary {path}: {exc}") from exc
        if not isinstance(payload, dict) or payload.get("format") != _FORMAT:
            raise InputDataError(f"{path} is not an entity dictionary saved by EntityMatcher.save().")
        for key, value in (expect or {}).items():
            if payload.get(key) != value:
                raise InputDataError(f"{path} was saved for another {key} ({payload.get(key)!r}, not {value!r}).")
        params, n_entities = payload.get("params"), payload.get("n_entities")
        if (
            not isinstance(params, dict)
            or set(params) != {"min_length", "ambiguous"}
            or not isinstance(n_entities, int)
        ):
            raise InputDataError(f"{path} is an entity dictionary with malformed fields.")
        matcher = cls(**params)
        try:
            matcher.phrase_matcher_ = PhraseMatcher.from_dict(payload["matcher"])
        except InputDataError as exc:
            raise InputDataError(f"{path}: {exc}") from exc
        pairs = (v for values in matcher.phrase_matcher_.payloads() for v in values)
        if not all(isinstance(v, tuple) and len(v) == 2 and all(isinstance(x, str) for x in v) for v in pairs):
            raise InputDataError(f"{path}: entity dictionary payloads must be [id, name] pairs.")
        matcher.n_names_ = len(matcher.phrase_matcher_)
        matcher.n_entities_ = n_entities
        return matcher
