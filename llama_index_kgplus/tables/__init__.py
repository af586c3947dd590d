"""Table questions: CSV, Parquet, SQLite and DuckDB files in an embedded DuckDB database, answered with
text-to-SQL behind a read-only guard.

Example:

```python
from llama_index_kgplus.tables import SQLTables, TableQueryEngine

tables = SQLTables()
tables.add("weather", "seattle-weather.csv")
response = TableQueryEngine.from_defaults(tables, llm=llm).query("What was the total precipitation in 2014?")
print(response, response.metadata["sql"])
```
"""

from llama_index_kgplus._deprecation import deprecated_names
from llama_index_kgplus._public import set_public_module
from llama_index_kgplus.tables._engine import TableQueryEngine, TableRetriever
from llama_index_kgplus.tables._guard import read_only_select
from llama_index_kgplus.tables._tables import SQLTables

__all__ = [
    "TableQueryEngine",
    "TableRetriever",
    "SQLTables",
    "read_only_select",
]
set_public_module(__name__, globals(), __all__)

# Names that left the public API: importable for one more release, with a DeprecationWarning.
__getattr__ = deprecated_names(
    __name__,
    {
        "SQLAnswer": "llama_index_kgplus.tables._engine:SQLAnswer",
        "SQLResult": "llama_index_kgplus.tables._tables:SQLResult",
        "table_kind": "llama_index_kgplus.tables._tables:table_kind",
    },
)
