"""Route features built from the configured sources: what a question names of a knowledge graph or of tables.

Example:

```python
features = [kg_entity_feature(EntityMatcher.from_graph(kg)), table_feature(tables)]
router = QuestionRouter.from_defaults(features=features)
```
"""

from __future__ import annotations

import re
from typing import Any

from llama_index_kgplus._text import PhraseMatcher
from llama_index_kgplus.router._router import RouteFeature

__all__ = ["kg_entity_feature", "table_feature"]

# Words that say "compute over rows": with a table term they make a table question.
_AGGREGATE_WORDS = (
    "how many", "how much", "total", "sum", "average", "mean", "median", "maximum", "minimum", "highest", "lowest",
    "most", "least", "count", "number of", "per year", "per month", "each year", "each month", "percentage",
)  # fmt: skip
_YEAR = re.compile(r"\b(1[89]|20)\d\d\b")


class _EntityNames:
    """The distinct names of the entities a matcher finds in a question (a class, so a router pickles)."""

    def __init__(self, matcher: Any) -> None:
        self.matcher = matcher

    def __call__(self, question: str) -> list[str]:
        return list(dict.fromkeys(m.name for m in self.matcher.find(question)))


class _TableTerms:
    """What a question names of the tables, with what it asks to compute; nothing unless it names both."""

    def __init__(self, terms: PhraseMatcher) -> None:
        self.terms = terms
        self.aggregate = PhraseMatcher.from_pairs((w, w) for w in _AGGREGATE_WORDS)

    def __call__(self, question: str) -> list[str]:
        named = [str(v) for m in self.terms.find(question) for v in m.values]
        if not named:
            return []
        computed = [f"asks for {m.key}" for m in self.aggregate.find(question)]
        computed += [f"year {m.group()}" for m in _YEAR.finditer(question)]
        return [*named, *computed] if computed else []


def kg_entity_feature(matcher: Any, weight: float = 0.15, min_hits: int = 2) -> RouteFeature:
    """``kg`` evidence: the question names at least ``min_hits`` distinct entities of the knowledge graph
    (``matcher``: a fitted :class:`~llama_index_kgplus.kg.EntityMatcher`)."""
    return RouteFeature("kg", "knowledge-graph entities", _EntityNames(matcher), weight=weight, min_hits=min_hits)


def table_feature(tables: Any, weight: float = 0.15, absent_weight: float = -0.1) -> RouteFeature:
    """``sql`` evidence: the question names a table, a column or a text value of the registered tables
    (``tables``: :class:`~llama_index_kgplus.tables.SQLTables`) and asks to compute (how many, total, average,
    highest...). Column names are matched as words too (``temp_max`` as "temp max"). A question that does not
    gets ``absent_weight``: "how many people live in the city?" is about the documents, not these tables."""
    terms = PhraseMatcher()
    for table in tables.names:
        terms.add(table.replace("_", " "), f"table {table}")
        for column, _ in tables.columns(table):
            terms.add(column, f"column {column}")
            terms.add(column.replace("_", " "), f"column {column}")
    for where, values in tables.text_values().items():
        for value in values:
            if len(value) >= 3 and not value.isdigit():
                terms.add(value, f"value {value!r} of {where}")
    return RouteFeature("sql", "table terms", _TableTerms(terms), weight=weight, absent_weight=absent_weight)
