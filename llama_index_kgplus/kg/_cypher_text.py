"""Reading a question and a generated Cypher query as text, for text-to-Cypher's checks and repairs: which
relationship kinds a question goes through, whether it asks how many or yes/no, and what a query returns, matches
and follows. Only the words of the question, the kinds the graph has and the query's text are read.

Example:

```python
_kind_mentions(form, "Which drugs treat what virus causes?", [(23, 28)])   # ['causes', 'treats']
_hops("MATCH (a)-[r1]->(m)<-[r2]-(x) RETURN x")                            # 2
```
"""

from __future__ import annotations

import functools
import numbers
import re
from collections.abc import Collection, Sequence
from typing import Any

from llama_index_kgplus.kg._cypher_schema import _Form

_KIND_SUFFIX = re.compile(r"(?:ing|ed|es|s|e)$")
_INFLECTION = ("es", "ed", "s", "d")


def _squeeze(text: str) -> str:
    return re.sub(r"[\s_\-]+", "", text.lower())


@functools.cache
def _squeezed_kinds(kinds: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """Each kind with its name squeezed (``part_of`` -> ``partof``), shortest first (cached per set of kinds)."""
    return tuple((kind, _squeeze(kind)) for kind in sorted(kinds, key=len))


def _kind_of_word(form: _Form, word: str, after: str = "") -> str | None:
    """The relationship kind ``word`` names, with ``after`` the question's text that follows it, or None.

    A kind's own name comes first ("part_of"), then a name the word starts with its stem ("caused" -> ``causes``,
    "parts of" -> ``part_of``; stems of at least 4 letters): the rest of the name (after an ending such as
    "s") must be what follows in the question, so "processes" alone is not ``process_of`` and "take part in" is
    not ``part_of``. Only the graph's own kind names are read: a word that names a kind by another word (a
    synonym) is not found."""
    squeezed, stem, following = _squeeze(word), _KIND_SUFFIX.sub("", _squeeze(word)), _squeeze(after)
    names = _squeezed_kinds(form.kinds)
    for kind, whole in names:
        if squeezed == whole:
            return kind
    for kind, whole in names:
        for head in dict.fromkeys((squeezed, squeezed.removesuffix("s"), stem)):
            if len(head) < 4 or not whole.startswith(head):
                continue
            rest = whole[len(head) :]
            rests = [rest, *(rest[len(e) :] for e in _INFLECTION if rest.startswith(e))]
            if any(not r or following.startswith(r) for r in rests):
                return kind
    return None


def _kind_mentions(form: _Form, question: str, spans: Sequence[tuple[int, int]] = ()) -> list[str]:
    """The relationship kinds the question goes through, one per mention, ordered by their distance to the named
    entities (at ``spans``), the nearest first: a guess at the order a path from them meets the kinds ("which
    drugs treat what virus causes" -> causes, treats). Words inside the entities' names are not read, and a kind
    in parentheses ("parts (part_of)") is not counted again when the question also says it in words."""
    text = question
    for start, end in spans:  # blank the names out ("body part" names no ``part_of``), keeping the offsets
        text = text[:start] + " " * (end - start) + text[end:]
    text = text.lower()
    brackets = [m.span() for m in re.finditer(r"\([^)]*\)", text)]
    found: list[tuple[str, int, bool]] = []
    for match in re.finditer(r"[a-z][a-z_\-]*", text):
        kind = _kind_of_word(form, match.group(), text[match.end() :])
        if kind is not None:
            found.append((kind, match.start(), any(a <= match.start() < b for a, b in brackets)))
    said = {kind for kind, _, inside in found if not inside}
    kept = [(kind, at) for kind, at, inside in found if not inside or kind not in said]
    centres = [(start + end) / 2 for start, end in spans]
    if centres:
        kept.sort(key=lambda mention: min(abs(mention[1] - c) for c in centres))
    return [kind for kind, _ in kept]


_ARROW = re.compile(r"<-(\[[^\]]*\])?-(?!>)|-(\[[^\]]*\])?->")
_VALUE = r"""(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")"""  # a quoted string, either quote
_QUOTED = re.compile(rf"{_VALUE}|`[^`]*`")


def _reverse_arrows(cypher: str, which: Collection[int] | None = None) -> str:
    """Relationship arrows (``-[r]->``, ``<-[r]-``, ``-->``, ``<--``) turned round: every one, or those at the
    positions ``which`` (0 = the first arrow); text in quotes is kept."""
    quoted = [m.span() for m in _QUOTED.finditer(cypher)]
    seen = -1

    def turn(match: re.Match[str]) -> str:
        nonlocal seen
        if any(a <= match.start() < b for a, b in quoted):
            return match.group()
        seen += 1
        if which is not None and seen not in which:
            return match.group()
        inner = match.group(1) or match.group(2) or ""
        return f"-{inner}->" if match.group().startswith("<") else f"<-{inner}-"

    return _ARROW.sub(turn, cypher)


def _found_nothing(rows: list[dict[str, Any]]) -> bool:
    """No rows, or one row of counts that are all 0 (a boolean answer is an answer: never read as nothing)."""
    if not rows:
        return True
    values = list(rows[0].values())
    counts = all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in values)
    return len(rows) == 1 and bool(values) and counts and not any(values)


