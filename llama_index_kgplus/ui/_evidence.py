"""Turn a LlamaIndex response into what the Ask page shows: one :class:`EvidenceItem` per source (passage, KG
paths, community report, table rows), the sentences of each passage that match the answer, a "why this source"
line, and KG paths or entity-graph walks as Graphviz DOT (drawn by the browser, no network)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from llama_index_kgplus._text import split_sentences

__all__ = ["EvidenceItem", "evidence_items", "glossary_view", "matching_sentences", "paths_dot", "walk_dot", "why_line"]

_WORD = re.compile(r"\w+", re.UNICODE)
_STOP = frozenset(
    "the and for are but not you all any can had her was one our out has his how its may new now see two who did "
    "get use with that this from they will have been were what when which their there them then than into also "
    "about more other some such only your each most over".split()
)


def _words(text: str) -> set[str]:
    return {w for w in (m.lower() for m in _WORD.findall(text)) if len(w) > 2 and w not in _STOP}


def matching_sentences(text: str, answer: str, min_share: float = 0.34, limit: int = 3) -> list[str]:
    """The sentences of ``text`` that share the most content words with ``answer`` (at least ``min_share`` of the
    sentence's own content words), best first, at most ``limit``."""
    answer_words = _words(answer)
    if not answer_words:
        return []
    scored = []
    for sentence in split_sentences(text):
        words = _words(sentence)
        if len(words) < 2:
            continue
        share = len(words & answer_words) / len(words)
        if share >= min_share:
            scored.append((share, sentence))
    return [s for _, s in sorted(scored, key=lambda x: -x[0])[:limit]]


@dataclass
class EvidenceItem:
    """One source of an answer, ready to show: ``kind`` is ``passage``, ``kg_paths``, ``report`` or ``rows``."""

    kind: str
    title: str
    text: str
    why: str
    doc_id: str | None = None
    node_id: str | None = None
    level: int = 0
    score: float | None = None
    highlights: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)
    dot: str | None = None


