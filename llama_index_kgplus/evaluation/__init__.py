"""Evaluation harness: RAGAS-style metrics computed offline, pipeline comparison tables and plots."""

from llama_index_kgplus.evaluation._dataset import EvalSample, load_dataset
from llama_index_kgplus.evaluation._metrics import (
    METRICS,
    AnswerCorrectness,
    AnswerRelevance,
    AnswerSimilarity,
    ContextPrecision,
    ContextRecall,
    Faithfulness,
    MetricResult,
    average_precision,
    f1_from_counts,
)
from llama_index_kgplus.evaluation._pipelines import PIPELINES, PipelineContext, build_pipelines, register_pipeline
from llama_index_kgplus.evaluation._report import markdown_table, paired_differences, summarize, write_report
from llama_index_kgplus.evaluation._retrieval import hit_at_k, mrr, recall_at_k
from llama_index_kgplus.evaluation._runner import DEFAULT_METRICS, RETRIEVAL_METRICS, EvalRunner, ScoreRecord
from llama_index_kgplus.evaluation._short_answer import (
    SHORT_ANSWER_METRICS,
    answer_contains,
    exact_match,
    normalize_answer,
    token_f1,
)
from llama_index_kgplus.evaluation._stats import mean_ci

__all__ = [
    "DEFAULT_METRICS",
    "METRICS",
    "PIPELINES",
    "RETRIEVAL_METRICS",
    "SHORT_ANSWER_METRICS",
    "AnswerCorrectness",
    "AnswerRelevance",
    "AnswerSimilarity",
    "ContextPrecision",
    "ContextRecall",
    "EvalRunner",
    "EvalSample",
    "Faithfulness",
    "MetricResult",
    "PipelineContext",
    "ScoreRecord",
    "answer_contains",
    "average_precision",
    "build_pipelines",
    "exact_match",
    "f1_from_counts",
    "hit_at_k",
    "load_dataset",
    "markdown_table",
    "mean_ci",
    "mrr",
    "normalize_answer",
    "paired_differences",
    "recall_at_k",
    "register_pipeline",
    "summarize",
    "token_f1",
    "write_report",
]
