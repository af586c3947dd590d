"""Small corpora for the tests, cut from the bundled multi-hop sample."""

from __future__ import annotations

from pathlib import Path

from llama_index_kgplus.sample import SAMPLE_MULTIHOP_DOCS


def sample_head(path: Path, n: int) -> Path:
    """The first ``n`` records of the bundled multi-hop sample, written unchanged to ``path``."""
    lines = SAMPLE_MULTIHOP_DOCS.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:n]), encoding="utf-8")
    return path
