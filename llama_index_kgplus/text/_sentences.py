"""Sentence splitting with the Punkt model that llama-index-core bundles (no download)."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Callable

_PARAGRAPH = re.compile(r"\n\s*\n")


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
