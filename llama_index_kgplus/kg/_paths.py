"""The path model and its rendering: ``aspirin -[TREATS]-> headache <-[ISA]- migraine``.

A path reads left to right from the entity mentioned first. Each relationship shows its display type (the
``relname`` property when it has one, else its ``:TYPE``) and its stored direction relative to that reading:
``->`` when it points from the left node to the right one, ``<-`` otherwise.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from llama_index_kgplus.graph_stores._dialects import RawPath


class PathNode(BaseModel):
    """An entity on a path."""

    cid: str = Field(description="Entity id.")
    name: str = Field(description="Entity name (its id when it has no name).")


class PathRelationship(BaseModel):
    """A relationship on a path, oriented along the path's reading direction."""

    type: str = Field(description="The relationship's name property (e.g. relname) or else its :TYPE.")
    direction: Literal["->", "<-"] = Field(description="'->' if stored from the left node to the right one.")
    key: str = Field("", description="Engine id of the relationship (tells parallel relationships apart).")
    properties: dict[str, Any] = Field(default_factory=dict, description="Requested relationship properties.")


class KGPath(BaseModel):
    """A path between two entities; ``text`` renders it in arrow notation.

    Example:

    ```python
    from llama_index_kgplus import KGPathRetriever

    for path in KGPathRetriever.from_defaults(kg, max_hops=2).retrieve_paths("Can a virus cause a disease or syndrome?").paths:
        print(path.length, path.text)  # 1 virus -[causes]-> disease or syndrome
    ```
    """

    nodes: list[PathNode] = Field(description="Entities in reading order (length + 1 of them).")
    relationships: list[PathRelationship] = Field(description="Relationships in reading order.")

    @property
    def length(self) -> int:
        """Number of relationships (hops)."""
        return len(self.relationships)

    @property
    def text(self) -> str:
        """The path as text, e.g. ``Virus -[CAUSES]-> Headache``."""
        return render_path([n.name for n in self.nodes], [(r.type, r.direction) for r in self.relationships])

    @property
    def facts(self) -> str:
        """The path as plain facts, one per relationship: ``aspirin TREATS headache; migraine ISA headache``."""
        return render_facts([n.name for n in self.nodes], [(r.type, r.direction) for r in self.relationships])

    @property
    def endpoints(self) -> tuple[str, str]:
        """The ids of the first and last node."""
        return self.nodes[0].cid, self.nodes[-1].cid

    def identity(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Equal for the same nodes over the same relationships (parallel relationships differ)."""
        return tuple(n.cid for n in self.nodes), tuple(r.key or f"{r.type}{r.direction}" for r in self.relationships)

    def to_dict(self) -> dict[str, Any]:
        """The ``kgplus kg paths --json`` form."""
        return {
            "nodes": [{"cid": n.cid, "name": n.name} for n in self.nodes],
            "relationships": [{"type": r.type, "direction": r.direction} for r in self.relationships],
            "length": self.length,
            "text": self.text,
        }

    def to_flat(self) -> list[str]:
        """``[cid, "-[type]->", cid, "<-[type]-", cid]``: the gold-path notation of the bench data."""
        out = [self.nodes[0].cid]
        for rel, node in zip(self.relationships, self.nodes[1:]):
            out += [f"-[{rel.type}]->" if rel.direction == "->" else f"<-[{rel.type}]-", node.cid]
        return out

    @classmethod
    def from_raw(cls, raw: RawPath, name_property: str | None = "relname") -> KGPath:
        """From an engine's :class:`RawPath` (already oriented); ``name_property`` gives the display type."""
        nodes = [
            PathNode(cid=c, name=str(n) if n not in (None, "") else c) for c, n in zip(raw.node_ids, raw.node_names)
        ]
        rels = []
        for i, rel_type in enumerate(raw.rel_types):
            props = raw.rel_properties[i] if raw.rel_properties else {}
            shown = props.get(name_property) if name_property else None
            rels.append(
                PathRelationship(
                    type=str(shown) if shown not in (None, "") else rel_type,
                    direction="->" if raw.rel_forward[i] else "<-",
                    key=raw.rel_keys[i],
                    properties={k: v for k, v in props.items() if v is not None},
                )
            )
        return cls(nodes=nodes, relationships=rels)


def render_path(names: list[str], rels: list[tuple[str, str]]) -> str:
    """``render_path(["aspirin", "headache", "migraine"], [("TREATS", "->"), ("ISA", "<-")])``
    gives ``aspirin -[TREATS]-> headache <-[ISA]- migraine``."""
    parts = [names[0]]
    for (rel_type, direction), name in zip(rels, names[1:]):
        parts.append(f"-[{rel_type}]->" if direction == "->" else f"<-[{rel_type}]-")
        parts.append(name)
    return " ".join(parts)


def render_facts(names: list[str], rels: list[tuple[str, str]]) -> str:
    """``render_facts(["aspirin", "headache", "migraine"], [("TREATS", "->"), ("ISA", "<-")])``
    gives ``aspirin TREATS headache; migraine ISA headache``: each relationship in its stored direction,
    underscores in its type read as spaces (``part_of`` -> ``part of``)."""
    facts = []
    for (rel_type, direction), left, right in zip(rels, names, names[1:]):
        subject, obj = (left, right) if direction == "->" else (right, left)
        facts.append(f"{subject} {rel_type.replace('_', ' ')} {obj}")
    return "; ".join(facts)
