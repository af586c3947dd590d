"""Model specs (`--llm SPEC`, `--embed-model SPEC`, `KGPLUS_LLM`, `KGPLUS_EMBED_MODEL`): parsing and bad input
without any model; then the real thing: llama.cpp's OpenAI-compatible server (`llama-cpp-python[server]`),
started by the tests on 127.0.0.1 with the 0.5B model, used through `openai-like:` by `ingest`, `query`,
`graphrag index` and `doctor`. Bedrock cannot run here: it goes through botocore's Stubber (no network)."""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
import time

import pytest

from llama_index_kgplus import _defaults
from llama_index_kgplus._testing import free_port, llama_cpp_server
from llama_index_kgplus.cli import main
from llama_index_kgplus.errors import KGPlusSetupError
from llama_index_kgplus.llm import embed_model_from_spec, llm_from_spec, metered
from llama_index_kgplus.llm._specs import ModelSpec, describe_server_error, parse_model_spec
from llama_index_kgplus.llm._usage import LLMUsage, usage_meter


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("qwen2.5-coder-0.5b", ModelSpec("local", "qwen2.5-coder-0.5b")),
        ("local:qwen2.5-coder-0.5b", ModelSpec("local", "qwen2.5-coder-0.5b")),
        ("/models/my model.gguf", ModelSpec("local", "/models/my model.gguf")),
        ("openai-like:qwen@http://127.0.0.1:8080/v1/", ModelSpec("openai-like", "qwen", "http://127.0.0.1:8080/v1")),
        ("ollama:llama3.2", ModelSpec("ollama", "llama3.2", "http://localhost:11434")),
        ("ollama:nomic-embed-text@https://gpu:11434", ModelSpec("ollama", "nomic-embed-text", "https://gpu:11434")),
        (
            "bedrock:anthropic.claude-3-haiku-20240307-v1:0",
            ModelSpec("bedrock", "anthropic.claude-3-haiku-20240307-v1:0"),
        ),
    ],
)
def test_specs_parse(spec, expected):
    assert parse_model_spec(spec) == expected
    assert parse_model_spec(str(expected)) == expected  # str() is a spec again


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("openai-like:qwen", "names no server"),
        ("openai-like:@http://127.0.0.1:8080/v1", "names no model"),
        ("openai-like:qwen@ftp://host/v1", r"not an http\(s\) URL"),
        ("openai-like:qwen@http://user:secret@host:8080/v1", "carries credentials"),
        ("openai-like:qwen@user:secret@gpu-box:8000/v1", "carries credentials"),
        ("ollama:m@admin:secret@host", "carries credentials"),
        ("openai-like:qwen@http://host:8080/v1?api_key=abc", "carries credentials"),
        ("openai-like:sk-proj-abcdefghijklmnop1234@http://host/v1", "looks like a key"),
        ("bedrock:", "names no model"),
        ("bedrock:AKIAABCDEFGHIJKLMNOP", "looks like a key"),
        ("  ", "empty"),
    ],
)
def test_bad_specs_are_refused_with_the_fix(spec, message):
    with pytest.raises(KGPlusSetupError, match=message) as info:
        parse_model_spec(spec)
    assert not any(secret in str(info.value) for secret in ("secret", "abc", "sk-proj", "AKIA"))  # never echoed


@pytest.mark.parametrize("spec", ["olama:nomic-embed-text", "bge-small", "/models/embed.gguf"])
def test_an_unknown_embedding_spec_is_refused_not_replaced_by_the_local_model(spec):
    with pytest.raises(KGPlusSetupError, match="Unknown embedding model spec"):
        embed_model_from_spec(spec)


def test_a_missing_extra_is_named(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "llama_index.llms.ollama", None)  # as if the extra were not installed
    with pytest.raises(KGPlusSetupError, match=r"pip install 'llama-index-kgplus\[ollama\]'"):
        llm_from_spec("ollama:llama3.2")


