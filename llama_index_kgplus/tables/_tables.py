"""Tables for text-to-SQL: CSV, Parquet, SQLite and DuckDB files copied into one in-memory DuckDB database.

Why DuckDB: it is embedded (a wheel, no server), columnar and vectorised (aggregates over millions of rows in
milliseconds on a CPU), reads CSV (sniffing delimiters, quotes, types and a BOM) and Parquet itself, and can
interrupt a running query, which the timeout needs. The files are *copied* in at registration, so nothing a
query does can reach them; once the first query runs the database is sealed (no file or network access, no
extension loading, no change of settings), and each query runs in a transaction that is rolled back. The copy
is held in memory: each file at most 1 GB by default (``$KGPLUS_MAX_FILE_MB`` raises it), and a named pipe, device
or socket is refused before it is opened; a file DuckDB or SQLite cannot read is an input error naming it.

Registration reads exactly the file named, never another: CSV and Parquet through a handle the pack opened
(DuckDB never sees the name, so ``*``, ``?`` and ``[`` in it are plain characters), a DuckDB file in a separate
DuckDB allowed no file outside a private temporary folder (a view stored in it that reads another file is
refused), a SQLite file through a ``file:`` URI with the name percent-encoded.

Example:

```python
tables = SQLTables()
tables.add("weather", "seattle-weather.csv")
tables.run("SELECT sum(precipitation) FROM weather WHERE year(date) = 2014")
```
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llama_index_kgplus._files import check_input_file
from llama_index_kgplus._paths import user_path
from llama_index_kgplus.errors import InputDataError, QueryTimeoutError
from llama_index_kgplus.tables._guard import read_only_select

__all__ = ["SQLResult", "SQLTables", "table_kind"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_SQLITE_MAGIC = b"SQLite format 3\x00"


def table_kind(path: Path) -> str:
    """``csv``, ``parquet``, ``sqlite`` or ``duckdb``, from the file's first bytes (its suffix for CSV)."""
    with path.open("rb") as fh:
        head = fh.read(16)
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.startswith(_SQLITE_MAGIC):
        return "sqlite"
    if head[8:12] == b"DUCK":
        return "duckdb"
    return "csv"


#: the name DuckDB gives a file read through a handle, in its errors
_INTERNAL_NAME = re.compile(r"DUCKDB_INTERNAL_OBJECTSTORE://[0-9a-f]+")


def _duckdb_error() -> type[Exception]:
    import duckdb

    return duckdb.Error


def _sqlite_uri(path: Path) -> str:
    """A read-only ``file:`` URI of ``path`` (``?``, ``#`` and ``%`` in the name percent-encoded)."""
    return path.absolute().as_uri() + "?mode=ro"


@contextmanager
def _confined_duckdb(path: Path, scratch: Path) -> Iterator[Any]:
    """A DuckDB with the database file ``path`` attached read-only as ``kgplus_source`` and access to no file
    outside the private folder ``scratch``: what a view or macro stored in the file reads is refused. DuckDB sees
    the file under a plain name in ``scratch`` (a hard link to it, or a copy on another file system): it would
    read ``?`` in the user's name as the start of options."""
    import duckdb

    source = scratch / "source.duckdb"
    for suffix in ("", ".wal"):  # a WAL not yet checkpointed belongs to the file
        original, alias = path.with_name(path.name + suffix), Path(f"{source}{suffix}")
        if suffix and not original.is_file():
            continue
        try:
            os.link(original, alias)
        except OSError:
            shutil.copyfile(original, alias)
    with duckdb.connect(":memory:", config={"autoinstall_known_extensions": False}) as db:
        db.execute("SET autoload_known_extensions = false")
        db.execute(f"SET allowed_directories = [{_literal(str(scratch.resolve()) + os.sep)}]")
        db.execute("SET enable_external_access = false")
        db.execute("SET lock_configuration = true")
        db.execute(f"ATTACH {_literal(str(source.resolve()))} AS kgplus_source (READ_ONLY)")
        try:
            yield db
        finally:
            db.execute("DETACH kgplus_source")
            for suffix in ("", ".wal"):
                Path(f"{source}{suffix}").unlink(missing_ok=True)


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _cell(value: Any) -> str:
    return "" if value is None else " ".join(str(value).split()).replace("|", "\\|")


