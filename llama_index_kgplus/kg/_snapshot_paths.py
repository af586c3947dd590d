"""Shortest paths and neighbours over a :class:`GraphSnapshot`, with the store query's semantics.

Search from both ends: every entity of the question gets one BFS ball of radius ``ceil(max_hops / 2)``, shared by
all the pairs it is in; the balls grow together, one vectorised numpy pass per layer, and all pairs are scored in
one pass too, so Python loops only over the paths found. A pair's distance is the least
``d_a(v) + d_b(v)`` over the nodes of both balls; every shortest path of length ``L`` passes through exactly one
node ``v`` with ``d_a(v) = L // 2`` and ``d_b(v) = L - L // 2``, so the paths are the half-paths from ``a`` to each
such ``v`` joined with the reversed half-paths from ``b``, each half walked back through its own ball, one
relationship at a time (so parallel relationships are expanded).

What the store's :meth:`GraphDialect.shortest_paths` returns, this returns: all shortest paths of at most
``max_hops`` relationships per pair, direction ignored, from the pair's first id to its second, pairs of equal
ids skipped, at most ``limit`` paths (with the same logged warning when the limit is reached).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from llama_index_kgplus._redact import get_logger
from llama_index_kgplus.graph_stores._dialect_base import (
    RawPath,
    _check_hops,
    _check_limit,
    _unique_pairs,
)
from llama_index_kgplus.kg._snapshot import GraphSnapshot

logger = get_logger(__name__)

_FAR = 1000  # the distance of a node outside a ball

_Half = list[tuple[tuple[int, ...], tuple[int, ...]]]  # (nodes, relationships) from the ball's centre


class _Balls:
    """The BFS balls of ``radius`` around every centre, grown together one layer at a time. Ball ``row`` holds
    the ``(row, node)`` entries of the sorted flat keys ``row * n + node`` (so no array of the graph's size is
    made per question) with their depths."""

    def __init__(self, snapshot: GraphSnapshot, centres: np.ndarray, radius: int) -> None:
        indptr, nbr, n = snapshot.indptr, snapshot.nbr, snapshot.n_nodes
        self.snapshot, self.centres, self.n = snapshot, centres, n
        rows = np.arange(len(centres), dtype=np.int64)
        self.keys = rows * n + centres
        self.depths = np.zeros(len(centres), dtype=np.int64)
        frontier_rows, frontier = rows, centres
        for depth in range(1, radius + 1):
            starts, stops = indptr[frontier], indptr[frontier + 1]
            lengths = stops - starts
            # every frontier node's neighbour slice in one gather
            offsets = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(int(lengths.sum()))
            reached = np.unique(np.repeat(frontier_rows, lengths) * n + nbr[offsets])
            reached = reached[self._find(reached) < 0]
            if not len(reached):
                break
            order = np.argsort(np.concatenate([self.keys, reached]), kind="stable")
            self.keys = np.concatenate([self.keys, reached])[order]
            self.depths = np.concatenate([self.depths, np.full(len(reached), depth)])[order]
            frontier_rows, frontier = reached // n, reached % n
        self.bounds = np.searchsorted(self.keys, np.arange(len(centres) + 1, dtype=np.int64) * n)
        self._halves: dict[int, _Half] = {int(k): [((int(c),), ())] for k, c in zip(rows * n + centres, centres)}

    def _find(self, keys: np.ndarray) -> np.ndarray:
        pos = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        return np.where(self.keys[pos] == keys, pos, -1)

    def dist(self, rows: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """The depth of each node in the ball of its row (``_FAR`` outside)."""
        pos = self._find(rows * self.n + nodes)
        return np.where(pos >= 0, self.depths[pos], _FAR)

    def halves(self, row: int, node: int) -> _Half:
        """Every shortest walk from the centre of ball ``row`` to ``node`` (in it), one per relationship choice."""
        key = row * self.n + node
        known = self._halves.get(key)
        if known is not None:
            return known
        snap = self.snapshot
        depth = int(self.depths[int(np.searchsorted(self.keys, key))])  # node is in the ball
        lo, hi = int(snap.indptr[node]), int(snap.indptr[node + 1])
        neighbours = snap.nbr[lo:hi]
        if depth == 1:  # neighbours are sorted: the relationships to the centre are one run
            centre = int(self.centres[row])
            i, j = np.searchsorted(neighbours, [centre, centre + 1])
            steps = [(centre, e) for e in snap.eidx[lo + i : lo + j].tolist()]
        else:
            back = np.flatnonzero(self.dist(np.full(hi - lo, row), neighbours) == depth - 1)
            steps = list(zip(neighbours[back].tolist(), snap.eidx[lo + back].tolist()))
        out: _Half = []
        for prev, edge in steps:
            out += [(nodes + (node,), edges + (edge,)) for nodes, edges in self.halves(row, prev)]
        self._halves[key] = out
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
    ends = snapshot.index_of([x for pair in pairs for x in pair]).reshape(-1, 2)
    ends = ends[(ends >= 0).all(axis=1)]
    if not len(ends):
        return []
    centres, rows = np.unique(ends, return_inverse=True)
    rows = rows.reshape(-1, 2)
    balls = _Balls(snapshot, centres, (max_hops + 1) // 2)
    # per pair, walk the smaller ball and look its nodes up in the other
    row_a, row_b = rows[:, 0], rows[:, 1]
    size = np.diff(balls.bounds)
    small = np.where(size[row_a] <= size[row_b], row_a, row_b)
    other = np.where(small == row_a, row_b, row_a)
    lengths = size[small]
    first = np.cumsum(lengths) - lengths
    pair = np.repeat(np.arange(len(rows)), lengths)
    entry = np.repeat(balls.bounds[small] - first, lengths) + np.arange(int(lengths.sum()))
    node = balls.keys[entry] % balls.n
    near, far = balls.depths[entry], balls.dist(other[pair], node)
    total = near + far
    best = np.minimum.reduceat(total, first)[pair]
    from_a = np.where(small[pair] == row_a[pair], near, far)
    meet = np.flatnonzero((total == best) & (best <= max_hops) & (from_a == best // 2))
    out: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    for p, v in zip(pair[meet].tolist(), node[meet].tolist()):
        a, b = int(row_a[p]), int(row_b[p])
        for left_nodes, left_edges in balls.halves(a, v):
            for right_nodes, right_edges in balls.halves(b, v):
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
