"""Making summary (parent) nodes: ids, merged metadata, CHILD/PARENT relationships both ways, embeddings.

Metadata of a summary node:

- every key whose value is the same in all children is kept (e.g. ``title`` of a single-document cluster);
- ``level``: one more than the highest child level (chunks are level 0);
- ``child_count``: the number of children;
- ``doc_ids``: the source document ids of all descendants, in order of first appearance, always a list;
- ``doc_id``: kept only when all children share one source document (then ``ref_doc_id`` works too, through a
  SOURCE relationship to that document); a summary that spans documents has no ``doc_id``.

A child gets a PARENT relationship to its summary. RAPTOR's soft clustering can give a child several parents;
LlamaIndex allows one PARENT, so it points to the first (most probable) one; ``metadata["parent_ids"]``
always lists them all. The parent's CHILD list always names every child.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np
from llama_index.core.schema import BaseNode, NodeRelationship, RelatedNodeInfo, TextNode

from llama_index_kgplus._vectors import unit

LEVEL_KEY = "level"
CHILD_COUNT_KEY = "child_count"
DOC_ID_KEY = "doc_id"
DOC_IDS_KEY = "doc_ids"
PARENT_IDS_KEY = "parent_ids"
BOOKKEEPING_KEYS = (LEVEL_KEY, CHILD_COUNT_KEY, DOC_ID_KEY, DOC_IDS_KEY, PARENT_IDS_KEY)
_NAMESPACE = uuid.UUID("6f1c2a57-4a3e-4f59-9a55-0f6d1b3c9e21")


def node_level(node: BaseNode) -> int:
    """``metadata["level"]`` (0 when absent: a chunk)."""
    try:
        return int(node.metadata.get(LEVEL_KEY, 0) or 0)
    except (TypeError, ValueError):
        return 0


def node_doc_ids(node: BaseNode) -> list[str]:
    """Source document ids of a node: ``doc_ids``, else ``doc_id``, else its SOURCE (``ref_doc_id``)."""
    ids = node.metadata.get(DOC_IDS_KEY)
    if isinstance(ids, list) and ids:
        return [str(i) for i in ids]
    single = node.metadata.get(DOC_ID_KEY) or node.ref_doc_id
    return [str(single)] if single else []


def mark_leaf(node: BaseNode) -> None:
    """Give a chunk ``level`` 0 (hidden from the embedding and the LLM)."""
    node.metadata.setdefault(LEVEL_KEY, 0)
    _exclude(node, LEVEL_KEY)


def _exclude(node: BaseNode, *keys: str) -> None:
    for attr in ("excluded_embed_metadata_keys", "excluded_llm_metadata_keys"):
        current = list(getattr(node, attr))
        setattr(node, attr, current + [k for k in keys if k not in current])


def parent_id(builder: str, level: int, children: Sequence[BaseNode]) -> str:
    """A deterministic id: the same builder, level and children always give the same summary id."""
    key = "|".join([builder, str(level), *sorted(c.node_id for c in children)])
    return str(uuid.uuid5(_NAMESPACE, key))


def merge_metadata(children: Sequence[BaseNode], level: int) -> tuple[dict[str, Any], list[str], list[str]]:
    """Metadata of a summary of ``children`` and its excluded embed / LLM keys (see the module doc)."""
    first = children[0].metadata
    shared = {
        k: v
        for k, v in first.items()
        if k not in BOOKKEEPING_KEYS and all(k in c.metadata and c.metadata[k] == v for c in children[1:])
    }
    doc_ids = list(dict.fromkeys(d for c in children for d in node_doc_ids(c)))
    metadata = dict(shared)
    if len(doc_ids) == 1:
        metadata[DOC_ID_KEY] = doc_ids[0]
    metadata[DOC_IDS_KEY] = doc_ids
    metadata[LEVEL_KEY] = level
    metadata[CHILD_COUNT_KEY] = len(children)
    excluded = []
    for attr in ("excluded_embed_metadata_keys", "excluded_llm_metadata_keys"):
        keys = [k for k in getattr(children[0], attr) if k in shared and all(k in getattr(c, attr) for c in children)]
        excluded.append(keys + [k for k in BOOKKEEPING_KEYS if k in metadata])
    return metadata, excluded[0], excluded[1]


def _shared_source(children: Sequence[BaseNode]) -> RelatedNodeInfo | None:
    sources = [c.source_node for c in children if c.source_node is not None]
    if len(sources) == len(children) and len({s.node_id for s in sources}) == 1:
        src = sources[0]
        return RelatedNodeInfo(node_id=src.node_id, node_type=src.node_type, metadata={}, hash=src.hash)
    return None


def related_info(node: BaseNode) -> RelatedNodeInfo:
    # like node.as_related_node_info() without a copy of the whole metadata in every link
    return RelatedNodeInfo(node_id=node.node_id, node_type=node.get_type(), metadata={}, hash=node.hash)


def make_parent(builder: str, children: Sequence[BaseNode], text: str) -> TextNode:
    """A summary ``TextNode`` of ``children`` with merged metadata, linked both ways (children are modified)."""
    level = max(node_level(c) for c in children) + 1
    metadata, excluded_embed, excluded_llm = merge_metadata(children, level)
    parent = TextNode(
        id_=parent_id(builder, level, children),
        text=text,
        metadata=metadata,
        excluded_embed_metadata_keys=excluded_embed,
        excluded_llm_metadata_keys=excluded_llm,
    )
    parent.relationships[NodeRelationship.CHILD] = [related_info(c) for c in children]
    source = _shared_source(children)
    if source is not None:
        parent.relationships[NodeRelationship.SOURCE] = source
    info = related_info(parent)
    for child in children:
        link_child(child, info)
    return parent


def link_child(child: BaseNode, parent: RelatedNodeInfo) -> None:
    """Point ``child`` at ``parent``: PARENT for its first summary parent, and always in ``parent_ids``."""
    ids = list(child.metadata.get(PARENT_IDS_KEY) or [])
    if parent.node_id in ids:
        return
    if not ids:
        child.relationships[NodeRelationship.PARENT] = parent
    child.metadata[PARENT_IDS_KEY] = [*ids, parent.node_id]
    _exclude(child, PARENT_IDS_KEY)


def mean_embedding(children: Sequence[BaseNode]) -> list[float]:
    """The normalised mean of the children's embeddings."""
    matrix = np.asarray([c.embedding for c in children], dtype=np.float64)
    return unit(matrix.mean(axis=0)).tolist()
