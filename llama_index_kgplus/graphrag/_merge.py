"""Merge per-chunk extractions into one graph: entities by normalised name, relationships by entity pair.

Every merged entity and relationship keeps the ids of the chunks and source documents it came from, so an
update can subtract a document's contribution and drop what only that document supported. The merge is a
pure function of the chunk extractions (ordered by chunk id), so a rebuild and an update give the same graph.

Example:

```python
entities, relationships = merge_extractions([ChunkExtraction("d1#0", "d1", result)])
```
"""

from __future__ import annotations

import hashlib
import json
import re
import string
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from llama_index_kgplus.graphrag._extraction import ExtractionResult

_STRIP = string.punctuation.replace("+", "").replace("#", "") + " \t\n\"'`\u201c\u201d\u2018\u2019"


def normalize_name(name: str) -> str:
    """The merge key of an entity name: NFKC, case-folded, spaces collapsed, no surrounding punctuation or
    leading article (``"The  Python "`` and ``"python"`` are one entity; ``C++`` and ``C#`` keep their signs)."""
    key = unicodedata.normalize("NFKC", name).casefold()
    key = re.sub(r"\s+", " ", key).strip(_STRIP)
    key = re.sub(r"^(the|a|an) (?=\S)", "", key)
    return key.strip(_STRIP)


def _type_label(text: str) -> str:
    label = re.sub(r"[^0-9A-Za-z]+", "_", text.strip()).strip("_").upper()
    return label or "UNKNOWN"


def _hash(payload: object) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class ChunkExtraction:
    """The extraction result of one chunk with its provenance."""

    chunk_id: str
    doc_id: str
    result: ExtractionResult
    text: str = ""


@dataclass(frozen=True)
class Entity:
    """A merged entity; ``id`` is its normalised name."""

    id: str
    name: str
    type: str
    description: str
    chunk_ids: tuple[str, ...]
    doc_ids: tuple[str, ...]

    def content_hash(self) -> str:
        return _hash(asdict(self))


@dataclass(frozen=True)
class Relationship:
    """A merged, directed relationship between two entity ids; ``weight`` sums the extracted strengths."""

    id: str
    source: str
    target: str
    type: str
    description: str
    weight: float
    chunk_ids: tuple[str, ...]
    doc_ids: tuple[str, ...]

    def content_hash(self) -> str:
        return _hash(asdict(self))


def relationship_id(source: str, target: str) -> str:
    return _hash([source, target])


def _merged_description(descriptions: list[str], max_descriptions: int) -> str:
    seen: dict[str, str] = {}
    for text in descriptions:
        key = " ".join(text.split()).casefold()
        if key and key not in seen:
            seen[key] = " ".join(text.split())
    return " ".join(list(seen.values())[:max_descriptions])


def _most_common(values: list[str]) -> str:
    counts = Counter(values)
    return min(counts, key=lambda v: (-counts[v], v))


def merge_extractions(
    extractions: Iterable[ChunkExtraction], *, max_descriptions: int = 4
) -> tuple[dict[str, Entity], dict[str, Relationship]]:
    """Merge chunk extractions (any order; they are sorted by chunk id) into entities and relationships.

    A relationship is kept only when both endpoints are entities extracted from the same chunk or, for an endpoint
    the LLM did not list as an entity, when its name occurs in the chunk's ``text`` (whole words, any case): it then
    counts as a mention of that entity, without type or description. So an endpoint the text never names (a
    hallucination) never becomes a node. Self-loops are dropped. ``max_descriptions`` bounds how many distinct descriptions an entity
    keeps (the first ones in chunk order), so a frequent entity's text stops changing once it is well described.
    """
    names: dict[str, list[str]] = defaultdict(list)
    types: dict[str, list[str]] = defaultdict(list)
    descs: dict[str, list[str]] = defaultdict(list)
    e_chunks: dict[str, set[str]] = defaultdict(set)
    e_docs: dict[str, set[str]] = defaultdict(set)
    r_types: dict[tuple[str, str], list[str]] = defaultdict(list)
    r_descs: dict[tuple[str, str], list[str]] = defaultdict(list)
    r_weight: dict[tuple[str, str], float] = defaultdict(float)
    r_chunks: dict[tuple[str, str], set[str]] = defaultdict(set)
    r_docs: dict[tuple[str, str], set[str]] = defaultdict(set)

    def _in_text(name: str, text: str) -> bool:
        return bool(text) and re.search(rf"(?<!\w){re.escape(name.strip())}(?!\w)", text, re.IGNORECASE) is not None

    for item in sorted(extractions, key=lambda x: x.chunk_id):
        local: set[str] = set()
        for entity in item.result.entities:
            key = normalize_name(entity.name)
            if not key:
                continue
            local.add(key)
            names[key].append(entity.name.strip())
            types[key].append(_type_label(entity.type))
            descs[key].append(entity.description)
            e_chunks[key].add(item.chunk_id)
            e_docs[key].add(item.doc_id)
        for rel in item.result.relationships:
            source, target = normalize_name(rel.source), normalize_name(rel.target)
            if not source or not target or source == target:
                continue
            ends = ((source, rel.source), (target, rel.target))
            if not all(key in local or _in_text(name, item.text) for key, name in ends):
                continue
            for key, name in ends:
                if key not in local:  # named in the text but not listed: a bare mention
                    local.add(key)
                    names[key].append(name.strip())
                    e_chunks[key].add(item.chunk_id)
                    e_docs[key].add(item.doc_id)
            pair = (source, target)
            r_types[pair].append(_type_label(rel.type))
            r_descs[pair].append(rel.description)
            r_weight[pair] += float(rel.strength)
            r_chunks[pair].add(item.chunk_id)
            r_docs[pair].add(item.doc_id)

    entities = {
        key: Entity(
            id=key,
            name=_most_common(names[key]),
            type=_most_common(types[key]) if types[key] else "UNKNOWN",
            description=_merged_description(descs[key], max_descriptions),
            chunk_ids=tuple(sorted(e_chunks[key])),
            doc_ids=tuple(sorted(e_docs[key])),
        )
        for key in sorted(names)
    }
    relationships = {}
    for pair in sorted(r_types):
        rid = relationship_id(*pair)
        relationships[rid] = Relationship(
            id=rid,
            source=pair[0],
            target=pair[1],
            type=_most_common(r_types[pair]),
            description=_merged_description(r_descs[pair], max_descriptions),
            weight=r_weight[pair],
            chunk_ids=tuple(sorted(r_chunks[pair])),
            doc_ids=tuple(sorted(r_docs[pair])),
        )
    return entities, relationships
