"""Citations of a global answer: answer -> reports used -> their entities and relationships -> text chunks ->
source documents.

The reports are those whose key points went into the final answer. Their entities are narrowed to the ones the
answer (or the key points kept) names, found with the shared whole-word matcher
(:class:`~llama_index_kgplus._text.PhraseMatcher`); if it names none, all their entities count. The
relationships are those of the reports among the kept entities. Every provenance link (an entity or relationship
extracted from a chunk) counts one match for that chunk and its document; the documents whose match frequency
is at or above the median of the cited documents' distribution are cited, each with its best supporting
passages (the chunks with most matches).

Example:

```python
citations = cite_sources(used, answer, communities, entities, relationships, chunk_lookup, titles)
citations.source_nodes[0].node.metadata["doc_id"], citations.documents
```
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from llama_index.core.schema import NodeWithScore, TextNode

from llama_index_kgplus._text import PhraseMatcher
from llama_index_kgplus.graphrag._communities import Community
from llama_index_kgplus.graphrag._merge import Entity, Relationship
from llama_index_kgplus.graphrag._state import ChunkRecord


@dataclass(frozen=True)
class Citations:
    """The sources of an answer: passages as ``source_nodes`` and the cited documents with their figures."""

    source_nodes: list[NodeWithScore] = field(default_factory=list)
    documents: list[dict[str, Any]] = field(default_factory=list)
    median_match_frequency: float = 0.0
    entity_ids: list[str] = field(default_factory=list)
    relationship_ids: list[str] = field(default_factory=list)


def _named_entities(texts: Iterable[str], candidates: Mapping[str, Entity]) -> set[str]:
    matcher = PhraseMatcher()
    for eid, entity in candidates.items():
        matcher.add(entity.name, eid)
        matcher.add(eid, eid)
    found: set[str] = set()
    for text in texts:
        for match in matcher.find(text):
            found.update(str(v) for v in match.values)
    return found


def cite_sources(
    used_communities: Sequence[str],
    texts: Sequence[str],
    communities: Mapping[str, Community],
    entities: Mapping[str, Entity],
    relationships: Mapping[str, Relationship],
    chunk_lookup: Callable[[Iterable[str]], list[ChunkRecord]],
    titles: Mapping[str, str],
    *,
    passages_per_document: int = 2,
) -> Citations:
    """Trace ``used_communities`` (the reports behind the answer) to passages; ``texts`` are the answer and the
    key points used (see the module docstring)."""
    member_of: dict[str, list[str]] = defaultdict(list)
    for cid in used_communities:
        for eid in communities[cid].entity_ids if cid in communities else ():
            if eid in entities:
                member_of[eid].append(cid)
    if not member_of:
        return Citations()
    candidates = {eid: entities[eid] for eid in member_of}
    kept = _named_entities(texts, candidates) or set(candidates)
    used_set = set(used_communities)
    rels = [
        r
        for r in relationships.values()
        if r.source in kept
        and r.target in kept
        and any(c in used_set for c in set(member_of[r.source]) & set(member_of[r.target]))
    ]

    chunk_matches: Counter[str] = Counter()
    chunk_entities: dict[str, set[str]] = defaultdict(set)
    for eid in kept:
        for chunk_id in entities[eid].chunk_ids:
            chunk_matches[chunk_id] += 1
            chunk_entities[chunk_id].add(entities[eid].name)
    for r in rels:
        for chunk_id in r.chunk_ids:
            chunk_matches[chunk_id] += 1
    chunks = {c.chunk_id: c for c in chunk_lookup(chunk_matches)}
    doc_frequency: Counter[str] = Counter()
    for chunk_id, n in chunk_matches.items():
        if chunk_id in chunks:
            doc_frequency[chunks[chunk_id].doc_id] += n
    if not doc_frequency:
        return Citations(entity_ids=sorted(kept), relationship_ids=sorted(r.id for r in rels))
    median = float(statistics.median(doc_frequency.values()))
    cited = sorted((d for d, n in doc_frequency.items() if n >= median), key=lambda d: (-doc_frequency[d], d))

    by_doc: dict[str, list[ChunkRecord]] = defaultdict(list)
    for chunk in chunks.values():
        by_doc[chunk.doc_id].append(chunk)
    top = max(chunk_matches.values())
    nodes = []
    for doc_id in cited:
        best = sorted(by_doc[doc_id], key=lambda c: (-chunk_matches[c.chunk_id], c.position))[:passages_per_document]
        for chunk in best:
            node = TextNode(
                id_=chunk.chunk_id,
                text=chunk.text,
                metadata={
                    "doc_id": doc_id,
                    "title": titles.get(doc_id, doc_id),
                    "chunk_position": chunk.position,
                    "match_count": chunk_matches[chunk.chunk_id],
                    "entities": sorted(chunk_entities.get(chunk.chunk_id, ())),
                },
                excluded_llm_metadata_keys=["doc_id", "chunk_position", "match_count", "entities"],
            )
            nodes.append(NodeWithScore(node=node, score=chunk_matches[chunk.chunk_id] / top))
    documents = [{"doc_id": d, "title": titles.get(d, d), "match_frequency": doc_frequency[d]} for d in cited]
    return Citations(
        source_nodes=nodes,
        documents=documents,
        median_match_frequency=median,
        entity_ids=sorted(kept),
        relationship_ids=sorted(r.id for r in rels),
    )
