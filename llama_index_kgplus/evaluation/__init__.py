"""Evaluation harness: RAGAS-style metrics computed offline, pipeline comparison tables and plots."""

from llama_index_kgplus._deprecation import deprecated_names
from llama_index_kgplus._public import set_public_module
from llama_index_kgplus.evaluation._dataset import EvalSample, load_dataset
from llama_index_kgplus.evaluation._metrics import (
    AnswerCorrectness,
    AnswerRelevance,
    AnswerSimilarity,
    ContextPrecision,
    ContextRecall,
    Faithfulness,
)
from llama_index_kgplus.evaluation._pipelines import PipelineContext, build_pipelines, register_pipeline
from llama_index_kgplus.evaluation._report import write_report
from llama_index_kgplus.evaluation._runner import EvalRunner
from llama_index_kgplus.evaluation._short_answer import answer_contains, token_f1

__all__ = [
    "EvalRunner",
    "EvalSample",
    "load_dataset",
    "write_report",
    "register_pipeline",
    "build_pipelines",
    "PipelineContext",
    "AnswerCorrectness",
    "AnswerRelevance",
    "AnswerSimilarity",
    "ContextPrecision",
    "ContextRecall",
    "Faithfulness",
    "answer_contains",
    "token_f1",
]
set_public_module(__name__, globals(), __all__)

# Names that left the public API: importable for one more release, with a DeprecationWarning.
__getattr__ = deprecated_names(
    __name__,
    {
        "average_precision": "llama_index_kgplus.evaluation._metrics:average_precision",
        "DEFAULT_METRICS": "llama_index_kgplus.evaluation._runner:DEFAULT_METRICS",
        "exact_match": "llama_index_kgplus.evaluation._short_answer:exact_match",
        "f1_from_counts": "llama_index_kgplus.evaluation._metrics:f1_from_counts",
        "hit_at_k": "llama_index_kgplus.evaluation._retrieval:hit_at_k",
        "markdown_table": "llama_index_kgplus.evaluation._report:markdown_table",
        "mean_ci": "llama_index_kgplus.evaluation._stats:mean_ci",
        "MetricResult": "llama_index_kgplus.evaluation._metrics:MetricResult",
        "METRICS": "llama_index_kgplus.evaluation._metrics:METRICS",
        "mrr": "llama_index_kgplus.evaluation._retrieval:mrr",
        "normalize_answer": "llama_index_kgplus.evaluation._short_answer:normalize_answer",
        "paired_differences": "llama_index_kgplus.evaluation._report:paired_differences",
        "PIPELINES": "llama_index_kgplus.evaluation._pipelines:PIPELINES",
        "recall_at_k": "llama_index_kgplus.evaluation._retrieval:recall_at_k",
        "RETRIEVAL_METRICS": "llama_index_kgplus.evaluation._runner:RETRIEVAL_METRICS",
        "ScoreRecord": "llama_index_kgplus.evaluation._runner:ScoreRecord",
        "SHORT_ANSWER_METRICS": "llama_index_kgplus.evaluation._short_answer:SHORT_ANSWER_METRICS",
        "summarize": "llama_index_kgplus.evaluation._report:summarize",
    },
)
