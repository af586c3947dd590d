"""Paths to the small, openly licensed sample data bundled with the package (see ``data/sample/LICENSES.md``); the
public ones are re-exported by :mod:`llama_index_kgplus.sample`."""

from __future__ import annotations

from pathlib import Path

_DATA = Path(__file__).parent / "data"
SAMPLE_DIR = _DATA / "sample"
SAMPLE_DOCS = SAMPLE_DIR / "docs.jsonl"
SAMPLE_KG_NODES = SAMPLE_DIR / "kg" / "nodes.csv"
SAMPLE_KG_RELATIONSHIPS = SAMPLE_DIR / "kg" / "relationships.csv"
#: 120 short Wikipedia passages of 2WikiMultihopQA and 13 multi-hop questions over them (``gold_ids``)
SAMPLE_MULTIHOP_DOCS = SAMPLE_DIR / "multihop.jsonl"
SAMPLE_MULTIHOP_QUESTIONS = SAMPLE_DIR / "multihop_questions.jsonl"
#: Seattle's daily weather 2012-2015 (date, precipitation, temp_max, temp_min, wind, weather)
SAMPLE_WEATHER_TABLE = SAMPLE_DIR / "tables" / "seattle-weather.csv"
#: Monthly prices of five stocks 2000-2010 (symbol, date, price)
SAMPLE_STOCKS_TABLE = SAMPLE_DIR / "tables" / "stocks.csv"


def sample_glossary_path() -> Path:
    """The example glossary: inside the wheel at ``data/glossary.json``, in a source checkout the top-level file."""
    packaged = _DATA / "glossary.json"
    return packaged if packaged.is_file() else Path(__file__).parent.parent / "glossary.json"
