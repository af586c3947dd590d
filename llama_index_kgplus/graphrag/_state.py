"""The bookkeeping of a GraphRAG store, in one SQLite file (``state.sqlite``, WAL, one transaction per step).

Tables: ``documents`` (content hash, as LlamaIndex's ingestion docstore compares ``Document.hash``),
``chunks`` (text and text hash), ``extractions`` (the LLM's result per chunk text and extractor setting:
a content-addressed cache, so unchanged text is never sent twice), ``entities`` / ``relationships`` (the merged
graph as last written to the graph store, with provenance), ``communities``, ``reports`` (keyed by the
community fingerprint), ``runs`` (status, figures and LLM usage of each command) and ``meta``.

Every LLM result is committed as soon as it arrives, so a run that crashes resumes where it stopped; nothing
here is written twice under two keys, so a resumed run cannot duplicate entities or reports.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llama_index_kgplus.errors import InputDataError
from llama_index_kgplus.graphrag._communities import Community
from llama_index_kgplus.graphrag._merge import Entity, Relationship

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY, title TEXT NOT NULL, hash TEXT NOT NULL, chunker TEXT NOT NULL, n_chunks INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
    chunk_id TEXT PRIMARY KEY, doc_id TEXT NOT NULL, position INTEGER NOT NULL, text TEXT NOT NULL,
    text_hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks (doc_id);
CREATE TABLE IF NOT EXISTS extractions (
    text_hash TEXT NOT NULL, config TEXT NOT NULL, status TEXT NOT NULL, result TEXT, error TEXT,
    updated REAL NOT NULL, PRIMARY KEY (text_hash, config)
);
CREATE TABLE IF NOT EXISTS entities (id TEXT PRIMARY KEY, hash TEXT NOT NULL, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS relationships (id TEXT PRIMARY KEY, hash TEXT NOT NULL, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS communities (
    id TEXT PRIMARY KEY, level INTEGER NOT NULL, parent TEXT, children TEXT NOT NULL, entity_ids TEXT NOT NULL,
    structure_key TEXT NOT NULL, component_key TEXT NOT NULL, fingerprint TEXT
);
CREATE TABLE IF NOT EXISTS reports (
    fingerprint TEXT PRIMARY KEY, community_id TEXT NOT NULL, status TEXT NOT NULL, report TEXT, error TEXT,
    context TEXT NOT NULL, run_id INTEGER NOT NULL, updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    run_id INTEGER PRIMARY KEY AUTOINCREMENT, command TEXT NOT NULL, started REAL NOT NULL, finished REAL,
    status TEXT NOT NULL, stats TEXT
);
"""


@dataclass(frozen=True)
class DocumentRecord:
    doc_id: str
    title: str
    hash: str
    chunker: str
    n_chunks: int


@dataclass(frozen=True)
class ChunkRecord:
    chunk_id: str
    doc_id: str
    position: int
    text: str
    text_hash: str


@dataclass(frozen=True)
class ReportRecord:
    """A stored report (or the recorded failure to write one) of the community with this fingerprint."""

    fingerprint: str
    community_id: str
    status: str
    report: dict[str, Any] | None
    error: str | None
    context: dict[str, Any]
    run_id: int


def _entity(data: str) -> Entity:
    d = json.loads(data)
    return Entity(**{**d, "chunk_ids": tuple(d["chunk_ids"]), "doc_ids": tuple(d["doc_ids"])})


def _relationship(data: str) -> Relationship:
    d = json.loads(data)
    return Relationship(**{**d, "chunk_ids": tuple(d["chunk_ids"]), "doc_ids": tuple(d["doc_ids"])})


def _dump(obj: Entity | Relationship) -> str:
    from dataclasses import asdict

    return json.dumps(asdict(obj), ensure_ascii=False, sort_keys=True)


def _columns(db: sqlite3.Connection) -> dict[str, list[str]]:
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()]
    return {t: [r[1] for r in db.execute(f'PRAGMA table_info("{t}")').fetchall()] for t in tables}


def _expected_columns() -> dict[str, list[str]]:
    with sqlite3.connect(":memory:") as db:
        db.executescript(_SCHEMA)
        return {t: c for t, c in _columns(db).items() if not t.startswith("sqlite_")}


def _about_the_file(exc: sqlite3.DatabaseError) -> bool:
    """SQLite's "file is not a database" and "database disk image is malformed" (its subclasses are about a
    moment or a statement: locked, disk full, a constraint)."""
    return type(exc) is sqlite3.DatabaseError


