"""Evaluation harness: hand-checkable metric cases, judge failures, caching/resume, reports, `kgplus eval`."""

from __future__ import annotations

import asyncio
import json
import math
import re

import pytest
from llama_index.core.base.response.schema import Response
from llama_index.core.query_engine import CustomQueryEngine
from llama_index.core.schema import NodeWithScore, TextNode

from llama_index_kgplus._testing import ScriptedLLM
from llama_index_kgplus.errors import InputDataError
from llama_index_kgplus.evaluation import (
    AnswerCorrectness,
    AnswerRelevance,
    AnswerSimilarity,
    ContextPrecision,
    EvalRunner,
    EvalSample,
    Faithfulness,
    _judge,
    load_dataset,
    write_report,
)
from llama_index_kgplus.evaluation._judge import grounded
from llama_index_kgplus.evaluation._metrics import average_precision, f1_from_counts
from llama_index_kgplus.evaluation._report import paired_differences
from llama_index_kgplus.evaluation._retrieval import hit_at_k, mrr, recall_at_k
from llama_index_kgplus.evaluation._runner import ScoreRecord
from llama_index_kgplus.evaluation._stats import mean_ci


def JudgeLLM(rules: list[tuple[str, str]]) -> ScriptedLLM:  # noqa: N802 - reads like the class it stands for
    """A scripted LLM judge: replies are chosen by matching the prompt, so tests can hand-check the arithmetic
    and reproduce a judge that returns unparseable output (the real local model cannot do either on demand)."""
    return ScriptedLLM(rules=rules, default="I cannot do that.", model_name="judge")


def verdict(flag: bool) -> str:
    return json.dumps({"reason": "r", "verdict": "yes" if flag else "no"})


# ------------------------------------------------------------------ pure formulas


def test_retrieval_metrics_by_hand():
    retrieved = ["a", "a", "b", "c", "d"]  # duplicates count once
    assert hit_at_k(retrieved, ["c"], 2) == 0.0
    assert hit_at_k(retrieved, ["c"], 3) == 1.0
    assert recall_at_k(retrieved, ["b", "z"], 5) == 0.5
    assert mrr(retrieved, ["c", "d"]) == pytest.approx(1 / 3)
    assert mrr(retrieved, ["z"]) == 0.0
    with pytest.raises(ValueError):
        recall_at_k(retrieved, [], 5)


def _strings(schema: dict) -> list[dict]:
    if schema.get("type") == "string" and "enum" not in schema:
        return [schema]
    nested = [*schema.get("properties", {}).values(), *([schema["items"]] if "items" in schema else [])]
    return [s for sub in nested for s in _strings(sub)]


@pytest.mark.parametrize("schema", [_judge._Statements, _judge._Verdict, _judge._Questions])
def test_every_free_text_field_of_a_judge_reply_has_a_length_bound(schema):
    # under the local grammar the bound ends a string a small model would otherwise loop in to the token limit
    strings = _strings(schema.model_json_schema())
    assert strings and all(0 < s.get("maxLength", 0) <= 300 for s in strings)


def test_f1_average_precision_and_ci_by_hand():
    assert f1_from_counts(2, 1, 1) == pytest.approx(2 / 3)
    assert f1_from_counts(0, 0, 0) == 1.0
    assert average_precision([True, False, True]) == pytest.approx((1 + 2 / 3) / 2)
    assert average_precision([False, False]) == 0.0
    mean, low, high = mean_ci([0.0, 1.0])
    # t(0.975, df=1) = 12.706; sd = 0.7071; half width = 12.706 * 0.7071 / sqrt(2) = 6.353
    assert (mean, round(low, 3), round(high, 3)) == (0.5, -5.853, 6.853)
    assert mean_ci([0.0, 1.0], bounds=(0.0, 1.0)) == (0.5, 0.0, 1.0)


# ------------------------------------------------------------------ LLM metrics with a scripted judge


