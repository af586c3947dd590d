"""Paths to the small, openly licensed sample data bundled with the package (see ``data/sample/LICENSES.md``); the
public ones are re-exported by :mod:`llama_index_kgplus.sample`."""

from __future__ import annotations

from pathlib import Path

_DATA = Path(__file__).parent / "data"
SAMPLE_DIR = _DATA / "sample"
SAMPLE_DOCS = SAMPLE_DIR / "docs.jsonl"
"""Pages of the Python tutorial as JSON Lines (``id``, ``title``, ``text``): a corpus for :func:`load_corpus`."""
SAMPLE_KG_NODES = SAMPLE_DIR / "kg" / "nodes.csv"
"""The nodes of a small knowledge graph (the UMLS semantic types) in neo4j-admin CSV format, for :func:`import_kg`."""
SAMPLE_KG_RELATIONSHIPS = SAMPLE_DIR / "kg" / "relationships.csv"
"""The relationships of the knowledge graph of :data:`SAMPLE_KG_NODES` (neo4j-admin CSV)."""
SAMPLE_MULTIHOP_DOCS = SAMPLE_DIR / "multihop.jsonl"
"""120 short Wikipedia passages of 2WikiMultihopQA (JSON Lines), for the entity graph's multi-hop retrieval."""
SAMPLE_MULTIHOP_QUESTIONS = SAMPLE_DIR / "multihop_questions.jsonl"
"""13 multi-hop questions over :data:`SAMPLE_MULTIHOP_DOCS`, each with the ``gold_ids`` of the passages it needs."""
SAMPLE_WEATHER_TABLE = SAMPLE_DIR / "tables" / "seattle-weather.csv"
"""Seattle's daily weather 2012-2015 (date, precipitation, temp_max, temp_min, wind, weather) as CSV."""
SAMPLE_STOCKS_TABLE = SAMPLE_DIR / "tables" / "stocks.csv"
"""Monthly prices of five stocks 2000-2010 (symbol, date, price) as CSV."""


def sample_glossary_path() -> Path:
    """The example glossary: inside the wheel at ``data/glossary.json``, in a source checkout the top-level file."""
    packaged = _DATA / "glossary.json"
    return packaged if packaged.is_file() else Path(__file__).parent.parent / "glossary.json"
