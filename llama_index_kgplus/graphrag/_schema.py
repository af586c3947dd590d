"""Bounded, stripped text for the pydantic schemas the LLM fills: every string has a ``maxLength`` (so a small
model under a grammar cannot run on) and blank text is rejected (so an "empty" answer is retried, not kept)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import StringConstraints


def bounded_text(max_length: int, *, min_length: int = 1) -> Any:
    """``str`` stripped of surrounding whitespace, ``min_length`` to ``max_length`` characters."""
    return Annotated[str, StringConstraints(strip_whitespace=True, min_length=min_length, max_length=max_length)]