async def test_answer_correctness_combines_f1_and_similarity(embed_model):
    judge = JudgeLLM(
        rules=[
            (r"Answer: Paris is the capital", json.dumps({"statements": ["Paris is the capital.", "Paris is big."]})),
            (
                r"Answer: The capital of France",
                json.dumps({"statements": ["The capital is Paris.", "It has 2M people.", "It is on the Seine."]}),
            ),
            # answer statements vs ground truth: TP=1, FP=1
            (r"Ground truth:.*Statement: Paris is the capital", verdict(True)),
            (r"Ground truth:.*Statement: Paris is big", verdict(False)),
            # ground-truth statements vs answer: FN=2
            (r"Answer:\n.*Statement: The capital is Paris", verdict(True)),
            (r"Answer:\n.*Statement: It ", verdict(False)),
        ]
    )
    answer = "Paris is the capital of France and it is big."
    truth = "The capital of France is Paris, with 2M people, on the Seine."
    result = await AnswerCorrectness(llm=judge, embed_model=embed_model).aevaluate(
        query="What is the capital of France?", response=answer, reference=truth
    )
    sim = (await AnswerSimilarity(embed_model=embed_model).aevaluate(response=answer, reference=truth)).score
    f1 = 1 / (1 + 0.5 * (1 + 2))
    assert (result.details["tp"], result.details["fp"], result.details["fn"]) == (1, 1, 2)
    assert result.details["f1"] == pytest.approx(f1)
    assert result.score == pytest.approx(0.75 * f1 + 0.25 * sim)
    assert result.details["answer_verdicts"][1] == {"statement": "Paris is big.", "verdict": False, "reason": "r"}


async def test_answer_similarity_with_real_embeddings(embed_model):
    same = await AnswerSimilarity(embed_model=embed_model).aevaluate(response="A cat sat.", reference="A cat sat.")
    near = await AnswerSimilarity(embed_model=embed_model).aevaluate(
        response="Use a virtual environment.", reference="Create a venv for your project."
    )
    far = await AnswerSimilarity(embed_model=embed_model).aevaluate(
        response="Use a virtual environment.", reference="Floating point numbers are binary fractions."
    )
    assert same.score == pytest.approx(1.0, abs=1e-5)
    assert near.score > far.score


async def test_answer_relevance_is_zero_when_noncommittal(embed_model):
    judge = JudgeLLM(rules=[(r"questions", json.dumps({"questions": ["What is X?"], "noncommittal": True}))])
    result = await AnswerRelevance(llm=judge, embed_model=embed_model).aevaluate(
        query="What is X?", response="I don't know."
    )
    assert result.score == 0.0 and result.details["generated_questions"] == ["What is X?"]
    judge = JudgeLLM(
        rules=[(r"questions", json.dumps({"questions": ["What is X?", "Define X."], "noncommittal": False}))]
    )
    result = await AnswerRelevance(llm=judge, embed_model=embed_model).aevaluate(query="What is X?", response="X is Y.")
    assert result.details["similarities"][0] == pytest.approx(1.0, abs=1e-5)
    assert result.score == pytest.approx(sum(result.details["similarities"]) / 2)


async def test_faithfulness_and_context_precision_by_hand():
    judge = JudgeLLM(
        rules=[
            # the last "statement" is two sentences: judged as two
            (r"Break the answer", json.dumps({"statements": ["s1 holds.", "s2 holds.", "s3 fails. s4 holds."]})),
            (r"Statement: s3", verdict(False)),
            (r"Statement: s\d", verdict(True)),
            (r"Context: useful", json.dumps({"reason": "r", "verdict": "yes"})),
            (r"Context: noise", json.dumps({"reason": "r", "verdict": "no"})),
        ]
    )
    answer = "s1 holds. s2 holds. s3 fails. s4 holds."
    faith = await Faithfulness(llm=judge).aevaluate(query="q", response=answer, contexts=["c"])
    assert [v["statement"] for v in faith.details["verdicts"]] == ["s1 holds.", "s2 holds.", "s3 fails.", "s4 holds."]
    assert faith.score == 0.75
    precision = await ContextPrecision(llm=judge).aevaluate(
        query="q", contexts=["noise", "useful", "useful"], reference="t"
    )
    assert precision.score == pytest.approx((1 / 2 + 2 / 3) / 2)


