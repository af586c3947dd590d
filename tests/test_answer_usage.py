"""Usage figures of an answer (LLM calls, tokens, seconds, first token) and `kgplus query/retrieve` with
--compress, --context-budget, --stream on the bundled sample docs (real embedding model; the real local LLM in
the slow tests)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, TextNode

from llama_index_kgplus import sample
from llama_index_kgplus.cli import main
from llama_index_kgplus.glossary import GlossaryQueryEngine
from llama_index_kgplus.llm import AnswerUsage, attach_usage, metered
from llama_index_kgplus.llm._tokens import TokenCounter
from llama_index_kgplus.llm._usage import format_usage, usage_meter

QUESTION = "How do I create a virtual environment?"
USAGE_FIELDS = {"prompt_tokens", "completion_tokens", "llm_calls", "seconds", "first_token_seconds"}


class OneNode(BaseRetriever):
    def _retrieve(self, query_bundle):
        return [NodeWithScore(node=TextNode(text="Run python -m venv DIR to create a virtual environment."), score=1)]


def test_usage_of_a_streamed_answer_is_set_when_the_stream_ends():
    llm = metered(MockLLM(max_tokens=5))  # MockLLM: a real LlamaIndex LLM with no provider usage figures
    engine = RetrieverQueryEngine.from_args(OneNode(), llm=llm, streaming=True)
    usage = AnswerUsage(llm)
    response = attach_usage(engine.query(QUESTION), usage)
    assert "usage" not in (response.metadata or {})  # nothing generated yet
    text = "".join(response.response_gen)
    figures = response.metadata["usage"]
    assert USAGE_FIELDS <= set(figures) and text
    assert figures["llm_calls"] == 1 and figures["estimated"] is True  # counted with tiktoken: says so
    assert figures["prompt_tokens"] > 10 and figures["completion_tokens"] > 0
    assert 0 <= figures["first_token_seconds"] <= figures["seconds"]


def test_usage_without_a_meter_says_it_has_no_token_figures():
    engine = RetrieverQueryEngine.from_args(OneNode(), llm=MockLLM())
    response = attach_usage(engine.query(QUESTION), AnswerUsage(MockLLM()))
    figures = response.metadata["usage"]
    assert figures["prompt_tokens"] is None and figures["llm_calls"] is None and figures["first_token_seconds"] is None
    assert figures["seconds"] >= 0
    assert format_usage(figures).startswith("usage: None LLM call(s), ? completion tokens, ")


def test_format_usage_names_every_figure():
    line = format_usage({"prompt_tokens": 812, "completion_tokens": 41, "llm_calls": 1, "seconds": 6.24,
                         "first_token_seconds": 3.06})  # fmt: skip
    assert line == "usage: 1 LLM call(s), 812 prompt + 41 completion tokens, 6.2 s (first token after 3.1 s)"


def test_glossary_engine_counts_the_rewrite_and_the_answer(embed_model):
    engine = GlossaryQueryEngine.from_defaults(
        sample.sample_glossary_path(), retriever=OneNode(), llm=MockLLM(max_tokens=8), embed_model=embed_model,
        context_budget=50,
    )  # fmt: skip
    response = engine.query("How do I make an isolated environment for a project?")
    assert response.metadata["usage"]["llm_calls"] == 2  # the rewrite, then the answer
    assert "compression" in response.source_nodes[0].node.metadata


@pytest.mark.slow
def test_llama_cpp_streams_are_counted_in_its_own_tokens(small_llm):
    llm = metered(small_llm)
    before = usage_meter(llm).snapshot()
    text = "".join(chunk.delta or "" for chunk in llm.stream_complete("Say hello in three words."))
    used = usage_meter(llm).snapshot() - before
    counter = TokenCounter.for_llm(llm)
    assert used.llm_calls == 1 and not used.estimated
    assert used.completion_tokens == counter.count(text) > 0
    assert used.prompt_tokens == counter.count(llm.completion_to_prompt("Say hello in three words."))


# ------------------------------------------------------------------ CLI


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("compress-cli") / "index"
    assert main(["ingest", str(sample.SAMPLE_DOCS), "--index", str(path)]) == 0
    return path


@pytest.mark.model  # the CLI loads the real embedding model
def test_retrieve_passes_sources_whole_unless_asked(index_dir, capsys):
    capsys.readouterr()
    assert main(["retrieve", QUESTION, "--index", str(index_dir), "--top-k", "3", "--json"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert all("compression" not in s for s in whole["sources"])
    args = ["retrieve", QUESTION, "--index", str(index_dir), "--top-k", "3", "--json", "--compress", "sentences",
            "--context-budget", "60"]  # fmt: skip
    assert main(args) == 0
    compressed = json.loads(capsys.readouterr().out)
    assert [s["id"] for s in compressed["sources"]] == [s["id"] for s in whole["sources"]]
    assert sum(s["compression"]["tokens"] for s in compressed["sources"]) <= 60
    for before, after in zip(whole["sources"], compressed["sources"]):
        assert after["compression"]["original_tokens"] >= after["compression"]["tokens"]
        assert all(part.strip() in " ".join(before["text"].split()) for part in after["text"].split("\n") if part)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--context-budget", "0"], "argument --context-budget: takes a number of at least 1, not 0"),
        (["--context-budget", "many"], "argument --context-budget: 'many' is not a whole number"),
        (["--compress", "tokens"], "invalid choice: 'tokens'"),
    ],
)
def test_bad_compression_options_are_refused_before_any_model_loads(index_dir, capsys, extra, message):
    with pytest.raises(SystemExit) as exit_info:
        main(["query", QUESTION, "--index", str(index_dir), *extra])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_stream_with_json_is_a_clear_error(index_dir, capsys):
    assert main(["query", QUESTION, "--index", str(index_dir), "--stream", "--json"]) == 2
    assert "--stream prints the answer as text" in capsys.readouterr().err


@pytest.mark.slow
def test_query_reports_usage_and_streams(index_dir, capsys):
    capsys.readouterr()
    common = ["query", QUESTION, "--index", str(index_dir), "--top-k", "2", "--llm", "qwen2.5-coder-0.5b",
              "--context-budget", "120"]  # fmt: skip
    assert main([*common, "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    usage = record["usage"]
    assert USAGE_FIELDS <= set(usage) and usage["llm_calls"] == 1 and usage["estimated"] is False
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    assert 0 < usage["first_token_seconds"] <= usage["seconds"]
    assert record["answer"].strip() and all("compression" in s for s in record["sources"])
    assert main([*common, "--stream"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Q: {QUESTION}") and "\nsources:\n" in out and "\nusage: 1 LLM call(s), " in out


async def test_metered_chat_keeps_the_inner_chat_and_counts_it():
    from llama_index.core.base.llms.types import ChatMessage, ChatResponse, LLMMetadata
    from llama_index.core.llms import CustomLLM

    class ChatOnly(CustomLLM):
        """A chat model whose replies carry OpenAI-style usage figures (the provider's own count)."""

        seen: list = []

        @property
        def metadata(self):
            return LLMMetadata(is_chat_model=True, model_name="chat-only")

        def chat(self, messages, **kwargs):
            self.seen.append([m.role.value for m in messages])
            return ChatResponse(message=ChatMessage(role="assistant", content="ok"),
                                raw={"usage": {"prompt_tokens": 11, "completion_tokens": 2}})  # fmt: skip

        async def achat(self, messages, **kwargs):
            return self.chat(messages, **kwargs)

        def complete(self, prompt, formatted=False, **kwargs):
            raise AssertionError("a chat model's chat must not become a completion")

        def stream_complete(self, prompt, formatted=False, **kwargs):
            raise AssertionError("a chat model's chat must not become a completion")

    inner = ChatOnly()
    llm = metered(inner)
    messages = [ChatMessage(role="system", content="Be brief."), ChatMessage(role="user", content="Hi")]
    assert llm.chat(messages).message.content == "ok"
    assert (await llm.achat(messages)).message.content == "ok"
    assert inner.seen == [["system", "user"]] * 2
    used = usage_meter(llm).snapshot()
    assert (used.llm_calls, used.prompt_tokens, used.completion_tokens, used.estimated) == (2, 22, 4, False)
