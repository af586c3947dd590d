"""``GraphSnapshot``: a knowledge graph as compact numpy arrays, for path search in process.

Nodes are sorted by id (``ids``, looked up with ``searchsorted``), with their ``names``. Every relationship
``e`` keeps its start ``src[e]``, end ``dst[e]``, type ``types[etype[e]]``, engine ``keys[e]`` (what the store's
paths carry in ``rel_keys``) and, per relationship property of the layout, a code into that property's value
table. The undirected adjacency is CSR: the neighbours of node ``i`` are ``nbr[indptr[i]:indptr[i + 1]]``
through relationships ``eidx[...]`` (sorted by neighbour, so parallel relationships sit together).

It is saved as one ``.npz`` (arrays and one JSON member; no pickle) in the graph's ``cache_dir`` and keyed by a
staleness token: the import id, the layout, and the node and relationship counts of the store at build time.
Memory: about 55 bytes per relationship with the ids and names (10^6 relationships, 10^5 nodes: 58 MB in memory
and on disk); building it peaks at about 0.7 KB per relationship while the store's rows are read.

Example:

```python
snapshot = GraphSnapshot.build(kg)
snapshot.save(kg.cache_dir / "paths.npz")
snapshot = GraphSnapshot.load(kg.cache_dir / "paths.npz")
```
"""

from __future__ import annotations

import json
import time
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from llama_index_kgplus._files import atomic_open
from llama_index_kgplus._redact import get_logger
from llama_index_kgplus.errors import InputDataError

if TYPE_CHECKING:
    from llama_index_kgplus.kg._graph import KnowledgeGraph

logger = get_logger(__name__)

FORMAT = "kgplus-path-snapshot"
FORMAT_VERSION = 1
_ARRAYS = ("ids", "names", "has_name", "indptr", "nbr", "eidx", "src", "dst", "etype", "keys")


def staleness_token(kg: KnowledgeGraph, counts: tuple[int, int]) -> dict[str, Any]:
    """What a snapshot must match to be used: the import, the layout and the store's current counts."""
    layout = kg.layout
    return {
        "import_id": kg.manifest.import_id,
        "layout": [
            layout.node_label,
            layout.id_property,
            layout.name_property,
            list(layout.rel_types),
            list(layout.rel_properties),
            layout.rel_table,
            layout.type_column,
        ],
        "nodes": int(counts[0]),
        "relationships": int(counts[1]),
    }