def _damaged(path: Path, what: str) -> InputDataError:
    return InputDataError(
        f"{path} is not a readable GraphRAG state file ({what}): restore it, or move it away and build the store "
        f"again (`kgplus graphrag index DOCS --store {path.parent}`)."
    )


def _check_tables(path: Path, found: dict[str, list[str]], *, empty_ok: bool = True) -> None:
    if not found and not empty_ok:
        raise _damaged(path, "it holds no tables")
    if found and "meta" not in found:
        raise _damaged(path, f"it holds other tables: {', '.join(sorted(found))}")
    for table, columns in _expected_columns().items():
        if table in found and found[table] != columns:
            raise _damaged(path, f"its table {table} has columns {found[table]}, not {columns}")


def check_state_file(path: Path) -> None:
    """An :class:`InputDataError` naming ``path`` unless it is a GraphRAG state file: opened read-only, nothing
    written (so a command can check its store before any model loads)."""
    db = sqlite3.connect(path.absolute().as_uri() + "?mode=ro", uri=True)  # opens lazily: cannot fail here
    try:
        found = _columns(db)
    except sqlite3.DatabaseError as exc:
        if _about_the_file(exc):
            raise _damaged(path, str(exc)) from exc
        return  # locked, I/O: about now, not the file; the open that follows says
    finally:
        db.close()
    _check_tables(path, found, empty_ok=False)


