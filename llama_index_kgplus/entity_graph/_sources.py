"""Entity sources: where the entity dictionary comes from.

- ``titles``: the title of each node's document (``metadata["title"]``), and the title without its trailing
  parenthesised qualifier as an alias;
- ``kg``: the names, synonyms and relationships of a knowledge graph imported with ``kgplus kg import``;
- ``glossary``: the terms and aliases of a glossary;
- ``ner``: named entities and proper-noun phrases that spaCy's English pipeline finds in each node;
- ``llm``: the entities and relationships that the GraphRAG extractor (:class:`~llama_index_kgplus.graphrag.
  GraphExtractor`) finds in each node.

The first three are dictionaries known before any text is read; ``ner`` and ``llm`` read every node (the only
costly step of linking) and their results are kept in the node's metadata, so a node is never read twice.
This module uses the public API of the ``kg``, ``glossary`` and ``graphrag`` capabilities, which never import
the entity graph.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from llama_index_kgplus.entity_graph._dictionary import EntityDictionary
from llama_index_kgplus.entity_graph._names import strip_qualifier
from llama_index_kgplus.errors import InputDataError

if TYPE_CHECKING:
    from llama_index.core.schema import BaseNode

    from llama_index_kgplus.glossary import Glossary

ENTITY_SOURCES = ("titles", "kg", "glossary", "ner", "llm")
#: Sources that read every node's text.
READING_SOURCES = ("ner", "llm")


def parse_sources(value: str | Sequence[str]) -> list[str]:
    """``"titles,ner"`` or ``["titles", "ner"]`` -> ``["titles", "ner"]``; unknown names are an error that lists
    the valid ones."""
    names = [s.strip() for s in value.split(",")] if isinstance(value, str) else [str(s).strip() for s in value]
    names = list(dict.fromkeys(n for n in names if n))
    unknown = [n for n in names if n not in ENTITY_SOURCES]
    if unknown:
        raise InputDataError(
            f"Unknown entity source(s) {', '.join(map(repr, unknown))}: choose from {', '.join(ENTITY_SOURCES)}."
        )
    if not names:
        raise InputDataError(f"No entity source given: choose from {', '.join(ENTITY_SOURCES)}.")
    return names


def add_titles(entities: EntityDictionary, nodes: Iterable[BaseNode]) -> int:
    """One entity per document title; returns how many titles were added."""
    seen: set[str] = set()
    for node in nodes:
        title = node.metadata.get("title")
        doc_id = node.ref_doc_id or node.node_id
        if not isinstance(title, str) or not title.strip() or doc_id in seen:
            continue
        seen.add(doc_id)
        entities.add(title, "titles", aliases=[strip_qualifier(title)], doc_id=doc_id)
    return len(seen)


def add_glossary(entities: EntityDictionary, glossary: Glossary) -> int:
    """One entity per glossary entry (its term), with the entry's aliases."""
    for entry in glossary:
        entities.add(entry.term, "glossary", aliases=entry.aliases)
    return len(glossary)


def add_kg(
    entities: EntityDictionary, names: Sequence[tuple[str, str, bool]], relationships: Sequence[tuple[str, str, str]]
) -> int:
    """A knowledge graph's entities (``(id, name_or_synonym, is_synonym)`` rows, as
    :meth:`KnowledgeGraph.names` gives them) and relationships ``(start id, end id, type)``."""
    canonical: dict[str, str] = {}
    synonyms: dict[str, list[str]] = {}
    for cid, text, is_alias in names:
        if is_alias:
            synonyms.setdefault(cid, []).append(text)
        else:
            canonical.setdefault(cid, text)
    for cid, name in canonical.items():
        entities.add(name, "kg", aliases=synonyms.get(cid, ()), kg_id=cid)
    for start, end, rel_type in relationships:
        if start in canonical and end in canonical:
            entities.relate(canonical[start], canonical[end], rel_type)
    return len(canonical)


def read_kg(kg_store: str) -> tuple[list[tuple[str, str, bool]], list[tuple[str, str, str]]]:
    """Names and relationships of the knowledge graph in the store at ``kg_store`` (a URI), read once."""
    from llama_index_kgplus.kg import KnowledgeGraph

    with KnowledgeGraph.open(kg_store) as kg:
        return kg.names(), kg.relationships()


def load_glossary(path: str) -> Glossary:
    from llama_index_kgplus.glossary import Glossary

    return Glossary.load(path)


def node_text(node: BaseNode) -> str:
    from llama_index.core.schema import MetadataMode

    return node.get_content(metadata_mode=MetadataMode.NONE)


def graph_extractor() -> Any:
    """The GraphRAG extractor with at least one entity per text (small local models answer "none" to zero)."""
    from llama_index_kgplus.graphrag import GraphExtractor

    return GraphExtractor(min_entities=1)


def metered_llm(llm: Any) -> Any:
    """``llm`` with its calls and tokens counted (see :func:`llm_usage`)."""
    from llama_index_kgplus.llm import metered

    return metered(llm)


def llm_usage(llm: Any | None) -> Any:
    """The ``LLMUsage`` so far of an LLM from :func:`metered_llm` (zero for None)."""
    from llama_index_kgplus.llm._usage import LLMUsage, usage_meter

    return LLMUsage() if llm is None else usage_meter(llm).snapshot()


def extraction_records(result: Any) -> tuple[list[str], list[list[str]]]:
    """Entity names and ``[source, target, type]`` relationships of a GraphRAG ``ExtractionResult``."""
    names = [e.name for e in result.entities]
    relationships = [[r.source, r.target, r.type.upper()] for r in result.relationships]
    return names, relationships


__all__ = [
    "ENTITY_SOURCES",
    "READING_SOURCES",
    "add_glossary",
    "add_kg",
    "add_titles",
    "extraction_records",
    "graph_extractor",
    "llm_usage",
    "load_glossary",
    "metered_llm",
    "node_text",
    "parse_sources",
    "read_kg",
]
