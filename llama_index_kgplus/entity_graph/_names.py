"""When two names are one entity, and which names are too common to be entities.

The rule: an entity's id (its *key*) is its name case-folded, NFKC-normalised, with apostrophes removed, every
other punctuation character turned into a space and runs of spaces collapsed. So ``"God's Gift to Women"``,
``"GODS GIFT TO WOMEN"`` and ``"Gods gift, to women"`` are one entity (``"gods gift to women"``). A trailing
parenthesised qualifier (``"Lloyd (film)"``) stays in the key, and the bare name (``"Lloyd"``) becomes an alias
of it: a text that says "Lloyd" mentions every entity with that alias, unless an entity is called exactly
"Lloyd" (an exact name always beats an alias).

Example:

```python
entity_key("Lambert, Margrave of Tuscany")   # 'lambert margrave of tuscany'
strip_qualifier("Dark River (2017 film)")     # 'Dark River'
```
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

_QUALIFIER_RE = re.compile(r"\s*\([^()]*\)\s*$")
#: a number as a word of a key: digits, with an ordinal or plural ending ("1999", "2nd", "1990s")
_NUMBER_RE = re.compile(r"\d+(?:st|nd|rd|th|s)?")
_APOSTROPHES = str.maketrans("", "", "'\u2019\u02bc`\u00b4")


@lru_cache(maxsize=1 << 16)
def entity_key(name: str) -> str:
    """The id of the entity called ``name`` (the rule in the module docstring); ``""`` for a blank name (cached:
    a corpus repeats its names)."""
    text = unicodedata.normalize("NFKC", name).casefold().translate(_APOSTROPHES)
    return " ".join("".join(" " if unicodedata.category(c)[0] in "PS" else c for c in text).split())


def strip_qualifier(name: str) -> str:
    """``name`` without a trailing parenthesised qualifier: ``"Lloyd (film)"`` -> ``"Lloyd"``."""
    stripped = _QUALIFIER_RE.sub("", name).strip()
    return stripped or name.strip()


def surface_forms(name: str) -> list[str]:
    """The spellings under which ``name`` is looked up in a text: as written, and without its punctuation
    (``"Wrong Turn 5: Bloodlines"`` also as ``"Wrong Turn 5 Bloodlines"``)."""
    name = " ".join(name.split())
    plain = " ".join(
        "".join(" " if unicodedata.category(c)[0] in "PS" else c for c in name.translate(_APOSTROPHES)).split()
    )
    return [name] if not plain or plain.casefold() == name.casefold() else [name, plain]


@lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    from llama_index.core.utils import globals_helper  # NLTK's English list, bundled with llama-index-core

    return frozenset(globals_helper.stopwords)


def is_linkable_name(name: str, min_length: int = 2, stop_names: frozenset[str] = frozenset()) -> bool:
    """False for names that would link passages by accident: shorter than ``min_length`` characters, without
    a letter, made only of English stop words and numbers ("It", "The Who", "1990s", "No. 5", "the 2nd"; numbers,
    dates and amounts are not entities, as for the ``ner`` source's labels), or listed in ``stop_names`` (keys)."""
    key = entity_key(name)
    if len(key) < min_length or not any(c.isalpha() for c in key) or key in stop_names:
        return False
    return not all(word in _stopwords() or _NUMBER_RE.fullmatch(word) for word in key.split())
