"""The public API: which names are public, that they stay few and documented, and that every name that left it
still imports from its old path for one release with a DeprecationWarning naming its replacement.

A name is public when it is in the ``__all__`` of a module whose dotted path has no component starting with ``_``.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import warnings
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import griffe
import pytest
from pydantic import BaseModel

import llama_index_kgplus

PACKAGE = Path(llama_index_kgplus.__file__).parent
TOP_LEVEL_LIMIT = 30
DISTINCT_LIMIT = 120
#: the public ``__all__`` lists of release 0.1.0 (before issue 42): every name here that is no longer public in its
#: module must still import from it, with a DeprecationWarning
OLD_API = {
    "llama_index_kgplus": """
        __version__ AbstractiveSummarizer agenerate_json build_index DriftGuard ENGINE_NAMES EntityGraph
        EntityGraphRetriever EntityLinker EntityMatcher ExtractiveSummarizer generate_json GlobalSearchEngine Glossary
        GlossaryEntry GlossaryQueryEngine GlossaryQueryRewriter GlossaryTermSelector GraphRAGIndex GraphStoreError
        GraphStoreURI HierarchicalRetriever import_kg InputDataError KGAugmentedQueryEngine KGPathFinder
        KGPathRetriever KGPathSubRetriever KGPlusError KGPlusSetupError KGPlusSources KnowledgeGraph load_corpus
        load_index NotFittedError open_graph_store RaptorSummaryNodeBuilder RayExecutor
        SemanticChunkingSummaryNodeBuilder StructuredOutputError SummarizationError Summarizer TwoStageSummarizer
    """,
    "llama_index_kgplus.cli": """
        build_parser command_parsers main
    """,
    "llama_index_kgplus.compression": """
        arun_postprocessors COMPRESSION_KEY ContextCompressor DEFAULT_CONTEXT_BUDGET join_units postprocessors_for
        query_with_hints run_postprocessors split_units Unit
    """,
    "llama_index_kgplus.corpus": """
        load_corpus
    """,
    "llama_index_kgplus.defaults": """
        default_graph_store_path DEFAULT_LLM EMBED_MODEL_ENV embed_model_path ensure_writable_dir FAST_LLM gguf_path
        GGUFModel GRAPH_STORE_ENV HOME_ENV kgplus_home LLM_ENV models_dir MODELS_DIR_ENV verify_gguf
    """,
    "llama_index_kgplus.demo": """
        run_demo workbench_command
    """,
    "llama_index_kgplus.doctor": """
        Check run_doctor
    """,
    "llama_index_kgplus.entity_graph": """
        ENTITIES_KEY Entity entity_key ENTITY_SOURCES EntityDictionary EntityGraph EntityGraphRetriever EntityLinker
        EntityMatch GRAPH_FILE GraphRetrievalSettings is_linkable_name MENTIONS METADATA_KEY parse_sources
        personalized_pagerank RELATIONSHIPS_KEY SAME_AS SpacyEntityExtractor strip_qualifier transition_matrix
    """,
    "llama_index_kgplus.errors": """
        GeneratedQueryError GraphStoreError InputDataError KGPlusError KGPlusSetupError ModelServerError
        NotFittedError QueryCheckError QueryTimeoutError StructuredOutputError SummarizationError UnsafeQueryError
    """,
    "llama_index_kgplus.evaluation": """
        answer_contains AnswerCorrectness AnswerRelevance AnswerSimilarity average_precision build_pipelines
        ContextPrecision ContextRecall DEFAULT_METRICS EvalRunner EvalSample exact_match f1_from_counts Faithfulness
        hit_at_k load_dataset markdown_table mean_ci MetricResult METRICS mrr normalize_answer paired_differences
        PipelineContext PIPELINES recall_at_k register_pipeline RETRIEVAL_METRICS ScoreRecord SHORT_ANSWER_METRICS
        summarize token_f1 write_report
    """,
    "llama_index_kgplus.events": """
        CompressionEvent CypherGeneratedEvent EntityGraphSeedsEvent EntityGraphWalkEvent GeneratedQueryEvent
        GlobalSearchMapEvent GlobalSearchReduceEvent GlossaryRewriteEvent KGEntitiesEvent KGPathsEvent
        RouteDecisionEvent SQLGeneratedEvent SummaryLevelEvent
    """,
    "llama_index_kgplus.files": """
        atomic_open atomic_write_bytes atomic_write_json atomic_write_text read_utf8 sha256_file
    """,
    "llama_index_kgplus.glossary": """
        clean_rewrite DEFAULT_GLOSSARY_CONTEXT_PROMPT DEFAULT_MODE DEFAULT_REWRITE_PROMPT DriftGuard Glossary
        GlossaryEntry GlossaryQueryEngine GlossaryQueryRewriter GlossaryRetrieval GlossarySelection
        GlossaryTermSelector GuardVerdict load_glossary QueryRewrite reciprocal_rank_fusion RETRIEVAL_MODES
        RetrievalMode ReviewHook SelectedEntry
    """,
    "llama_index_kgplus.graph_stores": """
        default_graph_store_uri dialect_for_engine dialect_for_store GraphDialect GraphDriver GraphLayout
        GraphStoreURI IDENTIFIER_RE ladybug_uri LadybugGraphStore MAX_HOPS_LIMIT NodeRecord open_graph_store
        quote_identifier RawPath record_connection RelRecord StoreAPIDialect
    """,
    "llama_index_kgplus.graphrag": """
        AsyncioExecutor BaseExecutor Citations cite_sources Community CommunityDetector CommunityReport
        CommunityReportGenerator Entity ExtractedEntity ExtractedRelationship ExtractionResult Finding
        GlobalSearchEngine GRAPH_FILE GraphDiff GraphExtractor GraphRAGIndex GraphSink IndexStats KeyPoint
        LadybugGraphSink LLMTask LLMUsage MapAnswer merge_extractions metered MeteredLLM normalize_name
        PropertyGraphStoreSink RayExecutor Relationship ReportContext require_store STATE_FILE StoredReport
        TaskOutcome truncated_json_candidates usage_meter UsageMeter
    """,
    "llama_index_kgplus.hierarchy": """
        BaseSummaryNodeBuilder CHILD_COUNT_KEY default_mode DOC_IDS_KEY FailedCluster HierarchicalRetriever LEVEL_KEY
        MANIFEST_FILE manifest_root_ids node_doc_ids node_level PARENT_IDS_KEY RaptorSummaryNodeBuilder read_manifest
        RetrievalMode SemanticChunkingSummaryNodeBuilder similarity_threshold write_manifest
    """,
    "llama_index_kgplus.indexing": """
        build_index check_embed_model check_index_files DEFAULT_CHUNK_OVERLAP DEFAULT_CHUNK_SIZE index_embed_model
        INGEST_FILE load_index persist_index persist_storage require_index
    """,
    "llama_index_kgplus.jsonl": """
        id_field iter_jsonl text_field
    """,
    "llama_index_kgplus.kg": """
        ArrowReversal ChainCheck CountCheck CypherAnswer CypherQueryCheck CypherQueryEngine CypherQueryRewrite
        CypherQuestion CypherRepair CypherSecondTry DEFAULT_CYPHER_REPAIRS default_cypher_repairs describe_graph
        EntitiesForGroups EntityMatcher EntityMention GraphSnapshot GroupsReturnedCheck GroupValueCheck import_kg
        ImportReport KG_FACTS_SUMMARY_TEMPLATE KG_FACTS_TEXT_QA_TEMPLATE KG_SUMMARY_TEMPLATE KG_TEXT_QA_TEMPLATE
        KGAugmentedQueryEngine KGData KGManifest KGPath KGPathFinder KGPathResult KGPathRetriever KGPathSubRetriever
        KindAsPropertyRewrite KnowledgeGraph NameCheck neo4j_admin_import_command OneChainFallback PathNode
        PathRelationship read_kg_csv read_only_cypher render_facts render_path
    """,
    "llama_index_kgplus.llm": """
        acomplete_response acomplete_text AnswerUsage attach_usage complete_response complete_text
        describe_server_error embed_model_from_spec embed_model_identity format_usage is_llama_cpp is_metered
        llama_complete llama_vocabulary llm_from_spec LLMUsage local_llama metered MeteredLLM ModelSpec
        parse_model_spec repeats_itself resolve_model_spec TokenCounter usage_meter UsageMeter
    """,
    "llama_index_kgplus.router": """
        choose_engine EngineChoice EXAMPLES_PATH JSONSingleSelector kg_entity_feature load_examples QuestionRouter
        ROUTE_DESCRIPTIONS RouteDecision RoutedQueryEngine RouteFeature ROUTES table_feature
    """,
    "llama_index_kgplus.sample": """
        SAMPLE_DIR SAMPLE_DOCS sample_glossary_path SAMPLE_KG_NODES SAMPLE_KG_RELATIONSHIPS SAMPLE_MULTIHOP_DOCS
        SAMPLE_MULTIHOP_QUESTIONS SAMPLE_STOCKS_TABLE SAMPLE_WEATHER_TABLE
    """,
    "llama_index_kgplus.structured": """
        agenerate_json generate_json parse_json_object truncated_json_candidates
    """,
    "llama_index_kgplus.summarizers": """
        AbstractiveSummarizer BaseSummarizer DEFAULT_SUMMARY_PROMPT ExtractiveSummarizer split_sentences
        SummarizationError Summarizer TwoStageSummarizer
    """,
    "llama_index_kgplus.tables": """
        read_only_select SQLAnswer SQLResult SQLTables table_kind TableQueryEngine TableRetriever
    """,
    "llama_index_kgplus.testing": """
        ArcadeDB arcadedb_server falkordb_server free_port llama_cpp_server ScriptedLLM
    """,
    "llama_index_kgplus.text": """
        ends_sentence normalize_phrase PhraseMatch PhraseMatcher questions_in split_sentences
    """,
    "llama_index_kgplus.ui": """
        Answer CONFIG_ENV escape_label escape_text EvalFolder evidence_items EvidenceItem glossary_view highlight_html
        matching_sentences paths_dot safe_path walk_dot why_line Workbench WorkbenchConfig
    """,
    "llama_index_kgplus.vectors": """
        cosine mean_pairwise_cosine unit unit_rows
    """,
}


def _public_module_names() -> list[str]:
    """Every module of the package whose dotted path has no private component and that has an ``__all__`` (read
    from the source: ``ui/app.py`` is the Streamlit page and must not be imported here)."""
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        if any(part.startswith("_") for part in parts):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(
            isinstance(n, ast.Assign | ast.AnnAssign) and "__all__" in ast.unparse(n).split("=")[0] for n in tree.body
        ):
            names.append(".".join(parts))
    return names


@cache
def _public() -> dict[str, ModuleType]:
    return {name: importlib.import_module(name) for name in _public_module_names()}


def _public_names() -> list[tuple[str, str]]:
    return [(module, name) for module, mod in _public().items() for name in mod.__all__]


def _public_objects() -> dict[tuple[str, str], Any]:
    return {(module, name): getattr(_public()[module], name) for module, name in _public_names()}


def _own_doc(obj: Any) -> str:
    """The docstring an object has itself (a class does not inherit one; a dataclass's generated signature is
    not a docstring)."""
    doc = vars(obj).get("__doc__") if inspect.isclass(obj) else getattr(obj, "__doc__", None)
    if inspect.isclass(obj) and doc and doc.startswith(f"{obj.__name__}("):
        return ""
    return (doc or "").strip()


@cache
def _griffe_package() -> griffe.Object:
    return griffe.load("llama_index_kgplus", search_paths=[str(PACKAGE.parent)], resolve_aliases=True)


def _attribute_doc(module: str, name: str) -> str:
    """The docstring of a constant or type alias (the string under its assignment, as mkdocstrings reads it)."""
    parts = module.split(".")[1:]
    obj = _griffe_package()[".".join([*parts, name])]
    return obj.docstring.value.strip() if obj.docstring else ""


def test_public_modules_are_the_expected_ones():
    assert set(_public()) == {
        "llama_index_kgplus", "llama_index_kgplus.errors", "llama_index_kgplus.events",
        "llama_index_kgplus.hierarchy", "llama_index_kgplus.summarizers", "llama_index_kgplus.glossary",
        "llama_index_kgplus.kg", "llama_index_kgplus.entity_graph", "llama_index_kgplus.graphrag",
        "llama_index_kgplus.router", "llama_index_kgplus.tables", "llama_index_kgplus.compression",
        "llama_index_kgplus.evaluation", "llama_index_kgplus.llm", "llama_index_kgplus.graph_stores",
        "llama_index_kgplus.sample", "llama_index_kgplus.cli", "llama_index_kgplus.ui",
        # stubs left at the old paths of modules that went private: no public name, only deprecated ones
        "llama_index_kgplus.defaults", "llama_index_kgplus.demo", "llama_index_kgplus.doctor",
        "llama_index_kgplus.files", "llama_index_kgplus.jsonl", "llama_index_kgplus.indexing",
        "llama_index_kgplus.corpus", "llama_index_kgplus.structured", "llama_index_kgplus.testing",
        "llama_index_kgplus.vectors", "llama_index_kgplus.text",
    }  # fmt: skip


def test_the_api_stays_small():
    distinct = {name for _, name in _public_names()}
    assert len(llama_index_kgplus.__all__) <= TOP_LEVEL_LIMIT
    assert len(distinct) <= DISTINCT_LIMIT, len(distinct)
    for module, mod in _public().items():
        assert len(mod.__all__) == len(set(mod.__all__)), module


def test_no_name_means_two_things():
    seen: dict[str, tuple[str, Any]] = {}
    collisions = []
    for (module, name), obj in _public_objects().items():
        if name in seen and seen[name][1] is not obj:
            collisions.append(f"{name}: {seen[name][0]} and {module}")
        seen.setdefault(name, (module, obj))
    assert collisions == []


def test_every_public_name_has_a_docstring():
    missing = []
    for (module, name), obj in _public_objects().items():
        if name.startswith("__"):  # __version__
            continue
        if inspect.isclass(obj) or inspect.isfunction(obj):
            doc = _own_doc(obj)
        else:
            doc = _attribute_doc(module, name)
        if not doc:
            missing.append(f"{module}.{name}")
    assert missing == []


def _own_methods(cls: type) -> dict[str, Any]:
    """The public methods and properties defined on ``cls`` itself, in this package (not inherited from
    LlamaIndex or pydantic)."""
    found = {}
    for name, value in vars(cls).items():
        if name.startswith("_"):
            continue
        func = value.__func__ if isinstance(value, classmethod | staticmethod) else value
        func = func.fget if isinstance(func, property) else getattr(func, "func", func)  # cached_property
        if inspect.isfunction(func) and func.__module__.startswith("llama_index_kgplus"):
            found[name] = func
    return found


def test_every_public_method_has_a_docstring():
    missing = []
    for (module, name), obj in _public_objects().items():
        if inspect.isclass(obj):
            missing += [f"{module}.{name}.{m}" for m, func in _own_methods(obj).items() if not _own_doc(func)]
    assert sorted(set(missing)) == []


def test_every_public_class_shows_how_to_use_it():
    without = [
        f"{module}.{name}"
        for (module, name), obj in _public_objects().items()
        if inspect.isclass(obj) and "```python" not in _own_doc(obj) and ">>>" not in _own_doc(obj)
    ]
    assert without == []


def test_public_classes_and_functions_are_named_by_their_public_path():
    top = set(llama_index_kgplus.__all__)
    wrong = []
    for (module, name), obj in _public_objects().items():
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        expected = "llama_index_kgplus" if name in top else module
        # pickle finds the object again by module and qualified name
        if obj.__module__ != expected or getattr(importlib.import_module(obj.__module__), obj.__qualname__) is not obj:
            wrong.append(f"{module}.{name}: {obj.__module__}")
    assert wrong == []


def test_public_pydantic_models_are_complete_after_the_move():
    # a model whose annotations were left to resolve later would look them up in its new (public) module
    incomplete = [
        f"{module}.{name}"
        for (module, name), obj in _public_objects().items()
        if inspect.isclass(obj) and issubclass(obj, BaseModel) and not obj.__pydantic_complete__
    ]
    assert incomplete == []


def _old_names() -> list[tuple[str, str]]:
    return [(module, name) for module, names in OLD_API.items() for name in names.split()]


def test_old_api_listing_is_the_recorded_one():
    assert len({name for _, name in _old_names()}) == 363


_REPLACEMENT = re.compile(r"\(from ([\w.]+) import (\w+)\)|lives in ([\w.]+) as (\w+)")


@pytest.mark.parametrize(("module", "name"), _old_names(), ids=lambda v: v)
def test_every_old_name_still_imports(module, name):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        namespace: dict[str, Any] = {}
        exec(f"from {module} import {name} as value", namespace)
    deprecations = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    if name in getattr(importlib.import_module(module), "__all__", []):
        assert deprecations == []
        return
    assert len(deprecations) == 1, [str(w.message) for w in caught]
    message = str(deprecations[0].message)
    assert f"{module}.{name} " in message
    found = _REPLACEMENT.search(message)
    assert found, message
    new_module, new_name = found.group(1) or found.group(3), found.group(2) or found.group(4)
    assert getattr(importlib.import_module(new_module), new_name) is namespace["value"]
    if found.group(1):  # a public replacement: named in that module's __all__
        assert new_name in importlib.import_module(new_module).__all__
        if new_name != name:
            assert f"use {new_name}" in message
    else:
        assert "internal" in message and "next release" in message
        assert any(part.startswith("_") for part in [*new_module.split("."), new_name])


def test_an_unknown_name_is_still_an_error():
    for module in OLD_API:
        mod = importlib.import_module(module)
        with pytest.raises(AttributeError):
            mod.no_such_name  # noqa: B018
        with pytest.raises(ImportError):
            exec(f"from {module} import no_such_name", {})


def test_renamed_retrieval_modes():
    from llama_index_kgplus.glossary import GlossaryRetrievalMode
    from llama_index_kgplus.hierarchy import HierarchicalRetrievalMode

    assert set(HierarchicalRetrievalMode.__args__) == {"collapsed", "tree", "evidence"}
    assert set(GlossaryRetrievalMode.__args__) == {"fused", "rewritten", "original"}


def test_llamahub_lists_public_classes_only():
    import tomllib

    authors = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["llamahub"]
    public_classes = {name for (_, name), obj in _public_objects().items() if inspect.isclass(obj)}
    assert authors["import_path"] == "llama_index_kgplus" and authors["contains_example"] is True
    assert sorted(set(authors["class_authors"]) - public_classes) == []
