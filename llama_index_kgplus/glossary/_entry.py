"""A glossary entry (term, explanation, aliases, see-also) and the checks a set of entries must pass."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from llama_index.core.bridge.pydantic import BaseModel, Field, field_validator

from llama_index_kgplus.errors import InputDataError


def spelling(name: str) -> str:
    """A name as written, whitespace collapsed: the identity of a term or alias."""
    return " ".join(name.split())


def normalise(name: str) -> str:
    """A name for case-insensitive look-up, whitespace collapsed."""
    return spelling(name).casefold()


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
    """One glossary term with its explanation; ``aliases`` are other names matched in queries.

    Example:

    ```python
    from llama_index_kgplus import Glossary
    from llama_index_kgplus.glossary import GlossaryEntry

    entry = GlossaryEntry(term="GIL", explanation="The global interpreter lock.", aliases=["global interpreter lock"])
    glossary = Glossary(entries=[entry])
    ```
    """

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
            first = owner.setdefault(spelling(name), i)
            if first != i:
                raise InputDataError(
                    f"{where(i)}: duplicate term {name!r}: already defined by {entries[first].term!r} at "
                    f"{where(first)}. Merge the two entries or rename one."
                )
    folded = {normalise(name) for name in owner}
    for i, entry in enumerate(entries):
        for name in entry.see_also:
            if spelling(name) not in owner and normalise(name) not in folded:
                raise InputDataError(
                    f"{where(i)}: see_also names {name!r}, which is not a term or alias of this glossary."
                )