def test_served_models_are_the_llama_index_classes_with_the_url(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    llm = llm_from_spec("openai-like:qwen@http://127.0.0.1:9/v1", max_new_tokens=32, context_window=8192)
    assert type(llm).__name__ == "ServedOpenAILike" and llm.api_base == "http://127.0.0.1:9/v1"
    assert (llm.model, llm.max_tokens, llm.metadata.context_window, llm.is_chat_model) == ("qwen", 32, 8192, True)
    monkeypatch.setenv("OPENAI_API_KEY", "from-the-environment")
    embed = embed_model_from_spec("openai-like:embedder@http://127.0.0.1:9/v1")
    assert type(embed).__name__ == "ServedOpenAIEmbedding" and embed.model_name == "embedder"
    assert embed.class_name() == "OpenAIEmbedding"  # what an index records, as before
    assert embed.api_key == "from-the-environment"
    ollama = llm_from_spec("ollama:llama3.2@http://127.0.0.1:9")
    assert type(ollama).__name__ == "ServedOllama" and ollama.base_url == "http://127.0.0.1:9"


def test_the_request_timeout_comes_from_the_call_else_the_environment_else_120_s(monkeypatch):
    url = "openai-like:qwen@http://127.0.0.1:9/v1"
    assert llm_from_spec(url).timeout == 120.0
    monkeypatch.setenv("KGPLUS_LLM_TIMEOUT", "900")
    assert llm_from_spec(url).timeout == 900.0 and embed_model_from_spec(url).timeout == 900.0
    assert llm_from_spec(url, timeout=5).timeout == 5.0
    for bad in ("soon", "0", "-3", "inf"):
        monkeypatch.setenv("KGPLUS_LLM_TIMEOUT", bad)
        with pytest.raises(KGPlusSetupError, match=r"^\$KGPLUS_LLM_TIMEOUT must be a positive number, not '"):
            llm_from_spec(url)


@pytest.mark.model
def test_llama_cpp_threads_come_from_the_environment_as_a_whole_number_and_bound_prompt_reading_too(monkeypatch):
    monkeypatch.setenv("KGPLUS_LLM_THREADS", "1")
    # llama-cpp-python reads prompts with every core unless told: two models side by side then spin 2x the cores
    for threads, llm in (
        (1, llm_from_spec("qwen2.5-coder-0.5b")),
        (2, llm_from_spec("qwen2.5-coder-0.5b", n_threads=2)),
    ):
        assert llm.model_kwargs["n_threads"] == llm.model_kwargs["n_threads_batch"] == threads
    monkeypatch.setenv("KGPLUS_LLM_THREADS", "1.5")
    with pytest.raises(KGPlusSetupError, match="must be a positive whole number, not '1.5'"):
        llm_from_spec("qwen2.5-coder-0.5b")  # refused before the model loads


def test_bedrock_needs_a_region(monkeypatch, tmp_path):
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    with pytest.raises(KGPlusSetupError, match="set AWS_REGION"):
        llm_from_spec("bedrock:anthropic.claude-3-haiku-20240307-v1:0")


def test_bedrock_converse_through_botocore_stubber(monkeypatch):
    """Bedrock cannot be reached from here: botocore's Stubber answers the Converse call (no network), so what is
    tested is that the spec builds a BedrockConverse whose requests and replies have Bedrock's real shape."""
    from botocore.stub import Stubber

    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    model = "anthropic.claude-3-haiku-20240307-v1:0"
    llm = llm_from_spec(f"bedrock:{model}", max_new_tokens=20)
    reply = {
        "output": {"message": {"role": "assistant", "content": [{"text": "Paris."}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 12, "outputTokens": 2, "totalTokens": 14},
        "metrics": {"latencyMs": 5},
    }
    counted = metered(llm)
    with Stubber(llm._client) as stub:
        stub.add_response("converse", reply)
        assert counted.complete("What is the capital of France?").text == "Paris."
    assert llm.metadata.context_window > 0 and llm.max_tokens == 20
    assert usage_meter(counted).snapshot() == LLMUsage(1, 12, 2, False)  # Bedrock's own token counts


def test_bedrock_json_comes_from_a_required_tool_call(monkeypatch):
    """Stubber as above: the Converse request must carry the schema as a tool the model is required to call, and
    the tool's arguments are the JSON (validated like any other reply)."""
    from botocore.stub import ANY, Stubber
    from pydantic import BaseModel

    from llama_index_kgplus._structured import generate_json

    class City(BaseModel):
        city: str

    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    llm = metered(llm_from_spec("bedrock:anthropic.claude-3-haiku-20240307-v1:0"))
    reply = {
        "output": {"message": {"role": "assistant", "content": [
            {"toolUse": {"toolUseId": "t1", "name": "City", "input": {"city": "Paris"}}}]}},
        "stopReason": "tool_use",
        "usage": {"inputTokens": 40, "outputTokens": 9, "totalTokens": 49},
        "metrics": {"latencyMs": 5},
    }  # fmt: skip
    expected = {"modelId": ANY, "messages": ANY, "inferenceConfig": ANY,
                "toolConfig": {"tools": [{"toolSpec": ANY}], "toolChoice": {"any": {}}}}  # fmt: skip
    with Stubber(llm.inner._client) as stub:
        stub.add_response("converse", reply, expected)
        assert generate_json(llm, "Capital of France?", City) == City(city="Paris")
    assert usage_meter(llm).snapshot() == LLMUsage(1, 40, 9, False)


def test_bedrock_embeddings_through_botocore_stubber(monkeypatch):
    """As above: the Stubber answers InvokeModel with Titan's reply shape (no network here)."""
    import io

    from botocore.response import StreamingBody
    from botocore.stub import Stubber

    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    embed = embed_model_from_spec("bedrock:amazon.titan-embed-text-v2:0")
    body = json.dumps({"embedding": [0.1, 0.2, 0.3], "inputTextTokenCount": 3}).encode()
    with Stubber(embed._client) as stub:
        stub.add_response("invoke_model", {"body": StreamingBody(io.BytesIO(body), len(body)), "contentType": "json"})
        assert embed.get_text_embedding("hello") == [0.1, 0.2, 0.3]


class _Stub(http.server.BaseHTTPRequestHandler):
    """Base of the stub servers below: ``answer(path, request)`` gives ``(status, content type, body)``."""

    requests: list = []

    def answer(self, path: str, request: dict) -> tuple[int, str, bytes]:
        raise NotImplementedError

    def do_POST(self):  # noqa: N802 (the http.server name)
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.requests.append((self.path, request))
        status, kind, body = self.answer(self.path, request)
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def _serving(handler: type[_Stub]):
    """``handler`` on a free port of 127.0.0.1 for the block; yields its base URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


class _OllamaStub(_Stub):
    """Ollama's wire format (/api/chat, /api/embed), answered by a stub: no Ollama server runs here. It checks
    what the spec's LlamaIndex classes send; it says nothing about a real Ollama's behaviour."""

    requests: list = []

    def answer(self, path: str, request: dict) -> tuple[int, str, bytes]:
        if path == "/api/chat":
            reply = {"model": request["model"], "created_at": "2026-12-01T00:00:00Z", "done": True,
                     "message": {"role": "assistant", "content": '{"city": "Paris"}'},
                     "prompt_eval_count": 21, "eval_count": 6}  # fmt: skip
        else:
            reply = {"model": request["model"], "embeddings": [[0.5, 0.25] for _ in request["input"]]}
        return 200, "application/json", json.dumps(reply).encode()


def test_ollama_specs_speak_ollamas_wire_format_to_a_stub():
    from pydantic import BaseModel

    from llama_index_kgplus._structured import generate_json

    class City(BaseModel):
        city: str

    with _serving(_OllamaStub) as url:
        llm = metered(llm_from_spec(f"ollama:llama3.2@{url}"))
        assert generate_json(llm, "Capital of France?", City).city == "Paris"
        assert usage_meter(llm).snapshot() == LLMUsage(1, 21, 6, False)  # Ollama's own counts
        embed = embed_model_from_spec(f"ollama:nomic-embed-text@{url}")
        assert embed.get_text_embedding_batch(["a", "b"]) == [[0.5, 0.25], [0.5, 0.25]]
    (chat_path, chat), (embed_path, embed_request) = _OllamaStub.requests
    assert chat_path == "/api/chat" and chat["model"] == "llama3.2"
    assert chat["format"] == City.model_json_schema()  # the schema as Ollama's structured-output option
    assert embed_path == "/api/embed" and embed_request["input"] == ["a", "b"]


def test_module_factory_specs_and_local_names_are_told_apart(tmp_path):
    assert parse_model_spec("mypkg.llms:bedrock") == ModelSpec("factory", "mypkg.llms:bedrock")
    assert not parse_model_spec("mypkg.llms:bedrock").remote
    for local in ("C:\\models\\m.gguf", "qwen2.5-coder-0.5b", "weights/a:b.gguf"):
        assert parse_model_spec(local).kind == "local"
    existing = tmp_path / "pkg:name"  # an existing path is a path, whatever it looks like
    existing.write_text("")
    assert parse_model_spec(str(existing)).kind == "local"


def test_module_factory_specs_build_the_users_models(tmp_path, monkeypatch):
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.llms import MockLLM

    (tmp_path / "my_models.py").write_text(
        "from llama_index.core.embeddings import MockEmbedding\n"
        "from llama_index.core.llms import MockLLM\n"
        "def llm():\n    return MockLLM(max_tokens=3)\n"
        "def embed():\n    return MockEmbedding(embed_dim=8)\n"
        "def nothing():\n    return 42\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert isinstance(llm_from_spec("my_models:llm"), MockLLM)
    assert isinstance(embed_model_from_spec("my_models:embed"), MockEmbedding)
    monkeypatch.setenv("KGPLUS_LLM", "my_models:llm")  # no spec: the environment's
    assert isinstance(llm_from_spec(), MockLLM)
    with pytest.raises(KGPlusSetupError, match="returned a int, not a LlamaIndex LLM"):
        llm_from_spec("my_models:nothing")
    with pytest.raises(KGPlusSetupError, match="cannot import 'absent' from 'my_models'"):
        embed_model_from_spec("my_models:absent")


def test_an_empty_spec_is_refused_not_replaced_by_the_default(monkeypatch):
    monkeypatch.setenv("KGPLUS_LLM", "")
    with pytest.raises(KGPlusSetupError, match="spec is empty"):
        llm_from_spec()
    with pytest.raises(KGPlusSetupError, match="spec is empty"):
        llm_from_spec("  ")


def test_embed_model_option_is_accepted_by_every_command_and_set_for_it(monkeypatch):
    from llama_index_kgplus.cli._parser import command_parsers

    commands = command_parsers()
    assert len(commands) > 10
    assert all("--embed-model" in p.format_help() for p in commands)
    seen = {}

    def record(args):
        import os

        seen["env"] = os.environ.get(_defaults.EMBED_MODEL_ENV)
        return 0

    from llama_index_kgplus.cli import _setup

    monkeypatch.delenv(_defaults.EMBED_MODEL_ENV, raising=False)
    monkeypatch.setattr(_setup, "_doctor", record)
    assert main(["doctor", "--embed-model", "ollama:nomic-embed-text"]) == 0
    assert seen["env"] == "ollama:nomic-embed-text"
    import os

    assert _defaults.EMBED_MODEL_ENV not in os.environ  # restored after the command


@pytest.mark.model  # loads no model, but goes through _defaults.default_llm, which the fast tier guards
def test_an_unreachable_server_fails_fast_and_clearly(capsys, tmp_path):
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    started = time.monotonic()
    code = main(["doctor", "--llm", f"openai-like:qwen@{url}", "--embed-model", f"openai-like:e@{url}"])
    assert code == 1 and time.monotonic() - started < 15  # the client's retries alone would sleep ~20 s
    out = capsys.readouterr().out
    assert f"[FAIL] LLM: cannot reach the model server at {url}" in out
    assert f"[FAIL] embedding model: cannot reach the model server at {url}" in out


class _Misbehaving(_Stub):
    """What no real server here can be made to do: answer HTML with status 200, an error page, or 429 forever."""

    replies = {"/html/v1/chat/completions": (200, "text/html", b"<html>proxy login</html>"),
               "/broken/v1/chat/completions": (500, "application/json", b'{"error": {"message": "CUDA OOM"}}'),
               "/busy/v1/chat/completions": (429, "application/json", b'{"error": {"message": "slow down"}}')}  # fmt: skip

    def answer(self, path: str, request: dict) -> tuple[int, str, bytes]:
        return self.replies.get(path, (404, "application/json", b'{"error": {"message": "no"}}'))


@pytest.fixture
def misbehaving_server():
    with _serving(_Misbehaving) as url:
        yield url


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("html", "answered something that is not an OpenAI-style reply"),
        ("broken", "answered 500: "),
        ("busy", "kept answering 429 (rate limit)"),
        ("nowhere", "answered 404: wrong model name or URL"),
    ],
)
def test_a_misbehaving_server_is_one_clear_error(misbehaving_server, path, message):
    llm = llm_from_spec(f"openai-like:m@{misbehaving_server}/{path}/v1", max_retries=1)
    with pytest.raises(Exception) as info:
        llm.complete("hi")
    assert message in (describe_server_error(info.value) or str(info.value))


class _ProxyPage(_Stub):
    """A server whose embeddings work and whose chat endpoint answers status 200 with something that is not a reply:
    a proxy's login page, an empty body, JSON without choices, an event stream without a single event."""

    requests: list = []
    chat = {"html": (200, "text/html; charset=utf-8", b"<html><body>Proxy login required</body></html>"),
            "empty": (200, "application/json", b""),
            "nochoices": (200, "application/json", b'{"object": "chat.completion", "choices": []}'),
            "nostream": (200, "text/event-stream", b"data: [DONE]\n\n")}  # fmt: skip

    def answer(self, path: str, request: dict) -> tuple[int, str, bytes]:
        if path.split("/")[1] in self.chat:
            return self.chat[path.split("/")[1]]
        texts = request["input"] if isinstance(request["input"], list) else [request["input"]]
        data = [{"object": "embedding", "index": i, "embedding": [1.0, len(t) % 7, 0.5]} for i, t in enumerate(texts)]
        return 200, "application/json", json.dumps({"object": "list", "data": data, "model": "e"}).encode()


@pytest.mark.parametrize(
    ("path", "shown"),
    [
        ("html", "not JSON: HTTP 200, text/html; charset=utf-8, 46 bytes starting '<html><body>Proxy login required"),
        ("empty", "an empty body: HTTP 200, application/json"),
        ("nochoices", "JSON without 'choices': HTTP 200, application/json"),
    ],
)
def test_a_reply_that_is_not_json_is_one_line_naming_the_server_and_what_came_back(path, shown):
    from llama_index_kgplus.errors import ModelServerError

    _ProxyPage.requests.clear()
    with _serving(_ProxyPage) as url:
        llm = llm_from_spec(f"openai-like:m@{url}/{path}/v1")
        with pytest.raises(ModelServerError) as info:
            llm.complete("hi")
    message = str(info.value)
    assert message.startswith(f"the model server at {url}/{path}/v1/chat/completions answered something that is ")
    assert shown in message and "\n" not in message
    assert len(_ProxyPage.requests) == 1  # the same reply would come again: not retried


@pytest.mark.parametrize("path", ["html", "empty", "nochoices", "nostream"])
def test_a_streamed_or_async_reply_that_is_not_one_is_the_same_error(path):
    import asyncio

    from llama_index_kgplus.errors import ModelServerError

    async def astream(llm):
        return [chunk async for chunk in await llm.astream_complete("hi")]

    with _serving(_ProxyPage) as url:
        llm = llm_from_spec(f"openai-like:m@{url}/{path}/v1")
        calls = [lambda: list(llm.stream_complete("hi")), lambda: asyncio.run(astream(llm))]
        if path != "nostream":
            calls.append(lambda: asyncio.run(llm.acomplete("hi")))
        for call in calls:
            with pytest.raises(ModelServerError, match=f"the model server at {url}/{path}/v1"):
                call()


def test_an_embedding_reply_that_is_not_json_is_one_line():
    from llama_index_kgplus.errors import ModelServerError

    with _serving(_ProxyPage) as url:
        assert embed_model_from_spec(f"openai-like:e@{url}/v1").get_text_embedding("abc") == [1.0, 3.0, 0.5]
        embed = embed_model_from_spec(f"openai-like:e@{url}/html/v1")
        with pytest.raises(ModelServerError, match="answered something that is not an OpenAI-style reply .not JSON"):
            embed.get_text_embedding("abc")


class _OllamaProxyPage(_Stub):
    """Ollama's endpoints answered with a proxy's page (status 200), or an empty JSON body."""

    def answer(self, path: str, request: dict) -> tuple[int, str, bytes]:
        if path.startswith("/empty/"):
            return 200, "application/json", b""
        return 200, "text/html", b"<html><body>Proxy login required</body></html>"


@pytest.mark.parametrize("path", ["html", "empty"])
def test_an_ollama_reply_that_is_not_json_is_one_line(path):
    import asyncio

    from llama_index_kgplus.errors import ModelServerError

    async def both(llm):
        await llm.acomplete("hi")

    with _serving(_OllamaProxyPage) as url:
        llm, embed = llm_from_spec(f"ollama:m@{url}/{path}"), embed_model_from_spec(f"ollama:e@{url}/{path}")
        calls = [lambda: llm.complete("hi"), lambda: list(llm.stream_complete("hi")), lambda: asyncio.run(both(llm)),
                 lambda: embed.get_text_embedding("abc"), lambda: asyncio.run(embed.aget_text_embedding("abc"))]  # fmt: skip
        for call in calls:
            with pytest.raises(ModelServerError, match=f"the model server at {url}/{path}/api/.* is not an Ollama"):
                call()


@pytest.mark.parametrize("command", ["query", "ask"])
def test_a_proxy_page_is_exit_2_and_one_line_not_an_empty_answer(command, tmp_path, capsys):
    """What `kgplus query` did: exit 0, an empty answer and "0 LLM calls" for an HTML page with status 200."""
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCS), encoding="utf-8")
    with _serving(_ProxyPage) as url:
        embed = f"openai-like:e@{url}/v1"  # embeddings that work: no local model loads
        assert main(["ingest", str(corpus), "--index", str(tmp_path / "index"), "--embed-model", embed]) == 0
        capsys.readouterr()
        argv = [command, "How do I create a virtual environment?", "--index", str(tmp_path / "index")]
        for json_output in ([], ["--json"]):
            code = main([*argv, *json_output, "--embed-model", embed, "--llm", f"openai-like:m@{url}/html/v1"])
            out, err = capsys.readouterr()
            assert code == 2, (out, err)
            assert err.count("\n") == 1 and err.startswith(f"kgplus: error: the model server at {url}/html/v1/")
            assert "text/html" in err and "Proxy login required" in err
            assert "LLM call" not in out and '"answer"' not in out


class _JsonObjectOnly(_Stub):
    """A server that takes llama.cpp's `json_object` + `schema` response format and refuses OpenAI's
    `json_schema` one with 400, as older OpenAI-compatible servers do; records every request."""

    requests: list = []

    def answer(self, path: str, request: dict) -> tuple[int, str, bytes]:
        if "too long" in request["messages"][-1]["content"]:
            status, reply = 400, {"error": {"message": "This model's maximum context length is 4096 tokens"}}
        elif request.get("response_format", {}).get("type") == "json_schema":
            status, reply = 400, {"error": {"message": "response_format type must be text or json_object"}}
        else:
            status, reply = 200, {
                "id": "x", "object": "chat.completion", "created": 0, "model": request["model"],
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": '{"city": "Paris"}'}}],
                "usage": {"prompt_tokens": 30, "completion_tokens": 5, "total_tokens": 35},
            }  # fmt: skip
        return status, "application/json", json.dumps(reply).encode()


def test_openai_like_json_goes_as_a_response_format_with_its_own_token_budget():
    from pydantic import BaseModel

    from llama_index_kgplus._structured import generate_json

    class City(BaseModel):
        city: str

    with _serving(_JsonObjectOnly) as url:
        llm = metered(llm_from_spec(f"openai-like:m@{url}/v1", max_new_tokens=64))
        assert generate_json(llm, "Capital of France?", City, max_tokens=700).city == "Paris"
        assert generate_json(llm, "Capital of Italy?", City, max_tokens=700).city == "Paris"  # scripted reply
        with pytest.raises(Exception, match="context length"):  # a 400 that is not about the schema option
            generate_json(llm, "too long " * 5, City, max_tokens=700, max_retries=0)
        generate_json(llm, "Capital of Spain?", City, max_tokens=700)
    first, fallback, second, too_long, after = [request for _, request in _JsonObjectOnly.requests]
    assert first["response_format"]["type"] == "json_schema"  # the standard form first, refused with 400
    assert fallback["response_format"] == {"type": "json_object", "schema": City.model_json_schema()}
    assert second["response_format"]["type"] == "json_object"  # remembered for this LLM
    assert all(r["max_tokens"] == 700 for r in (first, fallback, second))  # the call's budget, not the LLM's 64
    assert "JSON schema" not in second["messages"][-1]["content"]  # a constrained server needs no schema copy
    assert too_long["response_format"]["type"] == after["response_format"]["type"] == "json_object"  # still
    assert usage_meter(llm).snapshot() == LLMUsage(3, 90, 15, False)


# ---------------------------------------------------------------------- a real server

DOCS = [
    {"id": "curie", "text": "Marie Curie worked with Pierre Curie in Paris. They discovered polonium and radium."},
    {"id": "paris", "text": "Pierre Curie taught at the University of Paris. Marie Curie won two Nobel Prizes."},
    {"id": "venv", "text": "To create a virtual environment, run python -m venv .venv and activate it."},
]


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in DOCS), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """llama.cpp's server twice: the 0.5B model for chat, and the same GGUF for mean-pooled embeddings."""
    model = _defaults.gguf_path(_defaults.FAST_LLM)
    workdir = tmp_path_factory.mktemp("llama-server")
    with (
        llama_cpp_server(model, workdir, alias="qwen") as chat,
        llama_cpp_server(model, workdir, alias="qwen-embed", embedding=True, n_ctx=512) as embed,
    ):
        yield f"openai-like:qwen@{chat}", f"openai-like:qwen-embed@{embed}"


