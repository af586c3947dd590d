"""Shortest paths and neighbours over a :class:`GraphSnapshot`, with the store query's semantics.

Search from both ends: every entity of the question gets one BFS ball of radius ``ceil(max_hops / 2)``
(vectorised over each layer's frontier), shared by all the pairs it is in. A pair's distance is the least
``d_a(v) + d_b(v)`` over the nodes of both balls; every shortest path of length ``L`` passes through exactly one
node ``v`` with ``d_a(v) = L // 2`` and ``d_b(v) = L - L // 2``, so the paths are the half-paths from ``a`` to each
such ``v`` joined with the reversed half-paths from ``b``, each half walked back through its own ball, one
relationship at a time (so parallel relationships are expanded).

What the store's :meth:`GraphDialect.shortest_paths` returns, this returns: all shortest paths of at most
``max_hops`` relationships per pair, direction ignored, from the pair's first id to its second, pairs of equal
ids skipped, at most ``limit`` paths (with the same logged warning when the limit is reached).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from llama_index_kgplus.graph_stores._dialect_base import (
    RawPath,
    _check_hops,
    _check_limit,
    _unique_pairs,
)
from llama_index_kgplus.kg._snapshot import GraphSnapshot

logger = logging.getLogger(__name__)

_FAR = np.int16(1000)  # the distance of a node outside a ball

_Half = list[tuple[tuple[int, ...], tuple[int, ...]]]  # (nodes, relationships) from the ball's centre


class _Ball:
    """The nodes within ``radius`` of ``centre``: ``dist`` over all nodes, ``nodes``/``depth`` of those inside."""

    def __init__(self, snapshot: GraphSnapshot, centre: int, radius: int) -> None:
        indptr, nbr = snapshot.indptr, snapshot.nbr
        dist = np.full(snapshot.n_nodes, _FAR, dtype=np.int16)
        dist[centre] = 0
        layers = [np.array([centre], dtype=np.int64)]
        frontier = layers[0]
        for depth in range(1, radius + 1):
            starts, stops = indptr[frontier], indptr[frontier + 1]
            if len(frontier) == 1:
                reached = nbr[starts[0] : stops[0]]
            else:  # every frontier node's neighbour slice in one gather
                lengths = stops - starts
                offsets = np.repeat(starts - np.cumsum(lengths) + lengths, lengths)
                reached = nbr[offsets + np.arange(int(lengths.sum()))]
            reached = np.unique(reached)
            frontier = reached[dist[reached] == _FAR]
            if not len(frontier):
                break
            dist[frontier] = depth
            layers.append(frontier.astype(np.int64))
        self.snapshot = snapshot
        self.centre = centre
        self.dist = dist
        self.nodes = np.concatenate(layers)
        self.depth = dist[self.nodes]
        self._halves: dict[int, _Half] = {centre: [((centre,), ())]}

    def halves(self, node: int) -> _Half:
        """Every shortest walk from the centre to ``node`` (inside the ball), one per choice of relationships."""
        known = self._halves.get(node)
        if known is not None:
            return known
        snap = self.snapshot
        depth = int(self.dist[node])
        lo, hi = int(snap.indptr[node]), int(snap.indptr[node + 1])
        neighbours = snap.nbr[lo:hi]
        if depth == 1:  # neighbours are sorted: the relationships to the centre are one run
            a, b = np.searchsorted(neighbours, [self.centre, self.centre + 1])
            steps = [(self.centre, e) for e in snap.eidx[lo + a : lo + b].tolist()]
        else:
            back = np.flatnonzero(self.dist[neighbours] == depth - 1)
            steps = list(zip(neighbours[back].tolist(), snap.eidx[lo + back].tolist()))
        out: _Half = []
        for prev, edge in steps:
            out += [(nodes + (node,), edges + (edge,)) for nodes, edges in self.halves(prev)]
        self._halves[node] = out
        return out


def snapshot_shortest_paths(
    snapshot: GraphSnapshot,
    pairs: Sequence[tuple[str, str]],
    max_hops: int = 2,
    limit: int = 10_000,
) -> list[RawPath]:
    """All shortest paths of at most ``max_hops`` relationships between each pair (see the module)."""
    max_hops, limit = _check_hops(max_hops), _check_limit(limit)
    pairs = _unique_pairs(pairs)
    if not pairs:
        return []
    ids = sorted({x for pair in pairs for x in pair})
    where = dict(zip(ids, snapshot.index_of(ids).tolist()))
    radius = (max_hops + 1) // 2
    balls: dict[int, _Ball] = {}
    out: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    for a_id, b_id in pairs:
        a, b = where[a_id], where[b_id]
        if a < 0 or b < 0:
            continue
        ball_a = balls.get(a) or balls.setdefault(a, _Ball(snapshot, a, radius))
        ball_b = balls.get(b) or balls.setdefault(b, _Ball(snapshot, b, radius))
        small, other = (ball_a, ball_b) if len(ball_a.nodes) <= len(ball_b.nodes) else (ball_b, ball_a)
        total = small.depth + other.dist[small.nodes]
        length = int(total.min())
        if length > max_hops:
            continue
        middle = length // 2  # the depth of the meeting node seen from a
        meet = small.nodes[(total == length) & (ball_a.dist[small.nodes] == middle)]
        for v in meet.tolist():
            for left_nodes, left_edges in ball_a.halves(v):
                for right_nodes, right_edges in ball_b.halves(v):
                    out.append((left_nodes + right_nodes[-2::-1], left_edges + right_edges[::-1]))
                    if len(out) >= limit:
                        _limit_reached(limit)
                        return _raw_paths(snapshot, out)
    return _raw_paths(snapshot, out)


def snapshot_neighbours(snapshot: GraphSnapshot, ids: Sequence[str], limit: int = 10_000) -> list[RawPath]:
    """The direct relationships of the given nodes as one-hop paths starting at them (as the store's)."""
    limit = _check_limit(limit)
    wanted = list(dict.fromkeys(str(x) for x in ids))
    out: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    for node in snapshot.index_of(wanted).tolist():
        if node < 0:
            continue
        lo, hi = int(snapshot.indptr[node]), int(snapshot.indptr[node + 1])
        for other, edge in zip(snapshot.nbr[lo:hi].tolist(), snapshot.eidx[lo:hi].tolist()):
            out.append(((node, other), (edge,)))
            if len(out) >= limit:
                _limit_reached(limit)
                return _raw_paths(snapshot, out)
    return _raw_paths(snapshot, out)


def _raw_paths(snapshot: GraphSnapshot, walks: list[tuple[tuple[int, ...], tuple[int, ...]]]) -> list[RawPath]:
    """The walks as RawPaths; every relationship column is gathered once for all of them."""
    if not walks:
        return []
    ids, names, types = snapshot.id_list, snapshot.name_list, snapshot.types
    edges = np.fromiter((e for _, es in walks for e in es), dtype=np.int64)
    src, etype = snapshot.src[edges].tolist(), snapshot.etype[edges].tolist()
    keys = [k.decode("utf-8") for k in snapshot.keys[edges].tolist()]
    columns = [
        (name, [values[c] for c in snapshot.prop_codes[name][edges].tolist()])
        for name, values in snapshot.properties.items()
    ]
    out, j = [], 0
    for nodes, walk in walks:
        k = j + len(walk)
        out.append(
            RawPath(
                node_ids=tuple(ids[n] for n in nodes),
                node_names=tuple(names[n] for n in nodes),
                rel_types=tuple(types[t] for t in etype[j:k]),
                rel_forward=tuple(s == n for s, n in zip(src[j:k], nodes)),
                rel_keys=tuple(keys[j:k]),
                rel_properties=tuple({name: column[i] for name, column in columns} for i in range(j, k)),
            )
        )
        j = k
    return out


def _limit_reached(limit: int) -> None:
    logger.warning("A path query returned its row limit (%d): the paths may be incomplete; raise max_rows.", limit)
