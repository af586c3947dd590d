"""The glossary model: validated entries (term, explanation, aliases, see-also) and a whole-word term matcher.

Example:

```python
glossary = Glossary(entries=[GlossaryEntry(term="GIL", explanation="The global interpreter lock.")])
glossary["gil"].explanation         # case-insensitive look-up by term or alias
[e.term for e in glossary.match("Why does the GIL exist?")]   # ['GIL']
```

Load files with :meth:`Glossary.load` (JSON or CSV), see :mod:`._load` for the formats and error messages.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from llama_index.core.bridge.pydantic import BaseModel, Field, PrivateAttr, ValidationInfo, model_validator

from llama_index_kgplus._files import atomic_write_json
from llama_index_kgplus._gc import paused_gc
from llama_index_kgplus._text import PhraseMatch, PhraseMatcher, normalize_phrase
from llama_index_kgplus.glossary._entry import GlossaryEntry, check_entries, normalise, plural_forms, spelling
from llama_index_kgplus.glossary._load import entries_from_data, load_entries, read_csv_entries, read_json_entries

_CHECKED = "kgplus_entries_checked"  # validation context: the entries passed check_entries already


class Glossary(BaseModel):
    """A validated glossary: unique terms and aliases, see-also links to existing terms.

    Names are matched ignoring case, except names that differ only in case from another entry's (``head`` and
    ``HEAD``): those match only as written.

    Example:

    ```python
    glossary = Glossary.load("glossary.json")        # or .csv; Glossary.from_dict({...})
    len(glossary), glossary.terms[:3]
    glossary.match("How do I write a decorator?")     # entries whose term or alias is in the text
    ```
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
    def _consistent(self, info: ValidationInfo) -> Glossary:
        if not (info.context or {}).get(_CHECKED):  # the loaders checked them already, naming file positions
            check_entries(self.entries, lambda i: f"entries[{i}] ({self.entries[i].term!r})")
        return self

    @classmethod
    def _checked(cls, read: Callable[[], list[GlossaryEntry]], source: str) -> Glossary:
        """A glossary of the entries ``read()`` returns, checked by the reader (with file positions) and not a
        second time; the garbage collector is paused while 10^5 entries are made (see :mod:`._gc`)."""
        with paused_gc():
            return cls.model_validate({"entries": read(), "source": source}, context={_CHECKED: True})

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this component under."""
        return "Glossary"

    # ------------------------------------------------------------------ loading (see _load.py)

    @classmethod
    def load(cls, path: str | Path) -> Glossary:
        """Load ``.json`` (``{"terms": [...]}``) or ``.csv`` (columns term, explanation, aliases, see_also)."""
        return cls._checked(lambda: load_entries(path), str(path))

    @classmethod
    def from_json(cls, path: str | Path) -> Glossary:
        """Load a ``.json`` glossary, whatever its suffix."""
        return cls._checked(lambda: read_json_entries(path), str(path))

    @classmethod
    def from_csv(cls, path: str | Path) -> Glossary:
        """Load a ``.csv`` glossary, whatever its suffix."""
        return cls._checked(lambda: read_csv_entries(path), str(path))

    @classmethod
    def from_dict(cls, data: Any, source: str = "<dict>") -> Glossary:
        """From ``{"terms": [{"term", "explanation", "aliases"?, "see_also"?, "metadata"?}]}``."""
        return cls._checked(lambda: entries_from_data(data, source), source)

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
        """The terms of the entries, in file order."""
        return [e.term for e in self.entries]

    def _name_index(self) -> dict[str, int]:
        if self._index is None:
            index: dict[str, int] = {}
            folded: dict[str, set[int]] = {}
            for i, entry in enumerate(self.entries):
                for name in entry.names:
                    index[spelling(name)] = i
                    folded.setdefault(normalise(name), set()).add(i)
            self._index, self._folded = index, folded
        return self._index

    def get(self, name: str) -> GlossaryEntry | None:
        """The entry whose term or alias is ``name``: as written, else ignoring case when only one entry has it
        (``None`` when none, or when several entries differ from it only in case)."""
        i = self._name_index().get(spelling(name))
        if i is None:
            owners = self._folded.get(normalise(name), set()) if self._folded is not None else set()
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
        """The shared whole-word matcher over terms and aliases (payload: entry position), built once (in time
        linear in the number of names)."""
        if self._matcher is None:
            with paused_gc():
                self._build_matcher()
        assert self._matcher is not None
        return self._matcher

    def _build_matcher(self) -> None:
        self._name_index()
        folded = self._folded
        assert folded is not None
        pairs = []
        plurals = self.match_plurals
        for i, entry in enumerate(self.entries):
            for name in entry.names:
                pairs.append((name, i))
                if plurals:  # a plural that is itself a term keeps pointing at that term only
                    pairs.extend((f, i) for f in plural_forms(name) if normalise(f) not in folded)
        spellings: dict[str, dict[str, set[int]]] = {}
        for name, i in pairs:
            spellings.setdefault(normalize_phrase(name), {}).setdefault(spelling(name), set()).add(i)
        # keys shared by entries whose names differ in case are matched as written
        self._exact = {k: v for k, v in spellings.items() if len(v) > 1 and len(set().union(*v.values())) > 1}
        self._matcher = PhraseMatcher.from_pairs(pairs)

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
            elif owners := exact.get(spelling(match.text)):
                out.append(replace(match, values=tuple(v for v in match.values if v in owners)))
        return out

    def match(self, text: str) -> list[GlossaryEntry]:
        """Entries named in ``text``, each once, in order of first mention."""
        seen: dict[int, None] = {}
        for m in self.find(text):
            for i in m.values:
                seen.setdefault(int(i), None)  # type: ignore[call-overload]  # values are entry indexes
        return [self.entries[i] for i in seen]


def load_glossary(path: str | Path) -> Glossary:
    """Load a ``.json`` or ``.csv`` glossary (chosen by suffix): :meth:`Glossary.load`."""
    return Glossary.load(path)