@pytest.mark.slow
def test_ingest_and_query_through_a_served_model(servers, corpus, tmp_path, capsys):
    llm, embed = servers
    index = tmp_path / "index"
    assert main(["ingest", str(corpus), "--index", str(index), "--embed-model", embed]) == 0
    capsys.readouterr()
    question = "How do I create a virtual environment?"
    args = ["query", question, "--index", str(index), "--top-k", "2", "--context-budget", "200", "--json"]
    assert main([*args, "--llm", llm, "--embed-model", embed]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["answer"].strip() and record["sources"][0]["id"].startswith("venv")
    usage = record["usage"]  # the answer streams and llama.cpp's server reports no usage in streams: estimated
    assert usage["llm_calls"] == 1 and usage["prompt_tokens"] > 50 and usage["completion_tokens"] > 0
    assert main([*args, "--llm", llm]) == 2  # the local embedding model on an index the served one built
    assert "was built with the embedding model qwen-embed at http://127.0.0.1:" in capsys.readouterr().err


@pytest.mark.slow
def test_graphrag_index_through_a_served_model(servers, tmp_path, capsys, monkeypatch):
    from llama_index_kgplus.graphrag import GraphRAGIndex

    llm, _ = servers
    # the check is the CLI's path through a served model, not the reports' depth: small extraction and report
    # bounds (the CLI's own settings still apply, e.g. --min-entities) keep each reply short
    small = {"extractor": {"max_entities": 3, "max_relationships": 2, "max_description_chars": 60},
             "reporter": {"min_findings": 1, "max_findings": 1, "max_chars": 80, "max_tokens": 250}}  # fmt: skip
    opened = GraphRAGIndex.from_defaults

    def from_defaults(store_dir, llm=None, **settings):
        for key, bounds in small.items():
            settings[key] = {**bounds, **settings.get(key, {})}
        return opened(store_dir, llm, **settings)

    monkeypatch.setattr(GraphRAGIndex, "from_defaults", from_defaults)
    # the server answers one request at a time on one thread: a reply may wait for the other worker's, and each
    # may use its whole token bound; 2 tokens/s is a loaded machine's pace
    monkeypatch.setenv("KGPLUS_LLM_TIMEOUT", str(2 * small["reporter"]["max_tokens"] / 2.0))
    store, corpus = tmp_path / "grag", tmp_path / "curies.jsonl"  # the two documents about the Curies
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCS[:2]), encoding="utf-8")
    args = ["graphrag", "index", str(corpus), "--store", str(store), "--llm", llm, "--workers", "2", "--json",
            "--min-entities", "1"]  # as for the 0.5B model in process: it would reply with empty lists  # fmt: skip
    code = main(args)
    stats = json.loads(capsys.readouterr().out)
    # extraction runs under the server's JSON-schema grammar; the 0.5B model may still write a report whose
    # fields break the schema's length bounds: exit 1, recorded for the next update (the CLI's contract)
    assert stats["documents"] == 2 and stats["entities"] >= 2 and stats["relationships"] >= 1
    assert stats["llm_calls"] >= 3 and stats["prompt_tokens"] > 0 and stats["completion_tokens"] > 0
    assert code == 0 or (code == 1 and stats["reports_regenerated"] < stats["reports_total"])


