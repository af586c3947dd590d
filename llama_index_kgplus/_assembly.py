"""The pack's engines assembled from Python values: what ``kgplus ask``, ``kgplus ui`` and the demo run on.

:class:`KGPlusSources` takes the sources (an index, a knowledge graph, a GraphRAG store, tables, a glossary) and
the models; :meth:`~KGPlusSources.open` checks every source before any model loads and opens each once; then it
hands out the router, each route's retriever and query engine, and the routed engine over all of them. Models
load, and the index is read, only when an engine first needs them.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from llama_index.core import Settings, VectorStoreIndex
from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.graph_stores.types import PropertyGraphStore
from llama_index.core.llms import LLM
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

from llama_index_kgplus._paths import user_path
from llama_index_kgplus.compression._compressor import DEFAULT_CONTEXT_BUDGET
from llama_index_kgplus.errors import InputDataError, KGPlusSetupError
from llama_index_kgplus.glossary import Glossary, GlossaryRetrievalMode
from llama_index_kgplus.glossary._engine import DEFAULT_MODE
from llama_index_kgplus.llm import embed_model_from_spec, llm_from_spec, metered, resolve_model_spec
from llama_index_kgplus.llm._specs import ModelSpec, embed_model_identity

__all__ = ["ENGINE_NAMES", "KGPlusSources"]

#: The engine that answers each route's questions (the ``engine`` of ``kgplus route`` and ``kgplus ask``)
ENGINE_NAMES = {
    "local": "vector_index",
    "multihop": "entity_graph",
    "global": "graphrag_global",
    "kg": "kg_paths",
    "sql": "text_to_sql",
}

_PATH = (str, Path)


def _refused(field: str, value: Any, accepted: str) -> InputDataError:
    return InputDataError(f"{field}: a {type(value).__name__} is not a source; give {accepted}.")


class KGPlusSources(BaseModel):
    """The sources of one routed engine, checked before any model loads, opened once, closed at the end.

    Give any of ``index`` (local questions; multi-hop too when it has an entity graph), ``kg_store``
    (knowledge-graph path questions), ``graphrag`` (global questions) and ``tables`` (table questions), and the
    models (LLM and embedding model objects, or model specs; None: ``Settings``). Each route's engine is built
    on its first question.

    Example:

    ```python
    from llama_index_kgplus import KGPlusSources

    with KGPlusSources(index="./index", tables={"weather": "seattle-weather.csv"},
                       llm="qwen2.5-coder-1.5b", embed_model="local") as sources:
        engine = sources.routed_query_engine()
        response = engine.query("What was the total precipitation in 2014?")
        response.metadata["route"], response.metadata["usage"]
        sources.retriever("local").retrieve("How do I create a virtual environment?")
    ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: Any = Field(
        default=None,
        description="an index folder (kgplus ingest, build_index) or a VectorStoreIndex: local questions, and "
        "multi-hop ones when the folder holds an entity graph (or entity_graph is given)",
    )
    entity_graph: Any = Field(default=None, description="the EntityGraph of an in-memory index: multi-hop questions")
    kg_store: Any = Field(
        default=None, description="a graph store URI, a KnowledgeGraph or a PropertyGraphStore: path questions"
    )
    graphrag: Any = Field(default=None, description="a GraphRAG store folder or a GraphRAGIndex: global questions")
    tables: Any = Field(
        default=None,
        description="{name: CSV, Parquet, SQLite or DuckDB file} (or (name, file) pairs) or SQLTables: table questions",
    )
    glossary: Any = Field(default=None, description="a glossary file or Glossary: local questions are rewritten")
    llm: Any = Field(default=None, description="an LLM or a model spec; None: Settings.llm")
    embed_model: Any = Field(default=None, description="an embedding model or a model spec; None: Settings.embed_model")
    similarity_top_k: int = Field(default=5, ge=1, description="passages retrieved per question")
    context_budget: int | None = Field(
        default=DEFAULT_CONTEXT_BUDGET, ge=1, description="tokens of passage text the LLM reads; None: no compression"
    )
    retrieval_mode: str | None = Field(
        default=None, description="local retrieval: evidence, collapsed or tree; None: evidence with summaries"
    )
    retriever_kwargs: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="more settings of a route's retriever: {'local': {...} of HierarchicalRetriever, 'multihop': "
        "{...} of EntityGraphRetriever (damping, max_hops, include_parents...), 'kg': {...} of KGPathRetriever}",
    )
    glossary_mode: GlossaryRetrievalMode = Field(
        default=DEFAULT_MODE, description="with a glossary: rewritten, original or fused"
    )
    streaming: bool = Field(default=False, description="the engines that can stream their answers do")

    _opened: bool = PrivateAttr(default=False)
    _stack: contextlib.ExitStack = PrivateAttr(default_factory=contextlib.ExitStack)
    _lock: threading.RLock = PrivateAttr(default_factory=threading.RLock)
    _built: dict[str, Any] = PrivateAttr(default_factory=dict)

    @field_validator("index", "graphrag", "glossary", mode="after")
    @classmethod
    def _expand_user(cls, value: Any) -> Any:
        """A folder or file given by name is read as named, ``~`` expanded once (see ``_paths``)."""
        return user_path(value) if isinstance(value, _PATH) else value

    @classmethod
    def class_name(cls) -> str:
        """Class name."""
        return "KGPlusSources"

    # ------------------------------------------------------------------ opening and closing

    def open(self) -> KGPlusSources:
        """Check every source (one :class:`~llama_index_kgplus.errors.InputDataError` line for the first that is
        wrong) and open the cheap ones: the graph store, the tables, the glossary. Loads no model. Idempotent."""
        with self._lock:
            if self._opened:
                return self
            try:
                self._open()
            except BaseException:
                self.close()
                raise
            self._opened = True
        return self

    def _open(self) -> None:
        if not any(v is not None for v in (self.index, self.kg_store, self.graphrag, self.tables)):
            raise InputDataError("Give at least one source: index, kg_store, graphrag or tables.")
        routes: list[str] = []
        self._check_model("llm", self.llm, LLM)
        self._check_model(
            "embed_model", self.embed_model, BaseEmbedding
        )  # a bad spec fails now, before any model loads
        if self.index is not None:
            routes += ["local", *(["multihop"] if self._check_index() else [])]
        elif self.entity_graph is not None or self.glossary is not None:
            what = "entity_graph" if self.entity_graph is not None else "glossary"
            raise InputDataError(f"{what} belongs to an index: give index too.")
        if self.graphrag is not None:
            from llama_index_kgplus.graphrag import GraphRAGIndex
            from llama_index_kgplus.graphrag._index import require_store

            if isinstance(self.graphrag, _PATH):
                require_store(self.graphrag)
            elif not isinstance(self.graphrag, GraphRAGIndex):
                raise _refused("graphrag", self.graphrag, "a GraphRAG store folder or a GraphRAGIndex")
            routes.append("global")
        if self.kg_store is not None:
            self._built["kg_store"] = self._open_kg()
            routes.append("kg")
        if self.tables is not None:
            self._built["tables"] = self._open_tables()
            routes.append("sql")
        if self.glossary is not None:
            self._built["glossary"] = self._load_glossary()
        self._built["routes"] = routes

    @staticmethod
    def _check_model(field: Literal["llm", "embed_model"], value: Any, accepted: type) -> None:
        if isinstance(value, (str, ModelSpec)):
            resolve_model_spec(value, field)
        elif value is not None and not isinstance(value, accepted):
            raise _refused(field, value, f"a LlamaIndex {accepted.__name__}, a model spec or None")

    def _check_index(self) -> bool:
        """Check the index (and, for a folder, that it was built with this embedding model); whether it has an
        entity graph."""
        from llama_index_kgplus._indexing import check_embed_model, require_index
        from llama_index_kgplus.entity_graph import EntityGraph

        if isinstance(self.index, _PATH):
            require_index(self.index)
            model = self.embed_model
            known = embed_model_identity(model) if isinstance(model, (str, ModelSpec)) else model
            if known is not None:
                check_embed_model(self.index, known)
            return self.entity_graph is not None or EntityGraph.exists(self.index)
        if not isinstance(self.index, VectorStoreIndex):
            raise _refused("index", self.index, "an index folder or a VectorStoreIndex")
        if self.entity_graph is not None and not isinstance(self.entity_graph, EntityGraph):
            raise _refused("entity_graph", self.entity_graph, "an EntityGraph")
        return self.entity_graph is not None

    def _open_kg(self) -> Any:
        from llama_index_kgplus.kg import KnowledgeGraph

        if isinstance(self.kg_store, KnowledgeGraph):
            return self.kg_store
        if isinstance(self.kg_store, str):
            return self._stack.enter_context(KnowledgeGraph.open(self.kg_store))
        if isinstance(self.kg_store, PropertyGraphStore):
            return KnowledgeGraph(self.kg_store)
        raise _refused("kg_store", self.kg_store, "a graph store URI, a KnowledgeGraph or a PropertyGraphStore")

    def _open_tables(self) -> Any:
        from llama_index_kgplus.tables import SQLTables

        if isinstance(self.tables, SQLTables):
            return self.tables
        pairs = list(self.tables.items()) if isinstance(self.tables, Mapping) else self.tables
        if not isinstance(pairs, (list, tuple)) or not pairs or any(len(p) != 2 for p in pairs):
            raise _refused("tables", self.tables, "{name: file} or (name, file) pairs (at least one) or SQLTables")
        tables = SQLTables()
        for name, path in pairs:
            tables.add(name, path)  # a second table of the same name is refused here
        return tables

    def _load_glossary(self) -> Glossary:
        if isinstance(self.glossary, Glossary):
            return self.glossary
        if isinstance(self.glossary, _PATH):
            return Glossary.load(self.glossary)
        raise _refused("glossary", self.glossary, "a glossary .json or .csv file or a Glossary")

    def close(self) -> None:
        """Close what was opened (the graph store, the GraphRAG store); closing twice is harmless."""
        with self._lock:
            self._stack.close()
            self._built.clear()
            self._opened = False

    def __enter__(self) -> KGPlusSources:
        return self.open()

    def __getstate__(self) -> dict[str, Any]:
        # A copy (a worker process) takes the sources as given and opens them itself on first use.
        return {"__dict__": dict(self.__dict__), "__pydantic_fields_set__": set(self.model_fields_set)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        copy = type(self).model_construct(_fields_set=state["__pydantic_fields_set__"], **state["__dict__"])
        object.__setattr__(self, "__dict__", copy.__dict__)
        object.__setattr__(self, "__pydantic_fields_set__", copy.__pydantic_fields_set__)
        object.__setattr__(self, "__pydantic_extra__", None)
        object.__setattr__(self, "__pydantic_private__", copy.__pydantic_private__)

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ what open() found

    def _opened_value(self, key: str) -> Any:
        self.open()
        return self._built.get(key)

    @property
    def routes(self) -> list[str]:
        """The routes the sources answer, among ``local``, ``multihop``, ``global``, ``kg`` and ``sql``."""
        return list(self._opened_value("routes"))

    @property
    def knowledge_graph(self) -> Any:
        """The opened :class:`~llama_index_kgplus.kg.KnowledgeGraph` (None without ``kg_store``)."""
        return self._opened_value("kg_store")

    @property
    def sql_tables(self) -> Any:
        """The registered :class:`~llama_index_kgplus.tables.SQLTables` (None without ``tables``)."""
        return self._opened_value("tables")

    @property
    def loaded_glossary(self) -> Glossary | None:
        """The validated :class:`~llama_index_kgplus.glossary.Glossary` (None without ``glossary``)."""
        return self._opened_value("glossary")  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ built on first use

    def _once(self, key: str, build: Callable[[], Any]) -> Any:
        self.open()
        with self._lock:
            if key not in self._built:
                self._built[key] = build()
            return self._built[key]

    def get_llm(self) -> LLM:
        """The LLM of the answers, metered (each response reports its usage), loaded on first use."""
        return self._once("llm", lambda: metered(_model(self.llm, llm_from_spec, "llm")))  # type: ignore[no-any-return]

    def get_embed_model(self) -> BaseEmbedding:
        """The embedding model of the router and the retrievers, loaded on first use."""
        return self._once("embed_model", lambda: _model(self.embed_model, embed_model_from_spec, "embed_model"))  # type: ignore[no-any-return]

    def get_index(self) -> VectorStoreIndex:
        """The vector index (read from its folder on first use, with :meth:`get_embed_model`)."""
        if self.index is None:
            raise InputDataError("No index was given: give index=FOLDER or a VectorStoreIndex.")

        def load() -> VectorStoreIndex:
            if isinstance(self.index, VectorStoreIndex):
                return self.index
            from llama_index_kgplus._indexing import load_index

            return load_index(self.index, embed_model=self.get_embed_model(), check=False)

        return self._once("index", load)  # type: ignore[no-any-return]

    def get_graphrag_index(self) -> Any:
        """The :class:`~llama_index_kgplus.graphrag.GraphRAGIndex` of ``graphrag`` with :meth:`get_llm`, opened on
        first use and closed by :meth:`close`."""
        if self.graphrag is None:
            raise InputDataError("No GraphRAG store was given: give graphrag=FOLDER or a GraphRAGIndex.")

        def load() -> Any:
            from llama_index_kgplus.graphrag import GraphRAGIndex

            if isinstance(self.graphrag, GraphRAGIndex):
                return self.graphrag
            opened = GraphRAGIndex.from_defaults(self.graphrag, llm=self.get_llm(), show_progress=False)
            self._stack.callback(opened.close)
            return opened

        return self._once("graphrag", load)

    # ------------------------------------------------------------------ router, retrievers, engines

    def router(self) -> Any:
        """The fitted :class:`~llama_index_kgplus.router.QuestionRouter`, with the entities of the knowledge graph
        and the terms of the tables as features."""

        def build() -> Any:
            from llama_index_kgplus.router import QuestionRouter
            from llama_index_kgplus.router._features import kg_entity_feature, table_feature

            features = []
            if self.knowledge_graph is not None:
                features.append(kg_entity_feature(self.knowledge_graph.entity_matcher()))
            if self.sql_tables is not None:
                features.append(table_feature(self.sql_tables))
            return QuestionRouter.from_defaults(self.get_embed_model(), features=features).fit()

        return self._once("router", build)

    def _require_route(self, route: str) -> None:
        if route == "multihop" and route not in self.routes and isinstance(self.index, _PATH):
            from llama_index_kgplus.entity_graph import EntityGraph

            EntityGraph.require(self.index)  # the error says how to build one
        if route not in self.routes:
            raise InputDataError(
                f"No {route} route: the sources answer {', '.join(self.routes) or 'nothing'} (give the source "
                f"it needs)."
            )

    def retriever(self, route: str) -> BaseRetriever:
        """The retriever of ``local`` (hierarchical), ``multihop`` (entity graph) or ``kg`` (KG paths); global and
        table questions are answered by engines that do not retrieve passages."""
        self._require_route(route)
        builders = {"local": self._local_retriever, "multihop": self._multihop_retriever, "kg": self._kg_retriever}
        if route not in builders:
            raise InputDataError(f"The {route} route has no retriever: use query_engine({route!r}).")
        return self._once(f"retriever:{route}", builders[route])  # type: ignore[no-any-return]

    def _local_retriever(self) -> BaseRetriever:
        from llama_index_kgplus.hierarchy import HierarchicalRetriever
        from llama_index_kgplus.hierarchy._retriever import default_mode, manifest_root_ids

        index = self.get_index()
        roots = manifest_root_ids(self.index, index.docstore) if isinstance(self.index, _PATH) else None
        mode = self.retrieval_mode or default_mode(roots)
        settings = {"embed_model": self.get_embed_model(), **self.retriever_kwargs.get("local", {})}
        return HierarchicalRetriever.from_index(
            index, mode=mode, similarity_top_k=self.similarity_top_k, root_ids=roots, **settings
        )

    def _multihop_retriever(self) -> BaseRetriever:
        from llama_index_kgplus.entity_graph import EntityGraphRetriever

        persist_dir = Path(self.index) if isinstance(self.index, _PATH) else None
        settings = {"similarity_top_k": self.similarity_top_k, **self.retriever_kwargs.get("multihop", {})}
        retriever = EntityGraphRetriever.from_index(
            self.get_index(), self.entity_graph, persist_dir=persist_dir, embed_model=self.get_embed_model(), **settings
        )
        retriever.warm_up()
        return retriever

    def _kg_retriever(self) -> Any:
        from llama_index_kgplus.kg import KGPathRetriever

        return KGPathRetriever.from_defaults(self.knowledge_graph, **self.retriever_kwargs.get("kg", {}))

    def query_engine(self, route: str) -> BaseQueryEngine:
        """The query engine of ``route``, built on first use."""
        self._require_route(route)
        builders = {
            "local": self._local_engine,
            "multihop": lambda: self._passage_engine(self.retriever("multihop")),
            "kg": self._kg_engine,
            "global": lambda: self.get_graphrag_index().as_query_engine(show_progress=False),
            "sql": self._sql_engine,
        }
        return self._once(f"engine:{route}", builders[route])  # type: ignore[no-any-return]

    def node_postprocessors(self, llm: LLM | None = None) -> list[Any]:
        """What the passage engines put between retrieval and the LLM: the context compressor (nothing without
        ``context_budget``), its budget counted in ``llm``'s tokens (None: a generic tokenizer, no LLM loads)."""
        from llama_index_kgplus.compression._apply import postprocessors_for

        return postprocessors_for(None, self.context_budget, embed_model=self.get_embed_model(), llm=llm)

    def _passage_engine(self, retriever: BaseRetriever) -> BaseQueryEngine:
        from llama_index.core.query_engine import RetrieverQueryEngine

        llm = self.get_llm()
        return RetrieverQueryEngine.from_args(
            retriever, llm=llm, node_postprocessors=self.node_postprocessors(llm), streaming=self.streaming
        )

    def _local_engine(self) -> BaseQueryEngine:
        glossary = self.loaded_glossary
        if glossary is None:
            return self._passage_engine(self.retriever("local"))
        from llama_index_kgplus.glossary import GlossaryQueryEngine

        return GlossaryQueryEngine.from_defaults(
            glossary, retriever=self.retriever("local"), llm=self.get_llm(), embed_model=self.get_embed_model(),
            mode=self.glossary_mode, node_postprocessors=self.node_postprocessors(self.get_llm()),
            streaming=self.streaming,
        )  # fmt: skip

    def _kg_engine(self) -> BaseQueryEngine:
        from llama_index_kgplus.kg import KGAugmentedQueryEngine

        passages = self.retriever("local") if "local" in self.routes else None
        return KGAugmentedQueryEngine.from_defaults(
            self._once("retriever:kg", self._kg_retriever), passages, llm=self.get_llm(), streaming=self.streaming
        )

    def _sql_engine(self) -> BaseQueryEngine:
        from llama_index_kgplus.tables import TableQueryEngine

        return TableQueryEngine.from_defaults(self.sql_tables, llm=self.get_llm())

    def query_engines(self) -> dict[str, Callable[[], BaseQueryEngine]]:
        """A factory per route (each engine is built on its first question), for
        :class:`~llama_index_kgplus.router.RoutedQueryEngine`."""
        return {route: functools.partial(self.query_engine, route) for route in self.routes}

    def routed_query_engine(self) -> Any:
        """The :class:`~llama_index_kgplus.router.RoutedQueryEngine` over every route: each response carries
        ``route``, ``engine``, ``routing`` and ``usage`` in its metadata."""

        def build() -> Any:
            from llama_index_kgplus.router import RoutedQueryEngine

            return RoutedQueryEngine.from_defaults(self.query_engines(), router=self.router(), llm=self.get_llm())

        return self._once("routed", build)


def _model(value: Any, from_spec: Callable[[Any], Any], field: str) -> Any:
    """The model ``value`` names: itself, the model of a spec, or (None) the one of ``Settings``."""
    if isinstance(value, (str, ModelSpec)):
        return from_spec(value)
    if value is not None:
        return value
    try:
        return getattr(Settings, field)
    except Exception as exc:  # Settings falls back to OpenAI, which is usually not installed here
        raise KGPlusSetupError(
            f"No {field} was given and Settings.{field} has none: pass {field}=... (a model or a model spec, "
            "e.g. 'local' for the packaged embedding model or 'qwen2.5-coder-1.5b' for the packaged LLM)."
        ) from exc
