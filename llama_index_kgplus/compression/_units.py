"""Split a passage into the units a compressor keeps or drops: sentences, else lines, else character windows."""

from __future__ import annotations

import re
from dataclasses import dataclass

from llama_index_kgplus._text import split_sentences

_PARAGRAPH = re.compile(r"\n\s*\n")
# A line that starts like code, a list item, a table row or a prompt: the paragraph is read line by line.
_STRUCTURED_LINE = re.compile(r"^(\s+\S|[-*\u2022>|#]|\d+[.)]\s|>>>|\$ )")


@dataclass(frozen=True)
class Unit:
    """One keepable piece of a passage, with the paragraph it comes from."""

    text: str
    kind: str  # "sentence" | "line" | "window"
    paragraph: int


def _windows(text: str, max_chars: int, paragraph: int) -> list[Unit]:
    """Cut ``text`` into pieces of at most ``max_chars``, at a space where there is one (CJK has none)."""
    pieces, rest = [], text.strip()
    while len(rest) > max_chars:
        cut = rest.rfind(" ", max_chars // 2, max_chars + 1)
        cut = cut if cut > 0 else max_chars
        pieces.append(rest[:cut].strip())
        rest = rest[cut:].strip()
    if rest:
        pieces.append(rest)
    return [Unit(piece, "window", paragraph) for piece in pieces if piece]


def _blocks(lines: list[str]) -> list[str]:
    """Lines grouped into blocks: an indented line stays with the line above it (a function with its body, a
    list item with its continuation)."""
    blocks: list[list[str]] = []
    for line in (line.rstrip() for line in lines):
        if not line.strip():
            continue
        if blocks and line[:1].isspace():
            blocks[-1].append(line)
        else:
            blocks.append([line])
    return ["\n".join(block) for block in blocks]


def split_units(text: str, max_chars: int = 400) -> list[Unit]:
    """Sentences of each paragraph (Punkt). A paragraph of indented, listed or tabled lines (code, a list, a
    table), or one whose sentences run longer than ``max_chars`` (text with no sentence ends), is split into
    blocks of lines instead (an indented line stays with the line above it), an overlong block into its lines,
    and an overlong line into windows.

    Example:

    ```python
    [u.text for u in split_units("One. Two.\\n\\nx = 1\\nif x:\\n    y = 2")]   # ['One.', 'Two.', 'x = 1', 'if x:\\n    y = 2']
    ```
    """
    units: list[Unit] = []
    for number, paragraph in enumerate(p for p in _PARAGRAPH.split(text) if p.strip()):
        lines = paragraph.strip("\n").splitlines()
        structured = len(lines) > 1 and any(_STRUCTURED_LINE.match(line) for line in lines)
        sentences = [] if structured else split_sentences(paragraph)
        if not structured and all(len(s) <= max_chars for s in sentences):
            units += [Unit(s, "sentence", number) for s in sentences]
            continue
        for block in _blocks(lines):
            if len(block) > max_chars:
                for line in block.splitlines():
                    units += (
                        _windows(line, max_chars, number) if len(line) > max_chars else [Unit(line, "line", number)]
                    )
            else:
                units.append(Unit(block, "line", number))
    return units


def join_units(units: list[Unit]) -> str:
    """Kept units (in passage order) as text: a blank line between paragraphs, a newline between lines."""
    parts = []
    for i, unit in enumerate(units):
        if i:
            parts.append("\n\n" if unit.paragraph != units[i - 1].paragraph else "\n" if unit.kind == "line" else " ")
        parts.append(unit.text)
    return "".join(parts)
