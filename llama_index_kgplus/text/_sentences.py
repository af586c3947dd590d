"""Sentence splitting with the Punkt model that llama-index-core bundles (no download)."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Callable

_PARAGRAPH = re.compile(r"\n\s*\n")
_FINISHED = re.compile(r"[.!?][\"'\u201d\u2019)\]]*$")


@lru_cache(maxsize=1)
def _tokenizer() -> Callable[[str], list[str]]:
    from llama_index.core.utils import globals_helper

    globals_helper.wait_for_nltk_check()  # puts llama-index-core's bundled punkt_tab on nltk's path
    import nltk

    return nltk.sent_tokenize


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences (paragraph breaks always end a sentence); whitespace is normalised.

    Example::

        split_sentences("Dr. Smith came. He left.")  # ['Dr. Smith came.', 'He left.']
    """
    tokenize = _tokenizer()
    sentences: list[str] = []
    for paragraph in _PARAGRAPH.split(text):
        paragraph = " ".join(paragraph.split())
        if paragraph:
            sentences.extend(s for s in (s.strip() for s in tokenize(paragraph)) if s)
    return sentences


def ends_sentence(text: str) -> bool:
    """Whether ``text`` ends with a sentence's closing punctuation (quotes and brackets after it allowed).

    Example::

        ends_sentence('He said "no."')  # True
    """
    return bool(_FINISHED.search(text.rstrip()))


def questions_in(text: str) -> list[str]:
    """The questions of ``text`` when it asks more than one, else ``[]``. A sentence that is not a question
    stays with the question after it (at the end, with the one before). Each question is taken as it stands: in
    "Who founded Acme? When did he die?" the second does not know who "he" is.

    Example::

        questions_in("Who built it? When did it open?")  # ['Who built it?', 'When did it open?']
    """
    if text.count("?") < 2:  # no sentence splitting for the common case
        return []
    parts: list[str] = []
    pending: list[str] = []
    for sentence in split_sentences(text):
        pending.append(sentence)
        if sentence.endswith("?"):
            parts.append(" ".join(pending))
            pending = []
    if len(parts) < 2:
        return []
    if pending:
        parts[-1] = " ".join([parts[-1], *pending])
    return parts