class GraphRAGState:
    """The SQLite state file of a GraphRAG store (see the module docstring); thread-safe. A file that is not one
    (not SQLite, damaged, other tables) is an :class:`InputDataError` that names it."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None, timeout=30)
        try:
            with self._damage():
                self._check_tables()
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                with self._lock:
                    self._db.executescript(_SCHEMA)
                version = self.get_meta("schema_version")
                if version is None:
                    self.set_meta("schema_version", SCHEMA_VERSION)
        except BaseException:
            self._db.close()
            raise

    def _check_tables(self) -> None:
        """The tables already in the file are a GraphRAG state's (checked before anything is written to it; a
        state of an older release may lack a table, which is then made)."""
        _check_tables(self.path, _columns(self._db))

    def _damaged(self, what: str) -> InputDataError:
        return _damaged(self.path, what)

    @contextmanager
    def _damage(self) -> Iterator[None]:
        """SQLite's "not a database" and "malformed" errors (the file, not the moment) as one naming the file."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            if not _about_the_file(exc):  # locked, disk full, I/O, a constraint: about now, not the file
                raise
            raise self._damaged(str(exc)) from exc

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT`` (or ``ROLLBACK`` on error) under the state's lock."""
        with self._lock, self._damage():
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        with self._lock, self._damage():
            return self._db.execute(sql, params).fetchall()

    # ------------------------------------------------------------------ meta

    def get_meta(self, key: str, default: Any = None) -> Any:
        rows = self._rows("SELECT value FROM meta WHERE key = ?", (key,))
        try:
            return json.loads(rows[0][0]) if rows else default
        except (TypeError, ValueError, RecursionError) as exc:
            raise self._damaged(f"its {key!r} setting is not JSON") from exc

    def set_meta(self, key: str, value: Any) -> None:
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, json.dumps(value)))

    # ------------------------------------------------------------------ documents and chunks

    def documents(self) -> dict[str, DocumentRecord]:
        return {
            r[0]: DocumentRecord(*r) for r in self._rows("SELECT doc_id, title, hash, chunker, n_chunks FROM documents")
        }

    def replace_document(self, doc: DocumentRecord, chunks: Sequence[ChunkRecord]) -> None:
        """Store a new or changed document and its chunks, in one transaction."""
        with self._tx() as db:
            db.execute("DELETE FROM chunks WHERE doc_id = ?", (doc.doc_id,))
            db.execute(
                "INSERT OR REPLACE INTO documents (doc_id, title, hash, chunker, n_chunks) VALUES (?, ?, ?, ?, ?)",
                (doc.doc_id, doc.title, doc.hash, doc.chunker, doc.n_chunks),
            )
            db.executemany(
                "INSERT INTO chunks (chunk_id, doc_id, position, text, text_hash) VALUES (?, ?, ?, ?, ?)",
                [(c.chunk_id, c.doc_id, c.position, c.text, c.text_hash) for c in chunks],
            )

    def delete_document(self, doc_id: str) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM chunks WHERE doc_id = ?", (doc_id,))
            db.execute("DELETE FROM documents WHERE doc_id = ?", (doc_id,))

    def chunks(self, chunk_ids: Iterable[str] | None = None) -> list[ChunkRecord]:
        sql = "SELECT chunk_id, doc_id, position, text, text_hash FROM chunks"
        if chunk_ids is None:
            return [ChunkRecord(*r) for r in self._rows(sql + " ORDER BY doc_id, position")]
        ids = sorted(set(chunk_ids))
        out = []
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            out += self._rows(f"{sql} WHERE chunk_id IN ({','.join('?' * len(part))})", part)
        return [ChunkRecord(*r) for r in sorted(out, key=lambda r: (r[1], r[2]))]

    def count(self, table: str) -> int:
        assert table in {"documents", "chunks", "entities", "relationships", "communities", "reports"}
        return self._rows(f"SELECT count(*) FROM {table}")[0][0]

    # ------------------------------------------------------------------ extractions

    def pending_chunks(self, config: str) -> list[ChunkRecord]:
        """Chunks whose text has no successful extraction under ``config`` (new, changed, failed before)."""
        rows = self._rows(
            "SELECT c.chunk_id, c.doc_id, c.position, c.text, c.text_hash FROM chunks c "
            "LEFT JOIN extractions e ON e.text_hash = c.text_hash AND e.config = ? AND e.status = 'ok' "
            "WHERE e.text_hash IS NULL ORDER BY c.doc_id, c.position",
            (config,),
        )
        seen, out = set(), []
        for r in rows:  # one extraction per distinct text
            if r[4] not in seen:
                seen.add(r[4])
                out.append(ChunkRecord(*r))
        return out

    def save_extraction(self, text_hash: str, config: str, result: dict | None, error: str | None) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO extractions (text_hash, config, status, result, error, updated) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (
                    text_hash,
                    config,
                    "ok" if error is None else "failed",
                    None if result is None else json.dumps(result, ensure_ascii=False),
                    error,
                    time.time(),
                ),
            )

    def _extraction_rows(self, config: str, status: str) -> list[tuple]:
        return self._rows(
            "SELECT c.chunk_id, c.doc_id, c.position, c.text, c.text_hash, e.result, e.error FROM chunks c "
            "JOIN extractions e ON e.text_hash = c.text_hash AND e.config = ? AND e.status = ? "
            "ORDER BY c.doc_id, c.position",
            (config, status),
        )

    def extractions(self, config: str) -> list[tuple[ChunkRecord, dict]]:
        """Every current chunk with its successful extraction result."""
        return [(ChunkRecord(*r[:5]), json.loads(r[5])) for r in self._extraction_rows(config, "ok")]

    def failed_extractions(self, config: str) -> list[tuple[ChunkRecord, str]]:
        """Every current chunk whose last extraction failed, with the error."""
        return [(ChunkRecord(*r[:5]), r[6]) for r in self._extraction_rows(config, "failed")]

    def prune_extractions(self) -> int:
        """Drop cached extractions of text no chunk has any more."""
        with self._tx() as db:
            return db.execute("DELETE FROM extractions WHERE text_hash NOT IN (SELECT text_hash FROM chunks)").rowcount

    # ------------------------------------------------------------------ merged graph

    def graph_hashes(self) -> tuple[dict[str, str], dict[str, str]]:
        return (
            dict(self._rows("SELECT id, hash FROM entities")),
            dict(self._rows("SELECT id, hash FROM relationships")),
        )

    def replace_graph(self, entities: Iterable[Entity], relationships: Iterable[Relationship]) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM entities")
            db.execute("DELETE FROM relationships")
            db.executemany(
                "INSERT INTO entities (id, hash, data) VALUES (?, ?, ?)",
                [(e.id, e.content_hash(), _dump(e)) for e in entities],
            )
            db.executemany(
                "INSERT INTO relationships (id, hash, data) VALUES (?, ?, ?)",
                [(r.id, r.content_hash(), _dump(r)) for r in relationships],
            )

    def entities(self) -> dict[str, Entity]:
        return {r[0]: _entity(r[1]) for r in self._rows("SELECT id, data FROM entities ORDER BY id")}

    def relationships(self) -> dict[str, Relationship]:
        return {r[0]: _relationship(r[1]) for r in self._rows("SELECT id, data FROM relationships ORDER BY id")}

    # ------------------------------------------------------------------ communities and reports

    def communities(self) -> list[tuple[Community, str | None]]:
        rows = self._rows(
            "SELECT id, level, parent, children, entity_ids, structure_key, component_key, fingerprint "
            "FROM communities ORDER BY level, id"
        )
        return [
            (
                Community(
                    id=r[0],
                    level=r[1],
                    parent=r[2],
                    children=tuple(json.loads(r[3])),
                    entity_ids=tuple(json.loads(r[4])),
                    structure_key=r[5],
                    component_key=r[6],
                ),
                r[7],
            )
            for r in rows
        ]

    def replace_communities(
        self,
        communities: Sequence[tuple[Community, str | None]],
        next_id: int,
        edges: Mapping[tuple[str, str], float] | None = None,
    ) -> None:
        """Store the communities (with their report fingerprints), the id counter and the weighted edges they
        were computed on (the next update compares against them), in one transaction."""
        with self._tx() as db:
            db.execute("DELETE FROM communities")
            db.executemany(
                "INSERT INTO communities (id, level, parent, children, entity_ids, structure_key, component_key, "
                "fingerprint) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        c.id,
                        c.level,
                        c.parent,
                        json.dumps(c.children),
                        json.dumps(c.entity_ids, ensure_ascii=False),
                        c.structure_key,
                        c.component_key,
                        fp,
                    )
                    for c, fp in communities
                ],
            )
            db.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('next_community_id', ?)", (json.dumps(next_id),)
            )
            if edges is not None:
                db.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('community_edges', ?)",
                    (json.dumps([[a, b, w] for (a, b), w in sorted(edges.items())], ensure_ascii=False),),
                )

    def community_edges(self) -> dict[tuple[str, str], float] | None:
        """The weighted edges the stored communities were computed on (None before the first build)."""
        rows = self.get_meta("community_edges")
        return None if rows is None else {(a, b): float(w) for a, b, w in rows}

    def report(self, fingerprint: str) -> ReportRecord | None:
        rows = self._rows(
            "SELECT fingerprint, community_id, status, report, error, context, run_id FROM reports WHERE fingerprint = ?",
            (fingerprint,),
        )
        if not rows:
            return None
        r = rows[0]
        return ReportRecord(r[0], r[1], r[2], json.loads(r[3]) if r[3] else None, r[4], json.loads(r[5]), r[6])

    def save_report(
        self, fingerprint: str, community_id: str, report: dict | None, error: str | None, context: dict, run_id: int
    ) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO reports (fingerprint, community_id, status, report, error, context, run_id, "
                "updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    fingerprint,
                    community_id,
                    "ok" if error is None else "failed",
                    None if report is None else json.dumps(report, ensure_ascii=False),
                    error,
                    json.dumps(context, ensure_ascii=False),
                    run_id,
                    time.time(),
                ),
            )

    def prune_reports(self) -> int:
        """Drop reports that no current community uses."""
        with self._tx() as db:
            return db.execute(
                "DELETE FROM reports WHERE fingerprint NOT IN "
                "(SELECT fingerprint FROM communities WHERE fingerprint IS NOT NULL)"
            ).rowcount

    # ------------------------------------------------------------------ runs

    def start_run(self, command: str) -> int:
        with self._tx() as db:
            cur = db.execute(
                "INSERT INTO runs (command, started, status) VALUES (?, ?, 'running')", (command, time.time())
            )
            assert cur.lastrowid is not None  # set by every INSERT
            return cur.lastrowid

    def finish_run(self, run_id: int, stats: dict[str, Any]) -> None:
        with self._tx() as db:
            db.execute(
                "UPDATE runs SET finished = ?, status = 'done', stats = ? WHERE run_id = ?",
                (time.time(), json.dumps(stats), run_id),
            )

    def interrupted_runs(self) -> list[int]:
        return [r[0] for r in self._rows("SELECT run_id FROM runs WHERE status = 'running' ORDER BY run_id")]

    def mark_runs(self, run_ids: Iterable[int], status: str) -> None:
        with self._tx() as db:
            db.executemany("UPDATE runs SET status = ? WHERE run_id = ?", [(status, r) for r in run_ids])

    def runs(self) -> list[dict[str, Any]]:
        rows = self._rows("SELECT run_id, command, started, finished, status, stats FROM runs ORDER BY run_id")
        return [
            {
                "run_id": r[0],
                "command": r[1],
                "started": r[2],
                "finished": r[3],
                "status": r[4],
                "stats": json.loads(r[5]) if r[5] else None,
            }
            for r in rows
        ]
