"""MkDocs hook: the command-line reference, generated from the argparse parsers (``kgplus COMMAND --help``)."""

from __future__ import annotations

from typing import Any

MARKER = "<!-- cli-reference -->"


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    """Replace the marker with each command's help text."""
    if MARKER not in markdown:
        return markdown
    from llama_index_kgplus.cli._parser import command_parsers

    sections = []
    for parser in command_parsers():
        sections.append(f"### `{parser.prog}`\n\n```text\n{parser.format_help().rstrip()}\n```\n")
    return markdown.replace(MARKER, "\n".join(sections))
