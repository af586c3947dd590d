"""Paths to the small, openly licensed sample data bundled with the package (see ``data/sample/LICENSES.md``)."""

from __future__ import annotations

from pathlib import Path

_DATA = Path(__file__).parent / "data"
SAMPLE_DIR = _DATA / "sample"
SAMPLE_DOCS = SAMPLE_DIR / "docs.jsonl"
SAMPLE_KG_NODES = SAMPLE_DIR / "kg" / "nodes.csv"
SAMPLE_KG_RELATIONSHIPS = SAMPLE_DIR / "kg" / "relationships.csv"


def sample_glossary_path() -> Path:
    """The example glossary: inside the wheel at ``data/glossary.json``, in a source checkout the top-level file."""
    packaged = _DATA / "glossary.json"
    return packaged if packaged.is_file() else Path(__file__).parent.parent / "glossary.json"
