"""What the workbench may open: the sources named on the ``kgplus ui`` command line, checked once, passed to the
Streamlit process as JSON in an environment variable (the browser never names a path)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import BaseModel, Field, field_validator

from llama_index_kgplus._paths import user_path
from llama_index_kgplus.errors import InputDataError

__all__ = ["CONFIG_ENV", "WorkbenchConfig"]

#: the environment variable that carries the checked configuration to the Streamlit process
CONFIG_ENV = "KGPLUS_UI_CONFIG"


class WorkbenchConfig(BaseModel):
    """The sources and settings of one workbench; every path is resolved and checked by :meth:`check`.

    Example:

    ```python
    config = WorkbenchConfig(index="./index", tables={"weather": "seattle-weather.csv"}).check()
    os.environ[CONFIG_ENV] = config.to_json()      # what `kgplus ui` hands to `streamlit run`
    ```
    """

    index: Path | None = Field(default=None, description="persisted index (kgplus ingest): local, multi-hop")
    kg_store: str | None = Field(default=None, description="knowledge graph store URI (kgplus kg import)")
    graphrag: Path | None = Field(default=None, description="GraphRAG store folder (kgplus graphrag index)")
    glossary: Path | None = Field(default=None, description="glossary .json or .csv: local questions are rewritten")
    tables: dict[str, Path] = Field(default_factory=dict, description="table name -> CSV, Parquet, SQLite, DuckDB")
    eval_dir: Path | None = Field(default=None, description="a `kgplus eval --out` folder for the Compare page")
    llm: str | None = Field(default=None, description="model spec of the answers; default $KGPLUS_LLM")
    top_k: int = Field(default=5, ge=1, description="passages to retrieve")
    context_budget: int = Field(default=1024, ge=1, description="tokens of passage text the LLM reads")

    @field_validator("index", "graphrag", "glossary", "eval_dir", mode="after")
    @classmethod
    def _expand_user(cls, value: Path | None) -> Path | None:
        """``~`` expanded once, for the check and the read alike (see ``_paths``)."""
        return None if value is None else user_path(value)

    @field_validator("tables", mode="after")
    @classmethod
    def _expand_user_tables(cls, value: dict[str, Path]) -> dict[str, Path]:
        return {name: user_path(path) for name, path in value.items()}

    @classmethod
    def class_name(cls) -> str:
        """Class name."""
        return "WorkbenchConfig"

    def check(self) -> WorkbenchConfig:
        """A copy with every path resolved; raises :class:`InputDataError` (one line, with the fix) for a missing
        or wrong source, before any model loads or the server starts."""
        from llama_index_kgplus._indexing import require_index
        from llama_index_kgplus.graph_stores._uri import GraphStoreURI
        from llama_index_kgplus.llm import resolve_model_spec

        resolve_model_spec(self.llm, "llm")  # the LLM of the answers, and the store's URI: refused in one line, now
        resolve_model_spec(None, "embed_model")
        if self.kg_store is not None:
            GraphStoreURI.parse(self.kg_store)
        if not (self.index or self.kg_store or self.graphrag or self.tables or self.eval_dir):
            raise InputDataError(
                "Give at least one source: --index, --kg-store, --graphrag, --table NAME=PATH or --eval DIR."
            )
        update: dict[str, object] = {}
        if self.index is not None:
            require_index(self.index)
            update["index"] = self.index.resolve()
        if self.graphrag is not None:
            from llama_index_kgplus.graphrag._index import require_store

            update["graphrag"] = require_store(self.graphrag).resolve()
        if self.glossary is not None:
            if self.index is None:
                raise InputDataError("--glossary rewrites questions to an index: give --index too.")
            from llama_index_kgplus.glossary import Glossary

            Glossary.load(self.glossary)  # validated (line and column of a mistake) before the server starts
            update["glossary"] = self.glossary.resolve()
        for name, path in self.tables.items():
            if not path.is_file():
                raise InputDataError(f"--table {name}={path}: no file at {path}.")
        update["tables"] = {name: path.resolve() for name, path in self.tables.items()}
        if self.eval_dir is not None:
            if not (self.eval_dir / "per_question.csv").is_file():
                raise InputDataError(f"--eval {self.eval_dir} is not a `kgplus eval` output (no per_question.csv).")
            from llama_index_kgplus.ui._eval_folder import EvalFolder

            EvalFolder(self.eval_dir)  # its files read and checked (a missing column, a bad line) before the server
            update["eval_dir"] = self.eval_dir.resolve()
        return self.model_copy(update=update)

    def to_json(self) -> str:
        """The JSON handed to the Streamlit process."""
        return self.model_dump_json()

    @classmethod
    def from_env(cls) -> WorkbenchConfig:
        """The configuration ``kgplus ui`` put in ``$KGPLUS_UI_CONFIG``."""
        raw = os.environ.get(CONFIG_ENV)
        if not raw:
            raise InputDataError(f"${CONFIG_ENV} is not set: start the workbench with `kgplus ui`.")
        return cls.model_validate(json.loads(raw))

    def allowed_roots(self) -> list[Path]:
        """The folders and files the workbench may read from: the ones given on the command line."""
        roots = [self.index, self.graphrag, self.glossary, self.eval_dir, *self.tables.values()]
        return [Path(r) for r in roots if r is not None]