@dataclass
class SQLResult:
    """The rows of one query: ``truncated`` when the row limit cut them."""

    sql: str
    columns: list[str]
    rows: list[tuple[Any, ...]]
    truncated: bool = False

    def as_text(self, max_rows: int = 20) -> str:
        """The rows as a Markdown table (at most ``max_rows``), for a prompt or a terminal."""
        if not self.columns:
            return "(no columns)"
        lines = ["| " + " | ".join(self.columns) + " |", "|" + "---|" * len(self.columns)]
        lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in self.rows[:max_rows]]
        if len(self.rows) > max_rows or self.truncated:
            lines.append(
                f"({len(self.rows)}{'+' if self.truncated else ''} rows; {min(max_rows, len(self.rows))} shown)"
            )
        return "\n".join(lines)


@dataclass
class SQLTables:
    """Registered tables in an in-memory DuckDB database, queried through the read-only guard.

    Example:

    ```python
    tables = SQLTables(max_rows=1000, timeout=10.0)
    tables.add("weather", "seattle-weather.csv")   # or .parquet, a SQLite or DuckDB file
    result = tables.run("SELECT weather, count(*) AS days FROM weather GROUP BY weather")
    result.columns, result.rows
    ```
    """

    max_rows: int = 1000
    timeout: float = 10.0
    sources: dict[str, Path] = field(default_factory=dict)
    descriptions: dict[str, str] = field(default_factory=dict)
    _con: Any = field(default=None, init=False, repr=False)
    _sealed: bool = field(default=False, init=False, repr=False)
    # what is read from the tables to prompt and to guard (schema text, column types), until the next add()
    _derived: dict[Any, Any] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __getstate__(self) -> dict[str, Any]:
        # The tables travel as their rows (the files may have changed since they were copied in), so a copy in
        # another process answers from the same data; the connection and the lock are made anew there.
        with self._lock:
            con = self._connection()
            tables = {t: (self.columns(t), con.execute(f"SELECT * FROM {_quoted(t)}").fetchall()) for t in self.sources}
        settings = {"max_rows": self.max_rows, "timeout": self.timeout, "descriptions": dict(self.descriptions)}
        return {**settings, "sources": dict(self.sources), "tables": tables}

    def __setstate__(self, state: dict[str, Any]) -> None:
        tables = state.pop("tables")
        self.__init__(**state)  # type: ignore[misc]
        con = self._connection()
        for table, (columns, rows) in tables.items():
            con.execute(f"CREATE TABLE {_quoted(table)} ({', '.join(f'{_quoted(c)} {t}' for c, t in columns)})")
            if rows:
                con.executemany(f"INSERT INTO {_quoted(table)} VALUES ({', '.join('?' * len(columns))})", rows)

    def _connection(self) -> Any:
        if self._con is None:
            import duckdb

            self._con = duckdb.connect(":memory:", config={"autoinstall_known_extensions": False})
        return self._con

    @property
    def names(self) -> list[str]:
        """The registered table names."""
        return list(self.sources)

    def add(self, name: str, path: str | Path, description: str = "") -> list[str]:
        """Copy the file at ``path`` in as table ``name``; a SQLite or DuckDB file brings each of its tables, as
        ``name`` when it holds one and ``name_<table>`` otherwise. ``description`` (what the rows are, units) is
        shown to the LLM with the schema. Returns the table names added."""
        path = user_path(path)
        if not _NAME.match(name):
            raise InputDataError(f"Table name {name!r}: use letters, digits and _ (not starting with a digit).")
        if self._sealed:
            raise InputDataError(f"Table {name!r}: add every table before the first query runs.")
        if not path.exists():
            raise InputDataError(f"Table {name!r}: no file at {path}.")
        if check_input_file(path, f"Table {name!r}:").st_size == 0:  # a FIFO or device: refused, never opened
            raise InputDataError(f"Table {name!r}: {path} is empty.")
        kind = table_kind(path)
        try:
            added = self._copy_in(name, path, kind)
        except (sqlite3.Error, _duckdb_error()) as exc:  # the user's file is broken: say which and how
            detail = _INTERNAL_NAME.sub(path.name, " ".join(str(exc).split("\n")[0].split()))
            raise InputDataError(f"Table {name!r} from {path}: {detail}") from exc
        self._derived.clear()
        for table in added:
            self.sources[table] = path
            if description:
                self.descriptions[table] = " ".join(description.split())
        return added

    def _copy_in(self, name: str, path: Path, kind: str) -> list[str]:
        """Copy the file's table(s) into the database; the names they were given."""
        if kind in ("sqlite", "duckdb"):
            members = self._database_tables(path, kind)
            names = {t: name if len(members) == 1 else f"{name}_{t}" for t in members}
        else:
            names = {"": name}
        taken = {n.lower(): n for n in self.sources}  # DuckDB names are case-insensitive
        for table in names.values():
            if table.lower() in taken:
                existing = taken[table.lower()]
                raise InputDataError(
                    f"Table {table!r} is already registered (as {existing!r}, from {self.sources[existing]})."
                )
        con = self._connection()
        if kind in ("csv", "parquet"):
            with path.open("rb") as handle:  # a handle, not a path: DuckDB reads this file and no other
                relation = con.read_csv(handle) if kind == "csv" else con.read_parquet(handle)
                relation.create(name)
        elif kind == "duckdb":
            self._copy_duckdb_tables(path, names)
        else:
            for source, table in names.items():
                self._copy_sqlite_table(path, source, table)
        return list(names.values())

    def _database_tables(self, path: Path, kind: str) -> list[str]:
        if kind == "sqlite":
            with sqlite3.connect(_sqlite_uri(path), uri=True) as db:
                rows = db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')").fetchall()
            members = [r[0] for r in rows if not r[0].startswith("sqlite_")]
        else:
            with (
                tempfile.TemporaryDirectory(prefix="kgplus-table-") as scratch,
                _confined_duckdb(path, Path(scratch)) as db,
            ):
                rows = db.execute(
                    "SELECT table_name FROM information_schema.tables WHERE table_catalog = 'kgplus_source'"
                ).fetchall()
            members = [r[0] for r in rows]
        if not members:
            raise InputDataError(f"{path} holds no tables.")
        bad = [m for m in members if not _NAME.match(m)]
        if bad:
            raise InputDataError(f"{path}: table names {bad} cannot be used in SQL here; rename them.")
        return members

    def _copy_duckdb_tables(self, path: Path, names: dict[str, str]) -> None:
        """Each table ``source`` of the DuckDB file as ``names[source]``: copied, in a DuckDB confined to that file
        (:func:`_confined_duckdb`), into a DuckDB file of a private temporary folder that holds plain tables only
        (no view or macro runs when it is read), which this database then copies in with every type as it was."""
        with tempfile.TemporaryDirectory(prefix="kgplus-table-") as scratch:
            copy = Path(scratch).resolve() / "copy.duckdb"
            with _confined_duckdb(path, Path(scratch)) as db:
                db.execute(f"ATTACH {_literal(str(copy))} AS kgplus_copy")
                for source in names:
                    db.execute(
                        f"CREATE TABLE kgplus_copy.{_quoted(source)} AS SELECT * FROM kgplus_source.{_quoted(source)}"
                    )
                db.execute("DETACH kgplus_copy")
            con = self._connection()
            con.execute(f"ATTACH {_literal(str(copy))} AS kgplus_copy (READ_ONLY)")
            try:
                for source, table in names.items():
                    con.execute(f"CREATE TABLE {_quoted(table)} AS SELECT * FROM kgplus_copy.{_quoted(source)}")
            finally:
                con.execute("DETACH kgplus_copy")

    def _copy_sqlite_table(self, path: Path, source: str, table: str) -> None:
        """SQLite has no typed columns: each column becomes BIGINT, DOUBLE or VARCHAR by the values it holds."""
        with sqlite3.connect(_sqlite_uri(path), uri=True) as db:
            cursor = db.execute(f"SELECT * FROM {_quoted(source)}")
            columns = [d[0] for d in cursor.description]
            rows = cursor.fetchall()
        types = []
        for i in range(len(columns)):
            kinds = {type(row[i]) for row in rows if row[i] is not None}
            types.append("BIGINT" if kinds <= {int} else "DOUBLE" if kinds <= {int, float} else "VARCHAR")
        rows = [tuple(v if t != "VARCHAR" or v is None else str(v) for v, t in zip(row, types)) for row in rows]
        con = self._connection()
        con.execute(f"CREATE TABLE {_quoted(table)} ({', '.join(f'{_quoted(c)} {t}' for c, t in zip(columns, types))})")
        if rows:
            con.executemany(f"INSERT INTO {_quoted(table)} VALUES ({', '.join('?' * len(columns))})", rows)

    def _seal(self) -> None:
        if not self._sealed:
            con = self._connection()
            con.execute("SET enable_external_access = false")
            con.execute("SET autoload_known_extensions = false")
            con.execute("SET lock_configuration = true")
            self._sealed = True

    def columns(self, table: str) -> list[tuple[str, str]]:
        """``(column, type)`` pairs of a registered table."""
        rows = self._connection().execute(f"DESCRIBE {_quoted(table)}").fetchall()
        return [(r[0], r[1]) for r in rows]

    def _distinct_values(self, table: str, column: str, max_values: int) -> list[Any] | None:
        """The distinct non-null values of a column, or None when it has more than ``max_values``."""
        values = (
            self._connection()
            .execute(
                f"SELECT DISTINCT {_quoted(column)} FROM {_quoted(table)} "
                f"WHERE {_quoted(column)} IS NOT NULL LIMIT {max_values + 1}"
            )
            .fetchall()
        )
        return [v[0] for v in values] if len(values) <= max_values else None

    def describe(self, sample_rows: int = 3, max_values: int = 12) -> str:
        """Each table as ``CREATE TABLE`` with its first rows and, for text columns with few values, the values:
        what the LLM needs to write SQL (read once until the next :meth:`add`)."""
        key = ("describe", sample_rows, max_values)
        if key in self._derived:
            return self._derived[key]
        con = self._connection()
        parts = []
        for table in self.sources:
            cols = self.columns(table)
            lines = [f"-- {self.descriptions[table]}"] if table in self.descriptions else []
            lines.append(f"CREATE TABLE {table} (" + ", ".join(f"{c} {t}" for c, t in cols) + ");")
            sample = con.execute(f"SELECT * FROM {_quoted(table)} LIMIT {int(sample_rows)}").fetchall()
            lines.append(SQLResult("", [c for c, _ in cols], sample).as_text())
            for column, kind in cols:
                values = self._distinct_values(table, column, max_values) if kind == "VARCHAR" else None
                if values is not None:
                    lines.append(f"-- {table}.{column} values: " + ", ".join(repr(v) for v in values))
            parts.append("\n".join(lines))
        self._derived[key] = "\n\n".join(parts)
        return self._derived[key]

    def text_values(self, max_values: int = 200) -> dict[str, list[str]]:
        """``{"table.column": values}`` of the text columns with at most ``max_values`` distinct values (the
        router looks for them in questions)."""
        found = {}
        for table in self.sources:
            for column, kind in self.columns(table):
                values = self._distinct_values(table, column, max_values) if kind == "VARCHAR" else None
                if values is not None:
                    found[f"{table}.{column}"] = [str(v) for v in values]
        return found

    def _column_types(self) -> dict[str, str]:
        """``{column: type}`` over all tables, for the guard's ``LIKE`` cast; a name that is text in one table but
        not in another counts as not text."""
        if "types" not in self._derived:
            types: dict[str, str] = {}
            for table in self.sources:
                for column, kind in self.columns(table):
                    if types.get(column.lower(), "VARCHAR") == "VARCHAR":
                        types[column.lower()] = kind
            self._derived["types"] = types
        return self._derived["types"]

    def run(self, sql: str) -> SQLResult:
        """Run one generated statement through the guard, with the row limit and the timeout; raises
        :class:`UnsafeQueryError` (not run), :class:`QueryTimeoutError` or ``InputDataError`` (the database's
        error message, for a repair)."""
        import duckdb

        if not self.sources:
            raise InputDataError("No tables are registered.")
        with self._lock:  # one DuckDB connection runs one query at a time
            types = self._column_types()
            safe = read_only_select(sql, tables=self.sources, max_rows=self.max_rows + 1, column_types=types)
            self._seal()
            con = self._connection()
            timer = threading.Timer(self.timeout, con.interrupt)
            con.execute("BEGIN TRANSACTION")
            timer.start()
            try:
                cursor = con.execute(safe)
                columns = [d[0] for d in cursor.description or []]
                rows = cursor.fetchall()
            except duckdb.InterruptException:
                raise QueryTimeoutError(
                    f"The query ran longer than {self.timeout:g} s and was stopped: {safe}"
                ) from None
            except duckdb.Error as exc:
                raise InputDataError(str(exc).splitlines()[0]) from exc
            finally:
                timer.cancel()
                con.execute("ROLLBACK")
        truncated = len(rows) > self.max_rows
        return SQLResult(safe, columns, rows[: self.max_rows], truncated)
