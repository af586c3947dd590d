"""Whole-word, case-insensitive, leftmost-longest dictionary matching over Aho-Corasick (pyahocorasick).

One automaton finds every dictionary key in a text in a single pass, whatever the dictionary size; the
matches are then filtered to whole words and reduced to leftmost-longest, non-overlapping spans.

Example::

    matcher = PhraseMatcher.from_pairs([("aspirin", "C1"), ("headache", "C2")])
    [(m.start, m.end, m.values) for m in matcher.find("Aspirin for a headache?")]
    # [(0, 7, ('C1',)), (14, 22, ('C2',))]
"""

from __future__ import annotations

import pickle
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from pathlib import Path

import ahocorasick


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
        key = _lower_same_length(" ".join(phrase.split()))
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

    def get(self, phrase: str) -> tuple[Hashable, ...]:
        """Payloads of an exact phrase (case-insensitive), or ``()``."""
        found = self._automaton.get(_lower_same_length(" ".join(phrase.split())), None)
        return found[1] if found else ()

    def find(self, text: str) -> list[PhraseMatch]:
        """Leftmost-longest, non-overlapping, whole-word matches in ``text``, in text order."""
        if len(self._automaton) == 0:
            return []
        if not self._finalized:
            self._automaton.make_automaton()
            self._finalized = True
        haystack = _lower_same_length(text)
        n = len(text)
        candidates = []
        for end_index, (key, values) in self._automaton.iter(haystack):
            end = end_index + 1
            start = end - len(key)
            if _is_word_char(key[0]) and start > 0 and _is_word_char(text[start - 1]):
                continue
            if _is_word_char(key[-1]) and end < n and _is_word_char(text[end]):
                continue
            candidates.append((start, -end, key, values))
        candidates.sort()
        matches, covered_to = [], 0
        for start, neg_end, key, values in candidates:
            if start >= covered_to:
                matches.append(PhraseMatch(start, -neg_end, text[start:-neg_end], key, values))
                covered_to = -neg_end
        return matches

    def save(self, path: str | Path) -> None:
        """Persist the dictionary (a pickled automaton: loads far faster than rebuilding 10^6 keys)."""
        if not self._finalized and len(self._automaton):
            self._automaton.make_automaton()
            self._finalized = True
        Path(path).write_bytes(pickle.dumps(self._automaton, protocol=pickle.HIGHEST_PROTOCOL))

    @classmethod
    def load(cls, path: str | Path) -> PhraseMatcher:
        """Load a dictionary saved by :meth:`save` (a pickle: only load files you made yourself)."""
        matcher = cls()
        matcher._automaton = pickle.loads(Path(path).read_bytes())
        matcher._finalized = matcher._automaton.kind == ahocorasick.AHOCORASICK
        return matcher