class GraphSnapshot:
    """The graph's nodes, typed relationships and undirected CSR adjacency as numpy arrays (see the module)."""

    def __init__(
        self,
        arrays: dict[str, np.ndarray],
        types: list[str],
        properties: dict[str, list[Any]],
        prop_codes: dict[str, np.ndarray],
        token: dict[str, Any],
    ) -> None:
        self.ids: np.ndarray = arrays["ids"]
        self.names: np.ndarray = arrays["names"]
        self.has_name: np.ndarray = arrays["has_name"]
        self.indptr: np.ndarray = arrays["indptr"]
        self.nbr: np.ndarray = arrays["nbr"]
        self.eidx: np.ndarray = arrays["eidx"]
        self.src: np.ndarray = arrays["src"]
        self.dst: np.ndarray = arrays["dst"]
        self.etype: np.ndarray = arrays["etype"]
        self.keys: np.ndarray = arrays["keys"]
        self.types = types
        #: relationship property -> its value table; ``prop_codes[name][e]`` indexes it
        self.properties = properties
        self.prop_codes = prop_codes
        self.token = token
        self._id_list: list[str] | None = None
        self._name_list: list[str | None] | None = None

    @property
    def n_nodes(self) -> int:
        return len(self.ids)

    @property
    def n_relationships(self) -> int:
        return len(self.src)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (*self._arrays().values(), *self.prop_codes.values()))

    def _arrays(self) -> dict[str, np.ndarray]:
        return {name: getattr(self, name) for name in _ARRAYS}

    # ------------------------------------------------------------------ lookups used by the search

    def index_of(self, ids: Sequence[str]) -> np.ndarray:
        """Node indices of ``ids`` (-1 where the graph has no such node)."""
        return _positions(self.ids, ids)

    @property
    def id_list(self) -> list[str]:
        if self._id_list is None:
            self._id_list = self.ids.tolist()
        return self._id_list

    @property
    def name_list(self) -> list[str | None]:
        if self._name_list is None:
            self._name_list = [n if has else None for n, has in zip(self.names.tolist(), self.has_name.tolist())]
        return self._name_list

    def adjacency(self) -> Any:
        """The undirected adjacency as a ``scipy.sparse.csr_matrix`` (weight = number of relationships between two
        nodes; a self-loop counts once), made from the CSR arrays: e.g. for personalized PageRank over the graph."""
        import scipy.sparse as sp

        n = self.n_nodes
        matrix = sp.csr_matrix((np.ones(len(self.nbr)), self.nbr, self.indptr), shape=(n, n))
        matrix.sum_duplicates()
        return matrix

    # ------------------------------------------------------------------ building

    @classmethod
    def build(cls, kg: KnowledgeGraph, counts: tuple[int, int] | None = None) -> GraphSnapshot:
        """Read the graph from ``kg``'s store (one query for the nodes, one for the relationships)."""
        layout, dialect, store = kg.layout, kg.dialect, kg.store
        if counts is None:
            counts = dialect.count_graph(store, layout)
        token = staleness_token(kg, counts)
        nodes = dialect.read_node_columns(store, layout)
        rels = dialect.read_relationship_columns(store, layout)
        return cls.from_columns(nodes, rels, list(layout.rel_properties), token)

    @classmethod
    def from_columns(
        cls,
        nodes: Mapping[str, Sequence[Any]],
        rels: Mapping[str, Sequence[Any]],
        rel_properties: list[str],
        token: dict[str, Any],
    ) -> GraphSnapshot:
        """From the columns of :meth:`GraphDialect.read_node_columns` and ``read_relationship_columns``."""
        raw_ids = np.asarray([str(x) for x in nodes["id"]], dtype=str)
        ids, first = np.unique(raw_ids, return_index=True)
        if len(ids) < len(raw_ids):
            logger.warning(
                "%d nodes share an id with another node; paths use one node per id.", len(raw_ids) - len(ids)
            )
        raw_names = [nodes["name"][i] for i in first.tolist()]
        has_name = np.asarray([n is not None for n in raw_names], dtype=bool)
        names = np.asarray([str(n) if n is not None else "" for n in raw_names], dtype=str)
        n = len(ids)

        src = _positions(ids, rels["s"])
        dst = _positions(ids, rels["t"])
        known = (src >= 0) & (dst >= 0)
        if not known.all():
            logger.warning("%d relationships end at a node the node query did not return; left out.", (~known).sum())
        type_names, etype = np.unique(np.asarray([str(t) for t in rels["type"]], dtype=str), return_inverse=True)
        keys = np.asarray([str(k).encode("utf-8") for k in rels["key"]], dtype=bytes)
        sel = np.flatnonzero(known)
        src, dst, etype, keys = (
            src[sel].astype(np.int32),
            dst[sel].astype(np.int32),
            etype[sel].astype(np.int32),
            keys[sel],
        )
        properties, prop_codes = {}, {}
        for i, name in enumerate(rel_properties):
            values, codes = _dictionary_encode(rels[f"prop_{i}"])
            properties[name], prop_codes[name] = values, codes[sel]

        m = len(src)
        # undirected adjacency: each relationship from both ends (a self-loop once)
        loop = src == dst
        ends = np.concatenate([src, dst[~loop]])
        others = np.concatenate([dst, src[~loop]])
        edge = np.concatenate([np.arange(m, dtype=np.int32), np.flatnonzero(~loop).astype(np.int32)])
        order = np.lexsort((edge, others, ends))
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(ends, minlength=n), out=indptr[1:])
        arrays = {
            "ids": ids,
            "names": names,
            "has_name": has_name,
            "indptr": indptr,
            "nbr": others[order].astype(np.int32),
            "eidx": edge[order].astype(np.int32),
            "src": src,
            "dst": dst,
            "etype": etype,
            "keys": keys,
        }
        return cls(arrays, type_names.tolist(), properties, prop_codes, token)

    # ------------------------------------------------------------------ the file

    def save(self, path: str | Path) -> Path:
        """Write the ``.npz`` atomically (a reader never sees half a file)."""
        header = {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "token": self.token,
            "types": self.types,
            "properties": list(self.properties),
            "values": [self.properties[name] for name in self.properties],
        }
        members: dict[str, Any] = {f"prop_{i}": self.prop_codes[name] for i, name in enumerate(self.properties)}
        members.update(self._arrays())
        members["header"] = np.frombuffer(json.dumps(header, ensure_ascii=False).encode("utf-8"), dtype=np.uint8)
        path = Path(path)
        with atomic_open(path) as handle:
            np.savez(handle, **members)
        return path

    @classmethod
    def load(cls, path: str | Path) -> GraphSnapshot:
        """Read a snapshot written by :meth:`save`; :class:`InputDataError` when it is unreadable or foreign."""
        try:
            with np.load(path, allow_pickle=False) as data:
                header = json.loads(bytes(data["header"]).decode("utf-8"))
                if not isinstance(header, dict) or header.get("format") != FORMAT:
                    raise InputDataError(f"{path} is not a path snapshot written by this pack.")
                if header.get("version") != FORMAT_VERSION:
                    raise InputDataError(f"{path} is a path snapshot of format {header.get('version')!r}.")
                arrays = {name: data[name] for name in _ARRAYS}
                names = list(header["properties"])
                codes = {name: data[f"prop_{i}"] for i, name in enumerate(names)}
            values = dict(zip(names, header["values"], strict=True))
            snapshot = cls(arrays, list(header["types"]), values, codes, dict(header["token"]))
            snapshot._check()
        except InputDataError:
            raise
        except (
            OSError,
            ValueError,
            KeyError,
            TypeError,
            IndexError,
            EOFError,
            UnicodeDecodeError,
            zipfile.BadZipFile,
        ) as exc:
            raise InputDataError(f"{path} is not a readable path snapshot ({type(exc).__name__}: {exc}).") from exc
        return snapshot

    def _check(self) -> None:
        """Shapes and index ranges, so a damaged file fails here and not inside a search."""
        n, m = self.n_nodes, self.n_relationships
        ok = (
            len(self.names) == len(self.has_name) == n
            and len(self.indptr) == n + 1
            and int(self.indptr[0]) == 0
            and bool(np.all(np.diff(self.indptr) >= 0))
            and bool(np.all(self.ids[1:] > self.ids[:-1]))  # sorted and unique: looked up by searchsorted
            and len(self.nbr) == len(self.eidx) == int(self.indptr[-1])
            and len(self.dst) == len(self.etype) == len(self.keys) == m
            and all(len(c) == m for c in self.prop_codes.values())
            and all(len(a) == 0 or int(a.min()) >= 0 for a in (self.src, self.dst, self.etype, self.nbr, self.eidx))
            and all(len(c) == 0 or int(c.min()) >= 0 for c in self.prop_codes.values())
            and (
                m == 0
                or (int(self.src.max()) < n and int(self.dst.max()) < n and int(self.etype.max()) < len(self.types))
            )
            and (len(self.nbr) == 0 or (int(self.nbr.max()) < n and int(self.eidx.max()) < m))
            and all(len(c) == 0 or int(c.max()) < len(self.properties[k]) for k, c in self.prop_codes.items())
        )
        if not ok:
            raise InputDataError("The path snapshot's arrays do not fit together (a damaged file).")


def _positions(sorted_ids: np.ndarray, values: Sequence[Any]) -> np.ndarray:
    """The index of each value in ``sorted_ids``, -1 where it is missing."""
    wanted = np.asarray([str(v) for v in values], dtype=str)
    if not len(sorted_ids) or not len(wanted):
        return np.full(len(wanted), -1, dtype=np.int64)
    pos = np.minimum(np.searchsorted(sorted_ids, wanted), len(sorted_ids) - 1)
    return np.where(sorted_ids[pos] == wanted, pos, -1)


def _dictionary_encode(column: Sequence[Any]) -> tuple[list[Any], np.ndarray]:
    """A property column as its distinct values (JSON-able, in first-seen order) and an int32 code per row."""
    index: dict[Any, int] = {}
    values: list[Any] = []
    codes = np.empty(len(column), dtype=np.int32)
    for j, value in enumerate(column):
        # keyed by type too: 1, 1.0 and True are equal dictionary keys but different property values
        key = (type(value), json.dumps(value, sort_keys=True) if isinstance(value, (list, dict)) else value)
        code = index.get(key)
        if code is None:
            code = index[key] = len(values)
            values.append(value)
        codes[j] = code
    return values, codes
