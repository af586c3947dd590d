"""Document text shown as text: every character that HTML or Markdown could read as markup is escaped, so no
script, image or link from a document is ever rendered; and files are read only inside the given sources."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from llama_index_kgplus.errors import InputDataError

__all__ = ["escape_label", "escape_text", "highlight_html", "safe_path"]

# HTML's specials (what html.escape replaces) and Markdown's punctuation (links, images, emphasis, code, maths,
# Streamlit's :color[...] and emoji shortcodes): each becomes a numeric character reference
_SPECIAL = re.compile(r"[&<>\"'\\`*_{}\[\]()#+\-!|~$:^=]")


def escape_text(text: str) -> str:
    """``text`` as inert HTML: every character ``html.escape`` replaces, and Markdown's punctuation, as a numeric
    character reference; line ends as ``<br>`` (a blank line would end the HTML block and let Markdown read
    what follows). ``html.unescape(escape_text(t).replace("<br>", "\\n")) == t`` for text without ``\\r``."""
    escaped = _SPECIAL.sub(lambda m: f"&#{ord(m.group())};", text)
    return escaped.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "<br>")


_LABEL_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>:$^=&])")


def escape_label(text: str) -> str:
    """``text`` for a widget label (an expander's title, which Streamlit reads as Markdown, not HTML): Markdown's
    punctuation backslash-escaped and line ends as spaces, so a title from a document shows no link or image."""
    return _LABEL_SPECIAL.sub(r"\\\1", " ".join(text.splitlines()))


def highlight_html(text: str, sentences: Iterable[str]) -> str:
    """``text`` escaped, with each of ``sentences`` found in it wrapped in ``<mark>``; one ``<div>``."""
    spans: list[tuple[int, int]] = []
    for sentence in sentences:
        start = text.find(sentence) if sentence else -1
        if start >= 0:
            spans.append((start, start + len(sentence)))
    out, pos = [], 0
    for start, end in sorted(spans):
        if start < pos:
            continue
        out += [escape_text(text[pos:start]), "<mark>", escape_text(text[start:end]), "</mark>"]
        pos = end
    out.append(escape_text(text[pos:]))
    return '<div class="kgplus-passage">' + "".join(out) + "</div>"


def safe_path(name: str | Path, roots: Sequence[Path]) -> Path:
    """``name`` resolved (symlinks followed), if it lies inside one of ``roots`` (the sources given on the command
    line); else :class:`InputDataError`. Relative names are taken relative to the first root that is a folder."""
    candidate = Path(name)
    if not candidate.is_absolute():
        base = next((Path(r) for r in roots if Path(r).is_dir()), None)
        if base is None:
            raise InputDataError(f"{name}: not inside the sources given on the command line.")
        candidate = base / candidate
    resolved = candidate.resolve()
    for root in roots:
        root = Path(root).resolve()
        if resolved == root or (root.is_dir() and resolved.is_relative_to(root)):
            return resolved
    raise InputDataError(f"{name}: not inside the sources given on the command line.")
