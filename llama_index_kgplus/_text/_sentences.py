"""Sentence splitting with the Punkt model that llama-index-core bundles (no download).

NLTK runs every regular expression under a 5 s limit, and Punkt's run over one paragraph: a single-line document
of 10 MB raised ``TimeoutError``. Text is therefore handed to Punkt in pieces of at most :data:`PIECE` characters,
cut at a line break or a sentence end where the piece has one (else at a space): text shorter than that is split
exactly as before, and a longer one in time linear in its length.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from llama_index.core.node_parser import SentenceSplitter

#: the most characters handed to Punkt at once
PIECE = 20_000
_SENTENCE_END = re.compile(r"[.!?][\"'\u201d\u2019)\]]*\s")

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


def pieces(text: str, size: int = PIECE) -> list[str]:
    """``text`` cut into consecutive pieces of at most ``size`` characters (joined, they are ``text``), each cut
    after the last line break of its second half, else its last sentence end, else its last space."""
    out, start = [], 0
    while len(text) - start > size:
        low, high = start + size // 2, start + size
        cut = text.rfind("\n", low, high) + 1
        if not cut:
            ends = [m.end() for m in _SENTENCE_END.finditer(text, low, high)]
            cut = ends[-1] if ends else text.rfind(" ", low, high) + 1
        cut = cut or high
        out.append(text[start:cut])
        start = cut
    out.append(text[start:])
    return out


def _punkt_spans() -> Callable[[str], list[str]]:
    from llama_index.core.node_parser.text.utils import split_by_sentence_tokenizer

    whole = split_by_sentence_tokenizer()
    return lambda text: [sentence for piece in pieces(text) for sentence in whole(piece)]


def sentence_splitter(chunk_size: int, chunk_overlap: int) -> SentenceSplitter:
    """llama-index's ``SentenceSplitter`` whose sentence tokenizer sees at most :data:`PIECE` characters at once."""
    from llama_index.core.node_parser import SentenceSplitter

    return SentenceSplitter(chunk_size=chunk_size, chunk_overlap=chunk_overlap, chunking_tokenizer_fn=_punkt_spans())


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
        for piece in pieces(paragraph) if paragraph else []:
            sentences.extend(s for s in (s.strip() for s in tokenize(piece)) if s)
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