async def test_invented_and_repeated_statements_are_dropped():
    """A real failure of the local 1.5B model: asked for the statements of a one-line answer, it listed facts of
    its own (and repeated itself)."""
    answer = "Environmental effects of humans and acquired abnormality are related."
    invented = ["Acquired abnormality can be caused by exposure to radiation.", "Acquired abnormality is a condition."]
    judge = JudgeLLM(
        rules=[
            (r"Break the answer", json.dumps({"statements": [answer, *invented, answer]})),
            (r"Statement: ", verdict(True)),
        ]
    )
    result = await Faithfulness(llm=judge).aevaluate(query="How are they related?", response=answer, contexts=["c"])
    # "Acquired abnormality is a condition." shares 2 of its 3 content words with the answer: kept, a limit of the
    # word-overlap check; the radiation one shares 2 of 5
    assert [v["statement"] for v in result.details["verdicts"]] == [answer, invented[1]]
    assert result.details["dropped_statements"] == [invented[0], answer]
    assert not grounded(invented[0], answer) and grounded("Acquired abnormalities are related", answer)


async def test_unparseable_judge_is_recorded_not_scored():
    judge = JudgeLLM(rules=[(r"Break the answer", "statements: maybe?")])
    result = await Faithfulness(llm=judge).aevaluate(query="q", response="a", contexts=["c"])
    assert result.invalid_result and result.score is None
    assert "after 3 tries" in result.invalid_reason
    assert judge.calls == 3  # retried before giving up
    missing = await Faithfulness(llm=judge).aevaluate(query="q", response="a")
    assert missing.invalid_result and "missing input: contexts" in missing.invalid_reason


async def test_one_unparseable_verdict_makes_the_score_invalid():
    judge = JudgeLLM(
        rules=[(r"Break the answer", json.dumps({"statements": ["s1.", "s2."]})), (r"Statement: s1", verdict(True))]
    )
    result = await Faithfulness(llm=judge).aevaluate(query="q", response="a", contexts=["c"])
    assert result.invalid_result and result.score is None and "_Verdict JSON after 3 tries" in result.invalid_reason


# ------------------------------------------------------------------ dataset, runner, report


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"ground_truth": "x"}', 'needs a non-empty "question"'),
        ('{"question": "q"}', 'needs "ground_truth", "answers" or "gold_ids"'),
        ('{"question": "q", "answers": [""]}', '"answers" must be a list of non-empty strings'),
        ('{"question": "q", "gold_ids": "a"}', "must be a list of strings"),
        ("{not json", "invalid JSON"),
    ],
)
def test_dataset_errors_name_the_line(tmp_path, line, message):
    path = tmp_path / "d.jsonl"
    path.write_text('{"question": "ok?", "ground_truth": "yes"}\n' + line + "\n")
    with pytest.raises(InputDataError, match=rf"d.jsonl:2: .*{re.escape(message)}"):
        load_dataset(path)


class ListingEngine(CustomQueryEngine):
    """A real query engine whose answer lists the retrieved document ids; fails on a chosen question to
    simulate an interrupted run."""

    fail_on: str | None = None
    answered: list[str] = []

    def custom_query(self, query_str: str) -> Response:
        if query_str == self.fail_on:
            raise KeyboardInterrupt
        self.answered.append(query_str)
        ids = ["doc-a", "doc-b"] if query_str.endswith(" a") else ["doc-c"]
        nodes = [NodeWithScore(node=TextNode(text=f"text of {i}", metadata={"doc_id": i}), score=1.0) for i in ids]
        return Response(response=" ".join(ids), source_nodes=nodes)


def test_runner_caches_and_resumes(tmp_path):
    samples = [
        EvalSample(question="about a", id="q1", gold_ids=("doc-b",)),
        EvalSample(question="about c", id="q2", gold_ids=("doc-x",)),
        EvalSample(question="about zz", id="q3", gold_ids=("doc-c",)),
    ]
    metrics = ["hit@5", "mrr"]
    with pytest.raises(KeyboardInterrupt):
        EvalRunner(
            samples, {"p": ListingEngine(fail_on="about c")}, tmp_path, metrics=metrics, show_progress=False
        ).run()
    engine = ListingEngine()
    records = EvalRunner(samples, {"p": engine}, tmp_path, metrics=metrics, show_progress=False).run()
    assert engine.answered == ["about c", "about zz"]  # q1 came from the cache
    scores = {(r.sample_id, r.metric): r.score for r in records}
    assert scores == {("q1", "hit@5"): 1.0, ("q1", "mrr"): 0.5, ("q2", "hit@5"): 0.0, ("q2", "mrr"): 0.0,
                      ("q3", "hit@5"): 1.0, ("q3", "mrr"): 1.0}  # fmt: skip
    with (tmp_path / "cache" / "scores.jsonl").open("a") as fh:
        fh.write('{"pipeline": "p", "sample_')  # a line cut short by a crash is ignored
    again = ListingEngine()
    assert len(EvalRunner(samples, {"p": again}, tmp_path, metrics=metrics, show_progress=False).run()) == 6
    assert again.answered == []
    # an edited dataset line: new gold ids are scored again, a new question is answered again
    samples[0] = EvalSample(question="about a", id="q1", gold_ids=("doc-a",))
    samples[2] = EvalSample(question="about zz?", id="q3", gold_ids=("doc-c",))
    edited = ListingEngine()
    records = EvalRunner(samples, {"p": edited}, tmp_path, metrics=metrics, show_progress=False).run()
    assert edited.answered == ["about zz?"]
    assert {(r.sample_id, r.metric): r.score for r in records}[("q1", "mrr")] == 1.0


