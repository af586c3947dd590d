"""Table questions: CSV, Parquet, SQLite and DuckDB files in an embedded DuckDB database, answered with
text-to-SQL behind a read-only guard.

Example::

    from llama_index_kgplus.tables import SQLTables, TableQueryEngine

    tables = SQLTables()
    tables.add("weather", "seattle-weather.csv")
    response = TableQueryEngine.from_defaults(tables, llm=llm).query("What was the total precipitation in 2014?")
    print(response, response.metadata["sql"])
"""

from llama_index_kgplus.tables._engine import SQLAnswer, TableQueryEngine, TableRetriever
from llama_index_kgplus.tables._guard import read_only_select
from llama_index_kgplus.tables._tables import SQLResult, SQLTables, table_kind

__all__ = [
    "SQLAnswer",
    "SQLResult",
    "SQLTables",
    "TableQueryEngine",
    "TableRetriever",
    "read_only_select",
    "table_kind",
]