_COUNT_QUESTION = re.compile(r"\bhow many\b|\bnumber of\b|^\s*count\b|\bcount (?:the|of)\b", re.I)
_YES_NO_QUESTION = re.compile(r"^\s*(is|are|does|do|did|can|could|has|have|had|was|were|will|would|should)\b", re.I)
_GROUP_WORD = re.compile(r"\b(groups?|categor(?:y|ies))\b", re.I)
_COUNTING = re.compile(r"\b(count|size)\s*\(", re.I)


def _return_clause(cypher: str) -> str:
    """What the query returns: the text after its last RETURN, without ORDER BY / SKIP / LIMIT."""
    tail = re.split(r"\bRETURN\b", cypher, flags=re.I)[-1]
    return re.split(r"\b(?:ORDER\s+BY|SKIP|LIMIT)\b", tail, flags=re.I)[0]


def _matched_values(prop: str, cypher: str) -> list[str]:
    """The values the query matches ``prop`` against (``{prop: '...'}``, ``x.prop = '...'``,
    ``x.prop IN ['...', ...]``, either quote), unescaped."""
    single = rf"(?:\b{re.escape(prop)}\s*:|\.\s*{re.escape(prop)}\s*=)\s*{_VALUE}"
    pairs = re.findall(single, cypher)
    for listed in re.findall(rf"\.\s*{re.escape(prop)}\s+IN\s*\[([^\]]*)\]", cypher, re.I):
        pairs += re.findall(_VALUE, listed)
    return [re.sub(r"\\(.)", r"\1", a or b) for a, b in pairs]


def _named_group(group: str, groups: list[str], question: str) -> str | None:
    """The value of the group property ``group`` that the question names with the property's own name
    (for a group property ``kind``: "in the kind river", "whose kind is city"), or None."""
    values = {g.lower(): g for g in groups}
    said = re.search(rf"\b{re.escape(group)}\s+(?:is\s+|=\s*|of\s+)?['\"]?([\w\-]+)", question, re.I)
    return values.get(said.group(1).lower()) if said else None


_RELATIONSHIP = re.compile(r"-\[([^\]]*)\]-|<--|-->|\)--\(")
_VARIABLE_LENGTH = re.compile(r"\*\s*(\d*)\s*(?:\.\.\s*(\d*))?")


def _hops(cypher: str) -> int:
    """How many relationships the longest part of a query (split at UNION) follows: ``[*1..2]`` counts 2, ``[*1]``
    1, an open length (``[*]``, ``[*2..]``) at least 2."""

    def length(bracket: str) -> int:
        star = _VARIABLE_LENGTH.search(bracket)
        if star is None:
            return 1
        low, high = star.groups()
        if high is None:  # [*n] is exactly n; [*] is open
            return int(low) if low else 2
        return int(high) if high else max(int(low or 1), 2)

    def hops(part: str) -> int:
        return sum(length(match.group(1) or "") for match in _RELATIONSHIP.finditer(part))

    return max(hops(part) for part in re.split(r"\bUNION\b", _QUOTED.sub("''", cypher), flags=re.I))