class SlowEngine(ListingEngine):
    """ListingEngine whose async answer waits, so that overlapping questions can be counted."""

    in_flight: int = 0
    max_in_flight: int = 0

    async def acustom_query(self, query_str: str) -> Response:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0.02)
            return self.custom_query(query_str)
        finally:
            self.in_flight -= 1


@pytest.mark.parametrize("workers", [1, 3])
def test_workers_bound_the_questions_in_flight_and_score_the_same(tmp_path, workers):
    samples = [EvalSample(question=f"about {c}", id=f"q{i}", gold_ids=("doc-c",)) for i, c in enumerate("abcdefg")]
    with pytest.raises(KeyboardInterrupt):  # Ctrl-C in one worker stops them all; what finished stays cached
        EvalRunner(samples, {"p": SlowEngine(fail_on="about d", answered=[])}, tmp_path, metrics=["hit@5"],
                   show_progress=False, num_workers=workers).run()  # fmt: skip
    cached = (tmp_path / "cache" / "answers.jsonl").read_text().count("\n")
    engine = SlowEngine(answered=[])
    runner = EvalRunner(samples, {"p": engine}, tmp_path, metrics=["hit@5"], show_progress=False, num_workers=workers)
    records = runner.run()
    assert len(engine.answered) == len(samples) - cached and "about d" in engine.answered
    assert engine.max_in_flight == min(workers, len(samples) - cached)
    assert {r.sample_id: r.score for r in records} == {s.id: 0.0 if s.question.endswith(" a") else 1.0 for s in samples}
    with pytest.raises(InputDataError, match="num_workers must be at least 1"):
        EvalRunner(samples, {"p": engine}, tmp_path, num_workers=0)


def test_cache_made_with_other_settings_is_refused(tmp_path):
    samples = [EvalSample(question="about a", id="q1", gold_ids=("doc-b",))]

    def run(**settings):
        return EvalRunner(samples, {"p": ListingEngine()}, tmp_path, metrics=["mrr"], settings=settings,
                          show_progress=False).run()  # fmt: skip

    run(llm="small.gguf", top_k=5, glossary=None)
    run(llm="small.gguf", top_k=5, glossary="g.json")  # a setting left unset before may be set now
    with pytest.raises(InputDataError, match=r"other settings \(llm: 'small.gguf' -> 'big.gguf'\)"):
        run(llm="big.gguf", top_k=5, glossary="g.json")
    assert len((tmp_path / "cache" / "answers.jsonl").read_text().splitlines()) == 1  # nothing lost or redone


def test_unknown_metric_is_rejected(tmp_path):
    with pytest.raises(InputDataError, match="Unknown metric"):
        EvalRunner([], {}, tmp_path, metrics=["bleu"])


