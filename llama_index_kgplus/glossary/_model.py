"""The glossary model: validated entries (term, explanation, aliases, see-also) and a whole-word term matcher.

Example::

    glossary = Glossary(entries=[GlossaryEntry(term="GIL", explanation="The global interpreter lock.")])
    glossary["gil"].explanation         # case-insensitive look-up by term or alias
    [e.term for e in glossary.match("Why does the GIL exist?")]   # ['GIL']

Load files with :meth:`Glossary.load` (JSON or CSV), see :mod:`._load` for the formats and error messages.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from llama_index.core.bridge.pydantic import BaseModel, Field, PrivateAttr, field_validator, model_validator

from llama_index_kgplus.errors import InputDataError
from llama_index_kgplus.files import atomic_write_json
from llama_index_kgplus.text import PhraseMatch, PhraseMatcher, normalize_phrase


def _spelling(name: str) -> str:
    """A name as written, whitespace collapsed: the identity of a term or alias."""
    return " ".join(name.split())


def _normalise(name: str) -> str:
    """A name for case-insensitive look-up, whitespace collapsed."""
    return _spelling(name).casefold()


def plural_forms(phrase: str) -> list[str]:
    """English plural variants of the phrase's last word (``class`` -> ``classes``), for term spotting only."""
    head, _, last = phrase.rpartition(" ")
    if not last or not last[-1].isalpha() or last.isupper():
        return []
    lower = last.lower()
    if lower.endswith(("s", "x", "z", "ch", "sh")):
        forms = [last + "es"]
    elif lower.endswith("y") and len(lower) > 1 and lower[-2] not in "aeiou":
        forms = [last[:-1] + "ies"]
    else:
        forms = [last + "s"]
    return [f"{head} {f}" if head else f for f in forms]


class GlossaryEntry(BaseModel):
    """One glossary term with its explanation; ``aliases`` are other names matched in queries."""

    term: str = Field(description="The term as written in the domain's documents.")
    explanation: str = Field(description="What the term means (plain text).")
    aliases: list[str] = Field(default_factory=list, description="Other names or spellings of the term.")
    see_also: list[str] = Field(default_factory=list, description="Related terms of the same glossary.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Any extra data kept with the entry.")

    @field_validator("term", "explanation")
    @classmethod
    def _not_blank(cls, value: str, info: Any) -> str:
        if not value or not value.strip():
            raise ValueError(f"{info.field_name} is empty")
        return value.strip()

    @field_validator("aliases", "see_also")
    @classmethod
    def _names(cls, values: list[str], info: Any) -> list[str]:
        cleaned = [v.strip() for v in values]
        if any(not v for v in cleaned):
            raise ValueError(f"{info.field_name} holds an empty name")
        return cleaned

    @property
    def names(self) -> list[str]:
        """The term followed by its aliases."""
        return [self.term, *self.aliases]

    def to_text(self, explanation: str | None = None) -> str:
        """One line for a prompt: ``- term (also: a, b): explanation``; ``explanation`` overrides the text."""
        also = f" (also: {', '.join(self.aliases)})" if self.aliases else ""
        text = " ".join((explanation if explanation is not None else self.explanation).split())
        see = f" See also: {', '.join(self.see_also)}." if self.see_also else ""
        return f"- {self.term}{also}: {text}{see}"

    def to_record(self) -> dict[str, Any]:
        """The JSON form (optional keys only when set)."""
        record: dict[str, Any] = {"term": self.term, "explanation": self.explanation}
        for key in ("aliases", "see_also", "metadata"):
            if getattr(self, key):
                record[key] = getattr(self, key)
        return record


def check_entries(entries: Sequence[GlossaryEntry], where: Callable[[int], str]) -> None:
    """Raise :class:`InputDataError` on a name spelt the same way by two entries or a see-also to an unknown
    term. Names that differ only in case (git's ``head`` and ``HEAD``) are distinct terms.

    ``where(i)`` names the position of entry ``i`` in the source (e.g. ``glossary.json:12:5: terms[3]``).
    """
    owner: dict[str, int] = {}
    for i, entry in enumerate(entries):
        for name in entry.names:
            first = owner.setdefault(_spelling(name), i)
            if first != i:
                raise InputDataError(
                    f"{where(i)}: duplicate term {name!r}: already defined by {entries[first].term!r} at "
                    f"{where(first)}. Merge the two entries or rename one."
                )
    folded = {_normalise(name) for name in owner}
    for i, entry in enumerate(entries):
        for name in entry.see_also:
            if _spelling(name) not in owner and _normalise(name) not in folded:
                raise InputDataError(
                    f"{where(i)}: see_also names {name!r}, which is not a term or alias of this glossary."
                )