@pytest.mark.slow
def test_doctor_checks_served_models_for_real(servers, capsys):
    llm, embed = servers
    main(["doctor", "--llm", llm, "--embed-model", embed])
    out = capsys.readouterr().out
    assert f"[ok] LLM: {llm} generated" in out
    assert f"[ok] embedding model: {embed} -> 896-d vectors" in out


@pytest.mark.slow
def test_eval_through_a_served_model(servers, corpus, tmp_path):
    llm, embed = servers
    dataset = tmp_path / "ds.jsonl"
    record = {"question": "How do I create a virtual environment?", "answers": ["venv"], "gold_ids": ["venv"]}
    dataset.write_text(json.dumps(record) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    args = ["eval", "--dataset", str(dataset), "--corpus", str(corpus), "--pipelines", "baseline", "--out", str(out),
            "--metrics", "answer_contains,hit@5", "--top-k", "2", "--llm", llm, "--embed-model", embed, "--workers", "2"]  # fmt: skip
    assert main(args) == 0
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "| hit@5 | 1.000" in summary
    settings = json.loads((out / "cache" / "settings.json").read_text(encoding="utf-8"))
    assert settings["llm"] == llm.removeprefix("openai-like:")  # MODEL@URL: cached answers are keyed by it


@pytest.mark.slow
def test_a_prompt_longer_than_the_servers_context_is_refused_with_the_sizes(servers):
    llm = llm_from_spec(servers[0], max_retries=0)
    with pytest.raises(Exception) as info:
        llm.complete("word " * 6000)  # the server's context window is 4096 tokens
    message = describe_server_error(info.value) or ""
    assert "answered 400" in message and "4096" in message, message


def test_an_index_refuses_another_embedding_model_and_the_demo_rebuilds_instead(tmp_path):
    import io

    from llama_index.core import Document
    from llama_index.core.embeddings import MockEmbedding

    from llama_index_kgplus import build_index, load_index
    from llama_index_kgplus._demo import _reusable
    from llama_index_kgplus.errors import InputDataError

    class OtherEmbedding(MockEmbedding):
        @classmethod
        def class_name(cls) -> str:
            return "OtherEmbedding"

    built_with = MockEmbedding(embed_dim=8)
    build_index(
        [Document(text="A virus causes fever.", id_="d")], tmp_path, embed_model=built_with, show_progress=False
    )
    assert load_index(tmp_path, embed_model=MockEmbedding(embed_dim=8)).index_id  # the same model: fine
    with pytest.raises(InputDataError, match="was built with the embedding model"):
        load_index(tmp_path, embed_model=OtherEmbedding(embed_dim=8))
    out = io.StringIO()
    assert _reusable(tmp_path, OtherEmbedding(embed_dim=8), out) is None
    assert out.getvalue().startswith("[demo] building the index again: ")


def test_an_unusable_reply_names_the_server_without_its_secrets():
    from llama_index_kgplus.errors import ModelServerError
    from llama_index_kgplus.llm._openai_like import ServedOpenAILike

    secret = "S3CR3T-VALUE-42"
    with _serving(_Misbehaving) as url:  # a URL with a secret that reached the class anyway (built by hand)
        served = url.replace("http://", f"http://user:{secret}@")
        llm = ServedOpenAILike(model="m", api_base=f"{served}/html/v1", api_key="x", is_chat_model=True)
        with pytest.raises(ModelServerError, match="not an OpenAI-style reply") as info:
            llm.complete("hi")
    assert secret not in str(info.value) and "http://***@127.0.0.1:" in str(info.value)