def test_report_tables_and_plots(tmp_path):
    records = [
        ScoreRecord(p, f"q{i}", "answer_similarity", s)
        for p, scores in (("baseline", [0.2, 0.4, 0.6]), ("kg", [0.5, 0.7, 0.9]))
        for i, s in enumerate(scores)
    ] + [ScoreRecord("kg", "q9", "answer_similarity", None, "judge failed")]
    paths = write_report(records, ["baseline", "kg"], tmp_path)
    table = paths["summary_md"].read_text()
    assert "| answer_similarity | 0.400 [" in table and "0.700 [" in table and "1 invalid" in table
    # kg is 0.3 above baseline on each of the 3 questions both scored (q9 has no valid pair)
    assert "| answer_similarity | kg | 3 | +0.300 [+0.300, +0.300] |" in table
    [diff] = paired_differences(records, ["baseline", "kg"])
    assert (diff["versus"], diff["n"], round(diff["mean_diff"], 6)) == ("baseline", 3, 0.3)
    assert paths["diff_answer_similarity_kg_vs_baseline"].read_bytes()[:4] == b"\x89PNG"
    assert paths["hist_answer_similarity"].stat().st_size > 1000
    rows = paths["per_question"].read_text().splitlines()
    assert rows[0] == "pipeline,sample_id,metric,score,invalid_reason" and len(rows) == 8
    assert not math.isnan(float(paths["summary_csv"].read_text().splitlines()[1].split(",")[3]))


@pytest.mark.slow
def test_kgplus_eval_end_to_end_with_local_models(tmp_path, monkeypatch):
    from llama_index_kgplus.cli import main
    from llama_index_kgplus.sample import SAMPLE_DOCS

    monkeypatch.setenv("KGPLUS_LLM", "qwen2.5-coder-0.5b")
    dataset = tmp_path / "ds.jsonl"
    dataset.write_text(
        json.dumps({"question": "How do you create a virtual environment?",
                    "ground_truth": "Run python -m venv followed by the directory name.",
                    "gold_ids": ["tutorial/venv"]}) + "\n"
    )  # fmt: skip
    out = tmp_path / "out"
    args = ["eval", "--dataset", str(dataset), "--corpus", str(SAMPLE_DOCS), "--pipelines", "baseline",
            "--metrics", "answer_similarity,answer_relevance,hit@5", "--out", str(out), "--top-k", "2",
            "--judge-llm", "qwen2.5-coder-0.5b"]  # a second model object as the judge  # fmt: skip
    assert main(args) == 0
    summary = (out / "summary.md").read_text()
    assert "| hit@5 | 1.000" in summary
    assert re.search(r"\| answer_relevance \| (0\.\d{3}|1\.000) \[", summary)
    settings = json.loads((out / "cache" / "settings.json").read_text())
    assert settings["judge_llm"] == settings["llm"] and settings["llm"].endswith(".gguf") and settings["top_k"] == 2
    # the same --out with another top-k would mix answers: refused, the first results kept
    assert main([*args[:-4], "--top-k", "3"]) == 2
    assert (out / "summary.md").read_text() == summary
    assert (out / "hist_answer_similarity.png").is_file()
    scores = [json.loads(line) for line in (out / "cache" / "scores.jsonl").read_text().splitlines()]
    relevance = next(s for s in scores if s["metric"] == "answer_relevance")
    assert relevance["details"]["generated_questions"]  # intermediate outputs are kept


# ------------------------------------------------------------------ named pipelines over one index


def test_pipelines_share_the_chunks_of_a_hierarchical_index(tmp_path, embed_model):
    from llama_index_kgplus import build_index, load_corpus
    from llama_index_kgplus.evaluation import PipelineContext, build_pipelines
    from llama_index_kgplus.hierarchy import SemanticChunkingSummaryNodeBuilder
    from llama_index_kgplus.hierarchy._retriever import write_manifest
    from llama_index_kgplus.sample import SAMPLE_DOCS
    from llama_index_kgplus.summarizers import ExtractiveSummarizer

    docs = [d for d in load_corpus(SAMPLE_DOCS) if d.id_ in ("tutorial/venv", "tutorial/floatingpoint")]
    builder = SemanticChunkingSummaryNodeBuilder(
        embed_model=embed_model, summarizer=ExtractiveSummarizer(embed_model=embed_model), cluster_size=3
    )
    index = build_index(docs, tmp_path, embed_model=embed_model, extra_transformations=[builder], show_progress=False)
    write_manifest(tmp_path, list(index.docstore.docs.values()), builder)
    ctx = PipelineContext(index=index, llm=JudgeLLM(rules=[]), embed_model=embed_model, top_k=8, index_dir=tmp_path)
    question = "How do I create and activate a virtual environment?"
    flat = ctx.chunk_retriever().retrieve(question)
    assert flat and all(hit.node.metadata["level"] == 0 for hit in flat)
    engines = build_pipelines(["baseline", "hierarchy", "hierarchy-tree"], ctx)
    collapsed = engines["hierarchy"].retriever.retrieve(question)
    assert any(hit.node.metadata["level"] >= 1 for hit in collapsed)
    with pytest.raises(InputDataError, match="needs --glossary"):
        build_pipelines(["glossary"], ctx)
    with pytest.raises(InputDataError, match="Unknown pipeline.*choose from baseline"):
        build_pipelines(["magic"], ctx)
    ctx.index_dir = None  # an index without summaries: no hierarchy pipeline
    with pytest.raises(InputDataError, match="index with summary nodes"):
        build_pipelines(["hierarchy"], ctx)


