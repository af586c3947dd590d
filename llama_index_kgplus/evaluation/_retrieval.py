"""Retrieval metrics against gold document ids; no LLM needed.

Ids are compared after de-duplicating the retrieved list in rank order (several chunks of one document count as
one retrieved document).
"""

from __future__ import annotations

from collections.abc import Sequence


def _ranked_unique(retrieved_ids: Sequence[str]) -> list[str]:
    seen: dict[str, None] = {}
    for doc_id in retrieved_ids:
        seen.setdefault(doc_id, None)
    return list(seen)


def hit_at_k(retrieved_ids: Sequence[str], gold_ids: Sequence[str], k: int) -> float:
    """1.0 if any gold id is among the first ``k`` distinct retrieved ids."""
    return float(bool(set(_ranked_unique(retrieved_ids)[:k]) & set(gold_ids)))


def recall_at_k(retrieved_ids: Sequence[str], gold_ids: Sequence[str], k: int) -> float:
    """Fraction of the gold ids found among the first ``k`` distinct retrieved ids."""
    gold = set(gold_ids)
    if not gold:
        raise ValueError("recall@k needs at least one gold id")
    return len(set(_ranked_unique(retrieved_ids)[:k]) & gold) / len(gold)


def mrr(retrieved_ids: Sequence[str], gold_ids: Sequence[str]) -> float:
    """Reciprocal rank of the first gold id among the distinct retrieved ids (0.0 if none)."""
    gold = set(gold_ids)
    for rank, doc_id in enumerate(_ranked_unique(retrieved_ids), 1):
        if doc_id in gold:
            return 1.0 / rank
    return 0.0
