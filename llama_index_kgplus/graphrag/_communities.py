"""Hierarchical Leiden communities (leidenalg + igraph) with a fixed seed and a maximum cluster size,
recomputed incrementally and matched to the previous ones by membership.

Level 0 partitions every connected component of the entity graph; a community larger than
``max_cluster_size`` is partitioned again into level ``l + 1`` children, down to ``max_levels`` levels (as
graspologic's ``hierarchical_leiden``, which Microsoft GraphRAG uses).

On an update, a component whose nodes and weighted edges did not change keeps its communities (the same input
with the same seed gives the same output, so it is not run again); a changed component is partitioned again
with the same seed, starting from the previous membership (``warm_start``). With ``previous_edges`` given and
``local_moves`` on, only the nodes the change touches (new nodes, nodes whose edges changed, and their
neighbours) may change community; the others keep theirs (Leiden's ``is_membership_fixed``; the idea of
delta-screening in dynamic community detection), so a small change moves a few nodes, not whole regions.
Communities are always split into connected parts. New communities then take the id of the previous community
of the same level they overlap most (Jaccard >= ``match_threshold``), else a fresh id. ``local_moves`` trades
some modularity for stability; rebuild from scratch now and then (``kgplus graphrag index --rebuild``) to
re-optimise globally.

Example:

```python
detector = CommunityDetector(max_cluster_size=10, random_state=42).fit(entity_ids, weighted_edges)
detector.communities_[0].entity_ids
```
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, Field


@dataclass(frozen=True)
class Community:
    """One community of one level; ``entity_ids`` are sorted."""

    id: str
    level: int
    entity_ids: tuple[str, ...]
    parent: str | None = None
    children: tuple[str, ...] = ()
    structure_key: str = ""
    component_key: str = ""

    @property
    def size(self) -> int:
        return len(self.entity_ids)


@dataclass
class _Node:
    level: int
    members: tuple[str, ...]
    structure_key: str
    component_key: str
    children: list[_Node] = field(default_factory=list)
    reused_id: str | None = None


def _adjacency(nodes: Iterable[str], edges: Mapping[tuple[str, str], float]) -> dict[str, dict[str, float]]:
    adj: dict[str, dict[str, float]] = {n: {} for n in nodes}
    for (a, b), weight in edges.items():
        if a == b or a not in adj or b not in adj:
            continue
        adj[a][b] = adj[a].get(b, 0.0) + float(weight)
        adj[b][a] = adj[b].get(a, 0.0) + float(weight)
    return adj


def _structure_key(members: Sequence[str], adj: Mapping[str, Mapping[str, float]]) -> str:
    inside = set(members)
    edges = sorted((a, b, round(w, 6)) for a in members for b, w in adj[a].items() if b in inside and a < b)
    payload = json.dumps([sorted(members), edges], ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def _components(adj: Mapping[str, Mapping[str, float]]) -> list[tuple[str, ...]]:
    seen: set[str] = set()
    out = []
    for start in sorted(adj):
        if start in seen:
            continue
        seen.add(start)
        stack, comp = [start], []
        while stack:
            node = stack.pop()
            comp.append(node)
            for nb in adj[node]:
                if nb not in seen:
                    seen.add(nb)
                    stack.append(nb)
        out.append(tuple(sorted(comp)))
    return out


def _touched(adj: Mapping[str, Mapping[str, float]], previous_edges: Mapping[tuple[str, str], float]) -> set[str]:
    """Nodes whose edges differ from ``previous_edges`` (new nodes included), and their neighbours."""
    before = _adjacency({n for pair in previous_edges for n in pair}, previous_edges)
    changed = {n for n in adj if before.get(n) != adj[n]}
    changed |= {n for n in before if n not in adj}  # gone: their old neighbours are touched
    touched = set(changed)
    for n in changed:
        touched.update(adj.get(n, ()))
        touched.update(before.get(n, ()))
    return touched & set(adj)


def _connected_parts(members: Sequence[str], adj: Mapping[str, Mapping[str, float]]) -> list[tuple[str, ...]]:
    inside = set(members)
    return _components({n: {m: w for m, w in adj[n].items() if m in inside} for n in members})


class _Previous:
    """The previous communities, indexed for reuse, warm starts and id matching."""

    def __init__(self, previous: Sequence[Community]) -> None:
        self.all = list(previous)
        self.by_id = {c.id: c for c in previous}
        self.by_key = {(c.level, c.structure_key): c for c in previous}
        self.components = {c.component_key for c in previous if c.level == 0}
        self.movable: set[str] | None = None  # None: every node may move
        self.label_of: dict[int, dict[str, str]] = defaultdict(dict)
        for c in previous:
            for n in c.entity_ids:
                self.label_of[c.level][n] = c.id

    def subtree(self, old: Community) -> _Node:
        node = _Node(old.level, old.entity_ids, old.structure_key, old.component_key, reused_id=old.id)
        node.children = [self.subtree(self.by_id[c]) for c in old.children if c in self.by_id]
        return node


class CommunityDetector(BaseModel):
    """Hierarchical Leiden on the entity graph; see the module docstring for the incremental rules.

    Example:

    ```python
    detector = CommunityDetector(max_cluster_size=10).fit(["a", "b", "c"], {("a", "b"): 1.0})
    [(c.id, c.level, c.entity_ids) for c in detector.communities_]
    # [('c0', 0, ('a', 'b')), ('c1', 0, ('c',))]
    ```
    """

    max_cluster_size: int = Field(
        default=10, ge=2, description="Communities larger than this are split one level down."
    )
    max_levels: int = Field(
        default=3, ge=1, le=10, description="Most levels of the hierarchy (level 0 is the coarsest)."
    )
    random_state: int = Field(
        default=42, description="Seed of Leiden; the same seed and graph give the same communities."
    )
    resolution: float = Field(default=1.0, gt=0, description="Resolution of the modularity (RB configuration) quality.")
    warm_start: bool = Field(
        default=True, description="Start Leiden on a changed component from the previous membership."
    )
    local_moves: bool = Field(
        default=True,
        description="On an update (previous_edges given), only nodes the change touches may change community.",
    )
    match_threshold: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="Least Jaccard overlap for a new community to keep a previous community's id.",
    )

    communities_: list[Community] | None = Field(
        default=None, exclude=True, description="Learned: all communities, parents first."
    )
    n_levels_: int | None = Field(default=None, exclude=True, description="Learned: number of levels.")
    reused_: list[str] | None = Field(
        default=None,
        exclude=True,
        description="Learned: ids kept from the previous communities without running Leiden.",
    )
    matched_: list[str] | None = Field(
        default=None, exclude=True, description="Learned: ids recomputed by Leiden that kept a previous id by overlap."
    )
    next_id_: int | None = Field(
        default=None, exclude=True, description="Learned: the id counter to pass to the next fit."
    )

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this component under."""
        return "CommunityDetector"

    def fit(
        self,
        entity_ids: Iterable[str],
        edges: Mapping[tuple[str, str], float],
        previous: Sequence[Community] = (),
        *,
        previous_edges: Mapping[tuple[str, str], float] | None = None,
        next_id: int = 0,
    ) -> CommunityDetector:
        """Partition the graph of ``entity_ids`` and weighted ``edges`` (summed over both directions),
        reusing and matching ``previous`` communities (computed on ``previous_edges``); new ids count up from
        ``next_id``."""
        adj = _adjacency(sorted(set(entity_ids)), edges)
        prev = _Previous(previous)
        if previous and previous_edges is not None and self.local_moves and self.warm_start:
            prev.movable = _touched(adj, previous_edges)
        roots: list[_Node] = []
        for comp in _components(adj):
            ckey = _structure_key(comp, adj)
            if ckey in prev.components:
                roots.extend(prev.subtree(c) for c in prev.all if c.level == 0 and c.component_key == ckey)
                continue
            groups = [comp] if len(comp) == 1 else self._leiden(comp, adj, prev.label_of[0], prev.movable)
            for members in groups:
                node = _Node(0, members, _structure_key(members, adj), ckey)
                self._split(node, adj, prev)
                roots.append(node)
        self._assign_ids(roots, prev, next_id)
        return self

    def _split(self, node: _Node, adj: Mapping[str, Mapping[str, float]], prev: _Previous) -> None:
        if len(node.members) <= self.max_cluster_size or node.level + 1 >= self.max_levels:
            return
        old = prev.by_key.get((node.level, node.structure_key))
        if old is not None and old.children:
            node.children = [prev.subtree(prev.by_id[c]) for c in old.children if c in prev.by_id]
            return
        parts = self._leiden(node.members, adj, prev.label_of[node.level + 1], prev.movable)
        if len(parts) < 2:
            return
        for members in parts:
            child = _Node(node.level + 1, members, _structure_key(members, adj), "")
            self._split(child, adj, prev)
            node.children.append(child)

    def _leiden(
        self,
        members: Sequence[str],
        adj: Mapping[str, Mapping[str, float]],
        previous_labels: Mapping[str, str],
        movable: set[str] | None = None,
    ) -> list[tuple[str, ...]]:
        """Leiden on the subgraph of ``members``; returns connected groups, ordered by their first member."""
        import igraph as ig
        import leidenalg

        index = {n: i for i, n in enumerate(members)}
        edges, weights = [], []
        for a in members:
            for b, w in sorted(adj[a].items()):
                if b in index and a < b:
                    edges.append((index[a], index[b]))
                    weights.append(w)
        initial = None
        if self.warm_start and previous_labels:
            labels: dict[str, int] = {}  # previous community -> label; nodes new to them start alone
            initial = [labels.setdefault(previous_labels.get(n, "\0" + n), len(labels)) for n in members]
        partition = leidenalg.RBConfigurationVertexPartition(
            ig.Graph(n=len(members), edges=edges),
            initial_membership=initial,
            weights=weights or None,
            resolution_parameter=self.resolution,
        )
        optimiser = leidenalg.Optimiser()
        optimiser.set_rng_seed(self.random_state)
        fixed = None
        if initial is not None and movable is not None:
            fixed = [n not in movable and n in previous_labels for n in members]
        optimiser.optimise_partition(partition, n_iterations=-1, is_membership_fixed=fixed)
        groups: dict[int, list[str]] = defaultdict(list)
        for node, label in zip(members, partition.membership):
            groups[label].append(node)
        parts = [part for group in groups.values() for part in _connected_parts(sorted(group), adj)]
        return sorted(parts, key=lambda g: g[0])

    def _assign_ids(self, roots: list[_Node], prev: _Previous, next_id: int) -> None:
        flat: list[_Node] = []

        def walk(node: _Node) -> None:
            flat.append(node)
            for child in node.children:
                walk(child)

        for root in sorted(roots, key=lambda n: n.members[0]):
            walk(root)
        ids: dict[int, str] = {id(n): n.reused_id for n in flat if n.reused_id}
        taken = set(ids.values())
        pairs = []
        for n in flat:
            if n.reused_id:
                continue
            members = set(n.members)
            for old in prev.all:
                if old.level != n.level or old.id in taken:
                    continue
                overlap = len(members & set(old.entity_ids))
                jaccard = overlap / len(members | set(old.entity_ids)) if overlap else 0.0
                if overlap and jaccard >= self.match_threshold:
                    pairs.append((-jaccard, n.level, n.members, old.id, n))
        matched = []
        for _, _, _, old_id, n in sorted(pairs, key=lambda p: p[:4]):
            if id(n) not in ids and old_id not in taken:
                ids[id(n)] = old_id
                taken.add(old_id)
                matched.append(old_id)
        for n in flat:
            if id(n) not in ids:
                ids[id(n)] = f"c{next_id}"
                next_id += 1

        parent_of = {id(child): ids[id(n)] for n in flat for child in n.children}
        self.communities_ = [
            Community(
                id=ids[id(n)],
                level=n.level,
                entity_ids=n.members,
                parent=parent_of.get(id(n)),
                children=tuple(ids[id(c)] for c in n.children),
                structure_key=n.structure_key,
                component_key=n.component_key,
            )
            for n in flat
        ]
        self.n_levels_ = 1 + max((c.level for c in self.communities_), default=-1)
        self.reused_ = sorted(n.reused_id for n in flat if n.reused_id)
        self.matched_ = sorted(matched)
        self.next_id_ = next_id
