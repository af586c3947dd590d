"""The read-only guard: a generated statement runs only if it parses as one ``SELECT`` over the registered tables.

The SQL is parsed (sqlglot, DuckDB dialect), never matched with patterns: DDL, DML, ``ATTACH``, ``COPY``,
``PRAGMA``, ``SET``, ``INSTALL``/``LOAD`` and any statement sqlglot cannot model are refused, and so are table
functions and functions that read files or the environment (``read_csv``, ``glob``, ``getenv``, ``query``...)
and tables that are not registered. A ``LIMIT`` is put on (or lowered to) the row limit. Given the columns'
types, a ``LIKE`` on a column that is not text compares the column's text form (``date LIKE '2014%'``, which
small models write for a DATE column, becomes ``CAST(date AS TEXT) LIKE '2014%'`` instead of an error).

Example:

```python
sql = read_only_select("SELECT weather, count(*) FROM weather GROUP BY 1", tables={"weather"}, max_rows=100)
```
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from llama_index_kgplus.errors import UnsafeQueryError

__all__ = ["read_only_select"]

# Functions that reach outside the registered tables (files, the network, settings, dynamic SQL).
_DENIED_FUNCTIONS = {"glob", "getenv", "query", "query_table", "current_setting", "which_secret", "sniff_csv"}
_DENIED_PREFIXES = ("read_", "sqlite_", "parquet_", "duckdb_", "pragma_", "iceberg_", "delta_", "postgres_", "mysql_")


def _function_name(node: object) -> str:
    from sqlglot import exp

    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    return str(getattr(node, "sql_name", lambda: "")()).lower()


def read_only_select(
    sql: str, *, tables: Collection[str], max_rows: int, column_types: Mapping[str, str] | None = None
) -> str:
    """``sql`` as one ``SELECT`` over ``tables`` with ``LIMIT max_rows`` at most, in DuckDB's dialect; raises
    :class:`UnsafeQueryError` (with the reason) for anything else. ``column_types``: ``{column: type}`` (any
    case) for the ``LIKE`` cast."""
    import sqlglot
    from sqlglot import exp

    def refuse(reason: str) -> UnsafeQueryError:
        return UnsafeQueryError(f"Refused the generated SQL ({reason}); it was not run.", sql)

    try:
        statements = [s for s in sqlglot.parse(sql, read="duckdb") if s is not None]
    except sqlglot.errors.SqlglotError as exc:
        raise refuse(f"it does not parse: {str(exc).splitlines()[0]}") from None
    if len(statements) != 1:
        raise refuse(f"{len(statements)} statements; only one SELECT may run")
    tree = statements[0]
    if not isinstance(tree, (exp.Select, exp.SetOperation)):
        raise refuse(f"statement type {tree.key.upper()}; only SELECT may run")
    allowed = {t.lower() for t in tables}
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    for node in tree.walk():
        if isinstance(node, (exp.Command, exp.DDL, exp.DML, exp.Pragma, exp.Set, exp.Use, exp.Into)):
            raise refuse(f"it contains {node.key.upper()}")
        if isinstance(node, exp.Func):
            name = _function_name(node)
            if name in _DENIED_FUNCTIONS or name.startswith(_DENIED_PREFIXES):
                raise refuse(f"it calls {name}(), which reaches outside the tables")
        if isinstance(node, exp.Table):
            if not isinstance(node.this, exp.Identifier) or node.args.get("db") or node.args.get("catalog"):
                raise refuse(f"it reads from {node.sql(dialect='duckdb')}, which is not a registered table")
            if node.name.lower() not in allowed | ctes:
                known = ", ".join(sorted(tables)) or "none"
                raise refuse(f"it reads table {node.name!r}, which is not registered (tables: {known})")
    types = {c.lower(): t.upper() for c, t in (column_types or {}).items()}
    for like in list(tree.find_all(exp.Like, exp.ILike)):
        column = like.this
        if isinstance(column, exp.Column) and types.get(column.name.lower(), "VARCHAR") != "VARCHAR":
            column.replace(exp.cast(column.copy(), "VARCHAR"))
    limit = tree.args.get("limit")
    current = limit.expression if isinstance(limit, exp.Limit) else None
    if not (isinstance(current, exp.Literal) and current.is_int and int(current.name) <= max_rows):
        if isinstance(tree, exp.SetOperation):
            tree = exp.select("*").from_(tree.subquery("q"))
        tree = tree.limit(max_rows)
    return tree.sql(dialect="duckdb")
