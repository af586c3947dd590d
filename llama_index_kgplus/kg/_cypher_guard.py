"""The read-only guard for generated Cypher: one reading statement with a row limit, or nothing runs.

Cypher has no parser on PyPI that covers the three engines' dialects, so the guard tokenizes: string literals,
backquoted names and comments are set aside first (a keyword inside them is text, and a quote cannot hide a
second statement), then the words outside them are checked. Refused: a second statement, any clause that
writes or reaches outside the graph (``CREATE``, ``MERGE``, ``SET``, ``DELETE``, ``DETACH``, ``REMOVE``,
``DROP``, ``ALTER``, ``FOREACH``, ``LOAD CSV``, ``COPY``, ``CALL`` of any procedure, ``INSTALL``, ``ATTACH``,
``EXPORT``, ``IMPORT``, ``USE``, transactions), and a statement that does not start by reading (``MATCH``,
``OPTIONAL MATCH``, ``WITH``, ``UNWIND``) or does not ``RETURN``. A ``LIMIT`` is put on (or lowered to) the row
limit, on every branch of a ``UNION`` (a ``LIMIT`` binds to its own branch only); the runners stop reading at the
row limit too, so a union of branches returns no more rows than one query.

Example:

```python
read_only_cypher("MATCH (n:Ent) RETURN n.name", max_rows=100)   # 'MATCH (n:Ent) RETURN n.name LIMIT 100'
read_only_cypher("MATCH (a) RETURN a.x AS x UNION MATCH (b) RETURN b.x AS x", max_rows=5)
# 'MATCH (a) RETURN a.x AS x LIMIT 5 UNION MATCH (b) RETURN b.x AS x LIMIT 5'
```
"""

from __future__ import annotations

import re

from llama_index_kgplus.errors import UnsafeQueryError

__all__ = ["read_only_cypher"]

_DENIED = {
    "CREATE", "MERGE", "SET", "DELETE", "DETACH", "REMOVE", "DROP", "ALTER", "FOREACH", "LOAD", "COPY", "CALL",
    "INSTALL", "ATTACH", "EXPORT", "IMPORT", "USE", "BEGIN", "COMMIT", "ROLLBACK", "CHECKPOINT",
    "GRANT", "REVOKE", "DENY", "TERMINATE", "SHOW",
}  # fmt: skip
_READING_STARTS = {"MATCH", "OPTIONAL", "WITH", "UNWIND"}
# a string ('...' or "..." with backslash escapes), a `quoted name`, a // or /* */ comment
_SET_ASIDE = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`|//[^\n]*|/\*.*?\*/", re.DOTALL)
_TRAILING_LIMIT = re.compile(r"\bLIMIT\s+(\d+)\s*$", re.IGNORECASE)
# UNION or UNION ALL as a clause (not a property or function name: n.union)
_UNION = re.compile(r"(?<![.\w])UNION(?:\s+ALL)?(?!\w)", re.IGNORECASE)
_OPENING, _CLOSING = "([{", ")]}"


def read_only_cypher(query: str, *, max_rows: int) -> str:
    """``query`` as one reading statement with ``LIMIT max_rows`` at most; raises :class:`UnsafeQueryError`
    (with the reason) for anything else."""

    def refuse(reason: str) -> UnsafeQueryError:
        return UnsafeQueryError(f"Refused the generated Cypher ({reason}); it was not run.", query)

    text = query.strip()
    # each set aside as a placeholder word, not a blank: after "n.`name`" the next word must not read as a property
    # name ("n.`flag` SET ..." would hide the SET)
    unterminated = _SET_ASIDE.sub(" _ ", text)
    if re.search(r"['\"`]|/\*", unterminated):
        raise refuse("an unterminated string, name or comment")
    # words and punctuation outside strings, names and comments; a property or function namespace
    # (n.set, apoc.create) is not a clause
    outside = re.sub(r"\.\s*[A-Za-z_]\w*", ".x", unterminated)
    body = outside.rstrip().rstrip(";")
    if ";" in body:
        raise refuse("more than one statement")
    words = [w.upper() for w in re.findall(r"[A-Za-z_]\w*", body)]
    if not words:
        raise refuse("no statement")
    denied = sorted({w for w in words if w in _DENIED})
    if denied:
        raise refuse(f"it contains {', '.join(denied)}; only reading clauses may run")
    if words[0] not in _READING_STARTS:
        raise refuse(f"it starts with {words[0]}; a query starts with MATCH, OPTIONAL MATCH, WITH or UNWIND")
    if "RETURN" not in words:
        raise refuse("it has no RETURN")
    # comments go (a LIMIT appended after a // comment would be part of it); strings and names stay
    text = _SET_ASIDE.sub(lambda m: " " if m.group().startswith("/") else m.group(), text).rstrip().rstrip(";").rstrip()
    masked = _SET_ASIDE.sub(lambda m: " " * len(m.group()), text)  # same offsets, nothing inside quotes
    parts, start = [], 0
    for union in _top_level_unions(masked):
        parts += [_limited(text[start : union.start()], masked[start : union.start()], max_rows), union.group()]
        start = union.end()
    parts.append(_limited(text[start:], masked[start:], max_rows))
    return " ".join(parts)


def _top_level_unions(masked: str) -> list[re.Match[str]]:
    """The ``UNION`` clauses of ``masked`` (the query with strings, names and comments blanked) outside any
    brackets (a union inside an ``EXISTS { ... }`` subquery is part of an expression)."""
    depth, depths = 0, []
    for ch in masked:
        depths.append(depth)
        if ch in _OPENING:
            depth += 1
        elif ch in _CLOSING:
            depth = max(0, depth - 1)
    return [m for m in _UNION.finditer(masked) if depths[m.start()] == 0]


def _limited(text: str, masked: str, max_rows: int) -> str:
    """One query (or branch of a union) with ``LIMIT max_rows`` at most."""
    text, masked = text.strip(), masked.strip()
    limit = _TRAILING_LIMIT.search(masked)
    if limit is None:
        return f"{text} LIMIT {max_rows}"
    if int(limit.group(1)) > max_rows:
        return f"{text[: limit.start()]}LIMIT {max_rows}"
    return text