def _dot_id(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def paths_dot(paths: Sequence[dict[str, Any]]) -> str:
    """KG paths (``kg_paths`` of a KG answer: ``{"nodes": [{"cid", "name"}], "relationships": [{"type",
    "direction"}]}``) as one Graphviz digraph, each relationship in its stored direction."""
    lines = ["digraph kg {", "rankdir=LR;", 'node [shape=box, style="rounded,filled", fillcolor="#eef3fb"];']
    nodes: dict[str, str] = {}
    edges: set[tuple[str, str, str]] = set()
    for path in paths:
        names = [n["cid"] for n in path["nodes"]]
        for n in path["nodes"]:
            nodes[n["cid"]] = n.get("name") or n["cid"]
        for rel, (a, b) in zip(path["relationships"], zip(names, names[1:])):
            edges.add((a, b, rel["type"]) if rel["direction"] == "->" else (b, a, rel["type"]))
    lines += [f"{_dot_id(cid)} [label={_dot_id(name)}];" for cid, name in nodes.items()]
    lines += [f"{_dot_id(a)} -> {_dot_id(b)} [label={_dot_id(t)}];" for a, b, t in sorted(edges)]
    return "\n".join([*lines, "}"])


def _walk_label(node: dict[str, str]) -> str:
    return node["entity"] if "entity" in node else f"[{node.get('doc_id', '?')}]"


def walk_dot(why: dict[str, Any]) -> str | None:
    """The entity-graph walk that reached a passage (``metadata["entity_graph"]``) as a Graphviz digraph."""
    steps = [s for s in why.get("path") or [] if "to" in s and "from" in s]
    if not steps:
        return None
    lines = ["digraph walk {", "rankdir=LR;", "node [shape=box, style=rounded];"]
    for step in steps:
        lines.append(
            f"{_dot_id(_walk_label(step['from']))} -> {_dot_id(_walk_label(step['to']))} "
            f"[label={_dot_id(str(step.get('edge', '')))}];"
        )
    return "\n".join([*lines, "}"])


def why_line(meta: dict[str, Any], score: float | None, rank: int, engine: str | None, highlights: int) -> str:
    """One line on why a passage is among the sources."""
    parts = [f"rank {rank}" + (f", similarity {score:.3f}" if score is not None else "")]
    if engine:
        parts.append(f"retrieved by the {engine} engine")
    level = int(meta.get("level", 0) or 0)
    if level:
        parts.append(f"a level-{level} summary of {meta.get('child_count', '?')} nodes")
    walk = meta.get("entity_graph")
    if walk:
        steps = [s for s in walk.get("path") or [] if "to" in s]
        if steps:
            parts.append("reached by the entity-graph walk " + " ".join(
                [_walk_label(steps[0]["from"])] + [f"-{s.get('edge', '')}- {_walk_label(s['to'])}" for s in steps]
            ))  # fmt: skip
        else:
            parts.append("a dense hit of the entity-graph retriever")
    kept = meta.get("compression")
    if kept:
        if kept.get("dropped"):
            parts.append("no sentence of it fit the context budget: not shown to the LLM")
        else:
            parts.append(f"the LLM read {kept.get('kept_units')} of its {kept.get('units')} sentences")
    parts.append(f"{highlights} sentence(s) match the answer" if highlights else "no sentence matches the answer")
    return "; ".join(parts)


def evidence_items(response: Any, answer: str, engine: str | None = None) -> list[EvidenceItem]:
    """Every source of ``response`` as an :class:`EvidenceItem`, in rank order; KG paths (from the response's
    ``kg_paths``) and community reports (``reports`` of a global answer) come first."""
    meta = dict(getattr(response, "metadata", None) or {})
    items: list[EvidenceItem] = []
    if meta.get("kg_paths"):
        texts = "\n".join(p["text"] for p in meta["kg_paths"])
        entities = ", ".join(e.get("name", "") for e in meta.get("kg_entities", [])) or "-"
        items.append(EvidenceItem(
            kind="kg_paths", title=f"knowledge-graph paths ({len(meta['kg_paths'])})", text=texts,
            why=f"relationship paths between the entities found in the question: {entities}",
            dot=paths_dot(meta["kg_paths"]),
        ))  # fmt: skip
    points: dict[Any, list[str]] = {}
    for point in meta.get("key_points", []):
        points.setdefault(point["community_id"], []).append(point["description"])
    for report in meta.get("reports", []):
        cid = report["community_id"]
        items.append(EvidenceItem(
            kind="report", title=f"community report: {report['title']} (rating {report['rating']:.1f})",
            text="\n".join(f"- {p}" for p in points.get(cid, [])),
            why=f"community {cid}, importance {report['importance']:.1f} in the map step of global search",
            score=report.get("importance"),
        ))  # fmt: skip
    if meta.get("sql"):
        rows = meta.get("rows") or []
        items.append(EvidenceItem(
            kind="rows", title="SQL and rows", text=meta["sql"] + "\n\n" + "\n".join(map(str, rows[:20])),
            why="the answer is written from the rows this read-only query returned",
        ))  # fmt: skip
    rank = 0
    for hit in getattr(response, "source_nodes", []) or []:
        node = hit.node
        node_meta = dict(node.metadata or {})
        if node_meta.get("source") == "knowledge_graph":
            continue  # shown above as the graph of paths
        rank += 1
        text = node.get_content()
        highlights = matching_sentences(text, answer)
        doc_id = node_meta.get("doc_id") or node.ref_doc_id
        level = int(node_meta.get("level", 0) or 0)
        children = [c.node_id for c in node.child_nodes or []] if level else []
        items.append(EvidenceItem(
            kind="passage", title=f"[{rank}] {doc_id or ', '.join(node_meta.get('doc_ids', [])) or node.node_id}"
            + (f" · summary level {level}" if level else "")
            + (f" · score {hit.score:.3f}" if hit.score is not None else ""),
            text=text, why=why_line(node_meta, hit.score, rank, engine, len(highlights)), doc_id=doc_id,
            node_id=node.node_id, level=level, score=hit.score, highlights=highlights, children=children,
            dot=walk_dot(node_meta["entity_graph"]) if node_meta.get("entity_graph") else None,
        ))  # fmt: skip
    return items


def glossary_view(meta: dict[str, Any]) -> dict[str, Any] | None:
    """The glossary rewrite of an answer as ``{"before", "after", "terms", "refused"}`` (None without one)."""
    if "glossary_terms" not in meta:
        return None
    return {
        "before": meta.get("original_query"),
        "after": meta.get("rewritten_query"),
        "terms": list(meta.get("glossary_terms") or []),
        "refused": meta.get("fallback_reason"),
        "proposed": meta.get("proposed_query"),
    }
