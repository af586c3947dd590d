"""Whole-word, case-insensitive, leftmost-longest dictionary matching over Aho-Corasick (pyahocorasick).

One automaton finds every dictionary key in a text in a single pass, whatever the dictionary size; the
matches are then filtered to whole words and reduced to leftmost-longest, non-overlapping spans. Runs of
whitespace count as one space on both sides: in the keys and in the text searched.

Example:

```python
matcher = PhraseMatcher.from_pairs([("aspirin", "C1"), ("headache", "C2")])
[(m.start, m.end, m.values) for m in matcher.find("Aspirin for a headache?")]
# [(0, 7, ('C1',)), (14, 22, ('C2',))]
```
"""

from __future__ import annotations

import json
import re
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ahocorasick

from llama_index_kgplus._files import atomic_write_json
from llama_index_kgplus.errors import InputDataError

_FORMAT = "kgplus-phrase-matcher/2"
_IRREGULAR_SPACE = re.compile(r"\s{2,}|[^\S ]")


@dataclass(frozen=True)
class PhraseMatch:
    """A span ``text[start:end]`` that equals a dictionary key (ignoring case); ``values`` are its payloads."""

    start: int
    end: int
    text: str
    key: str
    values: tuple[Hashable, ...]


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def normalize_phrase(phrase: str) -> str:
    """The dictionary form of a phrase: whitespace runs as one space, lower case (same length per character)."""
    return _lower_same_length(" ".join(phrase.split()))


def _collapse_spaces(text: str) -> tuple[str, list[int] | None]:
    """``text`` with every whitespace run as one space, and the offset in ``text`` of each kept character
    (``None`` when nothing changed)."""
    if not _IRREGULAR_SPACE.search(text):
        return text, None
    chars: list[str] = []
    offsets: list[int] = []
    for i, ch in enumerate(text):
        if ch.isspace():
            if chars and chars[-1] == " ":
                continue
            ch = " "
        chars.append(ch)
        offsets.append(i)
    return "".join(chars), offsets


def _lower_same_length(text: str) -> str:
    """Lower-case ``text`` without changing its length, so offsets stay valid."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in text)


class PhraseMatcher:
    """Dictionary matcher; keys are matched case-insensitively as whole words.

    Several payloads may share one key (e.g. two entities with the same name); a match carries all of them.
    """

    def __init__(self) -> None:
        self._automaton = ahocorasick.Automaton()
        self._finalized = False

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[str, Hashable]]) -> PhraseMatcher:
        """Build from ``(phrase, payload)`` pairs; blank phrases are ignored."""
        matcher = cls()
        for phrase, value in pairs:
            matcher.add(phrase, value)
        return matcher

    def add(self, phrase: str, value: Hashable) -> None:
        key = normalize_phrase(phrase)
        if not key:
            return
        existing = self._automaton.get(key, None)
        if existing is None:
            self._automaton.add_word(key, (key, (value,)))
        elif value not in existing[1]:
            self._automaton.add_word(key, (key, (*existing[1], value)))
        self._finalized = False

    def __len__(self) -> int:
        return len(self._automaton)

    def payloads(self) -> Iterable[tuple[Hashable, ...]]:
        """The payload tuple of every key."""
        return (values for _, values in self._automaton.values())

    def get(self, phrase: str) -> tuple[Hashable, ...]:
        """Payloads of an exact phrase (case-insensitive), or ``()``."""
        found = self._automaton.get(normalize_phrase(phrase), None)
        return found[1] if found else ()

    def find(self, text: str) -> list[PhraseMatch]:
        """Leftmost-longest, non-overlapping, whole-word matches in ``text``, in text order."""
        if len(self._automaton) == 0:
            return []
        if not self._finalized:
            self._automaton.make_automaton()
            self._finalized = True
        spaced, offsets = _collapse_spaces(text)
        haystack = _lower_same_length(spaced)
        n = len(haystack)
        candidates = []
        for end_index, (key, values) in self._automaton.iter(haystack):
            end = end_index + 1
            start = end - len(key)
            if _is_word_char(key[0]) and start > 0 and _is_word_char(haystack[start - 1]):
                continue
            if _is_word_char(key[-1]) and end < n and _is_word_char(haystack[end]):
                continue
            candidates.append((start, -end, key, values))
        candidates.sort()
        matches, covered_to = [], 0
        for start, neg_end, key, values in candidates:
            end = -neg_end
            if start >= covered_to:
                covered_to = end
                if offsets is not None:
                    start, end = offsets[start], offsets[end - 1] + 1
                matches.append(PhraseMatch(start, end, text[start:end], key, values))
        return matches

    # ------------------------------------------------------------------ persistence (JSON: data, never code)

    def to_dict(self) -> dict[str, Any]:
        """The dictionary as JSON data: ``{"format", "entries": [[key, [payload, ...]], ...]}`` (tuple payloads
        become lists; payloads must be JSON values)."""
        return {"format": _FORMAT, "entries": [[key, list(values)] for key, (_, values) in self._automaton.items()]}

    @classmethod
    def from_dict(cls, data: Any) -> PhraseMatcher:
        """Rebuild from :meth:`to_dict` output, checking its shape (``InputDataError`` when it is not one)."""
        if not isinstance(data, dict) or data.get("format") != _FORMAT or not isinstance(data.get("entries"), list):
            raise InputDataError(f"Not a phrase dictionary of format {_FORMAT}.")
        matcher = cls()
        for i, entry in enumerate(data["entries"]):
            if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str) and entry[0]
                    and isinstance(entry[1], list) and entry[1]):  # fmt: skip
                raise InputDataError(f"Phrase dictionary entry {i} is not [key, [payload, ...]].")
            key, values = entry
            matcher._automaton.add_word(key, (key, tuple(_hashable(v) for v in values)))
        return matcher

    def save(self, path: str | Path) -> None:
        """Write the dictionary as JSON, atomically."""
        atomic_write_json(path, self.to_dict())

    @classmethod
    def load(cls, path: str | Path) -> PhraseMatcher:
        """Read a dictionary written by :meth:`save`."""
        return cls.from_dict(_read_json(path))


def _hashable(value: Any) -> Hashable:
    """A JSON payload back in its hashable form (lists were tuples)."""
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        raise InputDataError("A phrase dictionary payload is an object; payloads are strings, numbers or lists.")
    return value


def _read_json(path: str | Path) -> Any:
    try:
        return json.loads(Path(path).read_bytes())
    except (OSError, ValueError, RecursionError) as exc:
        raise InputDataError(f"Cannot read the dictionary {path}: {exc}") from exc