class Glossary(BaseModel):
    """A validated glossary: unique terms and aliases, see-also links to existing terms.

    Names are matched ignoring case, except names that differ only in case from another entry's (``head`` and
    ``HEAD``): those match only as written.

    Example::

        glossary = Glossary.load("glossary.json")        # or .csv; Glossary.from_dict({...})
        len(glossary), glossary.terms[:3]
        glossary.match("How do I write a decorator?")     # entries whose term or alias is in the text
    """

    entries: list[GlossaryEntry] = Field(description="The glossary entries, in source order.")
    source: str | None = Field(default=None, description="Where the glossary was loaded from (for messages).")
    match_plurals: bool = Field(
        default=True, description="Also spot simple English plurals of terms and aliases (class -> classes)."
    )

    _matcher: PhraseMatcher | None = PrivateAttr(default=None)
    _exact: dict[str, dict[str, set[int]]] | None = PrivateAttr(default=None)
    _index: dict[str, int] | None = PrivateAttr(default=None)
    _folded: dict[str, set[int]] | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _consistent(self) -> Glossary:
        check_entries(self.entries, lambda i: f"entries[{i}] ({self.entries[i].term!r})")
        return self

    @classmethod
    def class_name(cls) -> str:
        return "Glossary"

    # ------------------------------------------------------------------ loading (see _load.py)

    @classmethod
    def load(cls, path: str | Path) -> Glossary:
        """Load ``.json`` (``{"terms": [...]}``) or ``.csv`` (columns term, explanation, aliases, see_also)."""
        from llama_index_kgplus.glossary._load import load_glossary

        return load_glossary(path)

    @classmethod
    def from_json(cls, path: str | Path) -> Glossary:
        from llama_index_kgplus.glossary._load import read_json_glossary

        return read_json_glossary(path)

    @classmethod
    def from_csv(cls, path: str | Path) -> Glossary:
        from llama_index_kgplus.glossary._load import read_csv_glossary

        return read_csv_glossary(path)

    @classmethod
    def from_dict(cls, data: Any, source: str = "<dict>") -> Glossary:
        """From ``{"terms": [{"term", "explanation", "aliases"?, "see_also"?, "metadata"?}]}``."""
        from llama_index_kgplus.glossary._load import glossary_from_data

        return glossary_from_data(data, source)

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        """The JSON form, ``{"terms": [...]}``, that :meth:`from_dict` reads back."""
        return {"terms": [e.to_record() for e in self.entries]}

    def save(self, path: str | Path) -> None:
        """Write the JSON form, atomically."""
        atomic_write_json(path, self.to_dict(), indent=1)

    # ------------------------------------------------------------------ access

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[GlossaryEntry]:  # type: ignore[override]
        return iter(self.entries)

    @property
    def terms(self) -> list[str]:
        return [e.term for e in self.entries]

    def _name_index(self) -> dict[str, int]:
        if self._index is None:
            self._index, self._folded = {}, {}
            for i, entry in enumerate(self.entries):
                for name in entry.names:
                    self._index[_spelling(name)] = i
                    self._folded.setdefault(_normalise(name), set()).add(i)
        return self._index

    def get(self, name: str) -> GlossaryEntry | None:
        """The entry whose term or alias is ``name``: as written, else ignoring case when only one entry has it
        (``None`` when none, or when several entries differ from it only in case)."""
        i = self._name_index().get(_spelling(name))
        if i is None:
            owners = self._folded.get(_normalise(name), set()) if self._folded is not None else set()
            i = next(iter(owners)) if len(owners) == 1 else None
        return None if i is None else self.entries[i]

    def __getitem__(self, name: str) -> GlossaryEntry:
        entry = self.get(name)
        if entry is None:
            raise KeyError(name)
        return entry

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    # ------------------------------------------------------------------ term spotting

    def matcher(self) -> PhraseMatcher:
        """The shared whole-word matcher over terms and aliases (payload: entry position), built once."""
        if self._matcher is None:
            self._name_index()
            assert self._folded is not None
            pairs = []
            for i, entry in enumerate(self.entries):
                for name in entry.names:
                    pairs.append((name, i))
                    if self.match_plurals:  # a plural that is itself a term keeps pointing at that term only
                        pairs.extend((f, i) for f in plural_forms(name) if _normalise(f) not in self._folded)
            spellings: dict[str, dict[str, set[int]]] = {}
            for name, i in pairs:
                spellings.setdefault(normalize_phrase(name), {}).setdefault(_spelling(name), set()).add(i)
            # keys shared by entries whose names differ in case are matched as written
            self._exact = {k: v for k, v in spellings.items() if len(set().union(*v.values())) > 1 and len(v) > 1}
            self._matcher = PhraseMatcher.from_pairs(pairs)
        return self._matcher

    def find(self, text: str) -> list[PhraseMatch]:
        """Whole-word, leftmost-longest spans of ``text`` naming a term or alias (``values``: entry positions)."""
        found = self.matcher().find(text)
        if not self._exact:
            return found
        out = []
        for match in found:
            exact = self._exact.get(match.key)
            if exact is None:
                out.append(match)
            elif owners := exact.get(_spelling(match.text)):
                out.append(replace(match, values=tuple(v for v in match.values if v in owners)))
        return out

    def match(self, text: str) -> list[GlossaryEntry]:
        """Entries named in ``text``, each once, in order of first mention."""
        seen: dict[int, None] = {}
        for m in self.find(text):
            for i in m.values:
                seen.setdefault(int(i), None)  # type: ignore[call-overload]  # values are entry indexes
        return [self.entries[i] for i in seen]
