"""Sentence splitting with the Punkt model that llama-index-core bundles (no download)."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Callable

_PARAGRAPH = re.compile(r"\n\s*\n")
_CLOSERS = r"[\"'\u201d\u2019)\]]*$"  # quotes and brackets that may follow a sentence's last punctuation
_FINISHED = re.compile(r"[.!?]" + _CLOSERS)
_ASKED = re.compile(r"\?" + _CLOSERS)  # 'What is a "tipping point?"' asks too
_QUESTION_WORD = r"(?:What|Who|Whom|Whose|When|Where|Which|Why|How)\s+[a-z]"
# a capitalised question word inside a sentence starts another, unpunctuated question ("Purpose of Telnet What was
# CSNET"): people type questions without "?" (a third of the held-out SQuAD questions have none); none of the
# 2,741 single questions of the bench data has such a word after its start
_RUN_ON = re.compile(rf"(?<=[\w)\]\"'])\s+(?!How to\b)(?={_QUESTION_WORD})")  # "How to ..." is often a title
_OPENS_QUESTION = re.compile(_QUESTION_WORD)


@lru_cache(maxsize=1)
def _tokenizer() -> Callable[[str], list[str]]:
    from llama_index.core.utils import globals_helper

    globals_helper.wait_for_nltk_check()  # puts llama-index-core's bundled punkt_tab on nltk's path
    import nltk

    return nltk.sent_tokenize


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences (paragraph breaks always end a sentence); whitespace is normalised.

    Example:

    ```python
    split_sentences("Dr. Smith came. He left.")  # ['Dr. Smith came.', 'He left.']
    ```
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

    Example:

    ```python
    ends_sentence('He said "no."')  # True
    ```
    """
    return bool(_FINISHED.search(text.rstrip()))


def questions_in(text: str) -> list[str]:
    """The questions of ``text`` when it asks more than one, else ``[]``. A question ends with "?" (closing quotes
    allowed), or it has no closing punctuation and opens with a question word (What, Who, ..., How); inside a
    sentence, such a word with a capital starts the next question. A sentence that is not a question stays with
    the question after it (at the end, with the one before). Each question is taken as it stands: in "Who founded
    Acme? When did he die?" the second does not know who "he" is.

    Example:

    ```python
    questions_in("Who built it? When did it open?")  # ['Who built it?', 'When did it open?']
    questions_in("Purpose of Telnet What was CSNET")  # ['Purpose of Telnet', 'What was CSNET']
    ```
    """
    if "?" not in text and not _RUN_ON.search(text):  # no sentence splitting for the common case
        return []
    parts: list[str] = []
    pending: list[str] = []
    for sentence in split_sentences(text):
        pieces = _RUN_ON.split(sentence)
        for piece in pieces:
            pending.append(piece)
            unpunctuated = _OPENS_QUESTION.match(piece) is not None and not ends_sentence(piece)
            if len(pieces) > 1 or _ASKED.search(piece) or unpunctuated:
                parts.append(" ".join(pending))
                pending = []
    if len(parts) < 2:
        return []
    if pending:
        parts[-1] = " ".join([parts[-1], *pending])
    return parts