# ------------------------------------------------------------------ short-answer metrics (judge-free)


def test_short_answer_metrics_follow_squad_normalisation():
    from llama_index_kgplus.evaluation._short_answer import answer_contains, exact_match, normalize_answer, token_f1

    assert normalize_answer("The  Norman-Conquest, of England!") == "normanconquest of england"
    assert exact_match("the Normans.", ["Normans", "Norse"]) == 1.0
    assert exact_match("Normans of France", ["Normans"]) == 0.0
    # 1 common token; precision 1/7, recall 1: F1 = 2 * (1/7) / (8/7) = 0.25; the best gold answer counts
    assert token_f1("It was founded in 1066 by William.", ["1066", "in 1067"]) == pytest.approx(0.25)
    assert token_f1("William the Conqueror", ["William"]) == pytest.approx(2 * 0.5 / 1.5)
    assert answer_contains("It was founded in 1066 by William.", ["1066"]) == 1.0
    assert answer_contains("It was founded in 10660.", ["1066"]) == 0.0  # whole words only
    with pytest.raises(ValueError, match="No gold answer"):
        token_f1("x", ["the", "!"])


def test_runner_scores_short_answers_without_a_judge(tmp_path):
    class Answering(CustomQueryEngine):
        def custom_query(self, query_str: str) -> Response:
            return Response(response="In 1066, William led it.", source_nodes=[])

    dataset = tmp_path / "d.jsonl"
    dataset.write_text('{"question": "When?", "answers": ["1066", "in 1066"], "id": "q1"}\n'
                       '{"question": "Who?", "ground_truth": "William.", "id": "q2"}\n')  # fmt: skip
    samples = load_dataset(dataset)
    assert samples[0].answers == ("1066", "in 1066") and samples[1].answers == ()
    metrics = ["exact_match", "token_f1", "answer_contains"]
    records = EvalRunner(samples, {"p": Answering()}, tmp_path, metrics=metrics, show_progress=False).run()
    scores = {(r.sample_id, r.metric): r.score for r in records}
    assert scores == {("q1", "exact_match"): 0.0, ("q1", "token_f1"): pytest.approx(2 * (2 / 5) / (2 / 5 + 1)),
                      ("q1", "answer_contains"): 1.0}  # fmt: skip


def test_retrieval_metrics_alone_retrieve_without_answering(tmp_path):
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.retrievers import BaseRetriever

    class Listing(BaseRetriever):
        def _retrieve(self, query_bundle):
            ids = ["doc-a", "doc-b"] if query_bundle.query_str.endswith(" a") else ["doc-c"]
            return [NodeWithScore(node=TextNode(text=f"text of {i}", metadata={"doc_id": i}), score=1.0) for i in ids]

    asked: list[str] = []
    llm = ScriptedLLM(respond=lambda prompt: asked.append(prompt) or "an answer")
    engine = RetrieverQueryEngine.from_args(Listing(), llm=llm)
    samples = [EvalSample(question="about a", id="q1", gold_ids=("doc-b",), answers=("answer",))]
    records = EvalRunner(samples, {"p": engine}, tmp_path, metrics=["hit@5", "mrr"], show_progress=False).run()
    assert {(r.metric, r.score) for r in records} == {("hit@5", 1.0), ("mrr", 0.5)} and asked == []
    # a later run that needs answers does not take the answerless records from the cache
    records = EvalRunner(samples, {"p": engine}, tmp_path, metrics=["answer_contains"], show_progress=False).run()
    assert [(r.metric, r.score) for r in records] == [("answer_contains", 1.0)] and len(asked) == 1
