"""Synonym edges: entities whose names embed close together become ``SIMILAR_TO`` (HippoRAG's synonymy edges).

Names that the key rule keeps apart ("Lothar II" and "Lothair II", "US Army" and "United States Army") often
mean one entity. Every entity name is embedded once; a pair whose cosine reaches ``threshold`` gets a
``SIMILAR_TO`` relationship, which the walk follows like the other entity-entity edges
(``entity_edge_weight``), and which persists with the graph. No LLM is called.

Example:

```python
graph = EntityGraph.from_nodes(index.docstore.docs.values(), linker.dictionary_)
link_similar_entities(graph, embed_model, threshold=0.8)   # the number of pairs linked
```
"""

from __future__ import annotations

from typing import Any

import numpy as np

from llama_index_kgplus._vectors import unit_rows

SIMILAR_TO = "SIMILAR_TO"


def similar_pairs(vectors: np.ndarray, threshold: float, block: int = 2048) -> list[tuple[int, int, float]]:
    """``(i, j, cosine)`` with ``i < j`` for the rows of ``vectors`` whose cosine is at least ``threshold`` (in
    blocks of rows, so memory stays ``block`` x n)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or len(vectors) < 2:
        return []
    unit = unit_rows(vectors)
    pairs: list[tuple[int, int, float]] = []
    for start in range(0, len(unit), block):
        cosines = unit[start : start + block] @ unit.T
        rows, cols = np.nonzero(cosines >= threshold)
        for r, c in zip(rows.tolist(), cols.tolist()):
            if start + r < c:
                pairs.append((start + r, c, float(cosines[r, c])))
    return pairs


def link_similar_entities(graph: Any, embed_model: Any, *, threshold: float = 0.8) -> int:
    """Add a ``SIMILAR_TO`` relationship between every two entities of ``graph`` (an :class:`EntityGraph`) whose
    names' embeddings reach ``threshold``; returns the number of pairs added."""
    _check(threshold)
    keys = list(graph.entity_keys)
    names = [graph.entities.entities[k].name for k in keys]
    vectors = np.asarray(embed_model.get_text_embedding_batch(names), dtype=np.float32) if names else None
    return _add(graph, keys, vectors, threshold)


async def alink_similar_entities(graph: Any, embed_model: Any, *, threshold: float = 0.8) -> int:
    """Async :func:`link_similar_entities` (the names are embedded with ``aget_text_embedding_batch``)."""
    _check(threshold)
    keys = list(graph.entity_keys)
    names = [graph.entities.entities[k].name for k in keys]
    vectors = np.asarray(await embed_model.aget_text_embedding_batch(names), dtype=np.float32) if names else None
    return _add(graph, keys, vectors, threshold)


def _check(threshold: float) -> None:
    if not -1.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be a cosine in [-1, 1], got {threshold!r}.")


def _add(graph: Any, keys: list[str], vectors: np.ndarray | None, threshold: float) -> int:
    if vectors is None:
        return 0
    added = 0
    for i, j, _ in similar_pairs(vectors.reshape(len(keys), -1), threshold):
        relationship = (keys[i], keys[j], SIMILAR_TO)
        if relationship not in graph.entities.relationships:
            graph.entities.relationships.add(relationship)
            added += 1
    if added:
        graph.revision += 1
    return added
