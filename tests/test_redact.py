"""No secret is ever printed: every URL or URI the pack shows (errors, log lines, reports, JSON) goes through one
redaction helper, ``llama_index_kgplus._redact``. First the helper, then every entry point that takes a URL (model
specs, server errors, graph store URIs, the CLI, the workbench's configuration, ``kgplus doctor``, what an index
records), fed URLs that carry a secret: the secret appears in no exception, no output and no log record."""

from __future__ import annotations

import contextlib
import http.server
import importlib
import io
import json
import logging
import pkgutil
import threading

import pytest

from llama_index_kgplus._redact import get_logger, redact_text, redact_url
from llama_index_kgplus._testing import free_port
from llama_index_kgplus.cli import main
from llama_index_kgplus.errors import GraphStoreError, KGPlusError, KGPlusSetupError

SECRET = "S3CR3T-VALUE-42"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"bolt://neo4j:{SECRET}@db:7687", "bolt://***@db:7687"),
        (f"bolt://{SECRET}@db", "bolt://***@db"),
        (f"bolt://u:a/{SECRET}@db/x", "bolt://***@db/x"),  # an unescaped "/" in the password
        (f"http://h/v1?client_secret={SECRET}", "http://h/v1?client_secret=***"),
        (f"http://h/v1?auth_token={SECRET}&model=m", "http://h/v1?auth_token=***&model=m"),
        (f"http://h/v1?a=1;sig={SECRET}", "http://h/v1?a=1;sig=***"),
        (
            f"https://b.s3.x/o?X-Amz-Date=1&X-Amz-Signature={SECRET}",
            "https://b.s3.x/o?X-Amz-Date=1&X-Amz-Signature=***",
        ),
        (f"http://h/v1?API_KEY={SECRET}", "http://h/v1?API_KEY=***"),
        (f"http://h/v1?Api%2DKey={SECRET}", "http://h/v1?Api%2DKey=***"),  # names are compared unescaped
        (f"http://h/cb#access_token={SECRET}&state=s", "http://h/cb#access_token=***&state=s"),
        (f"http://h/#/app?session={SECRET}", "http://h/#/app?session=***"),
        (f"http://h/?password={SECRET}&passwd=x&pwd=y", "http://h/?password=***&passwd=***&pwd=***"),
        (f"http://h/?credentials={SECRET}&cookie=c", "http://h/?credentials=***&cookie=***"),
    ],
)
def test_userinfo_and_secret_named_parameters_are_replaced(url, shown):
    assert redact_url(url) == shown
    assert redact_url(shown) == shown  # idempotent: a redacted URL stays as it is


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/v1",
        "http://h/v1?api-version=2024-02-01&model=m&limit=5",
        "ladybug:///data/my%20kg.lbug",
        "ladybug:///home/me@example.org/kg.lbug",  # no host, so no userinfo
        "neo4j://[::1]:7687",
        "http://h/v1?token=",  # nothing to hide
        "not a url at all",
        "openai-like:qwen",
    ],
)
def test_urls_without_secrets_are_left_as_they_are(url):
    assert redact_url(url) == url


def test_text_has_each_of_its_urls_redacted_and_the_rest_kept():
    text = f"cannot reach 'http://u:{SECRET}@h/v1?key={SECRET}' (refused); also bolt://x:{SECRET}@db."
    assert redact_text(text) == "cannot reach 'http://***@h/v1?key=***' (refused); also bolt://***@db."
    assert redact_text(ValueError(f"at neo4j://a:{SECRET}@h")) == "at neo4j://***@h"


# ---------------------------------------------------------------------- every entry point that takes a URL

#: URLs of model servers that carry a secret (nothing listens on port 1 of 127.0.0.1)
SERVER_URLS = [
    f"http://127.0.0.1:1/v1?client_secret={SECRET}",
    f"http://127.0.0.1:1/v1?auth_token={SECRET}",
    f"http://127.0.0.1:1/v1?sig={SECRET}",
    f"http://127.0.0.1:1/v1?X-Amz-Signature={SECRET}&X-Amz-Date=20261201",
    f"http://127.0.0.1:1/v1?session={SECRET}",
    f"http://127.0.0.1:1/v1#access_token={SECRET}",
    f"http://user:{SECRET}@127.0.0.1:1/v1",
    f"http://{SECRET}@127.0.0.1:1/v1",
]
#: graph store URIs that carry a secret
STORE_URIS = [
    f"bolt://user:{SECRET}@127.0.0.1:1",
    f"neo4j://neo4j:{SECRET}@127.0.0.1:1",
    f"falkordb://:{SECRET}@127.0.0.1:1",
    f"neo4j+s://127.0.0.1:1?auth_token={SECRET}",
    f"bolt://127.0.0.1:1#sig={SECRET}",
    f"neo4j://u:{SECRET}@[::1",  # malformed as well
    f"kuzu://u:{SECRET}@127.0.0.1/x",  # an unknown scheme as well
    f"ladybug:///tmp/kg.lbug?token={SECRET}",
]


def _assert_hidden(*texts: object) -> None:
    for text in texts:
        assert SECRET not in str(text), text


@pytest.fixture
def logs(caplog):
    caplog.set_level(logging.DEBUG)
    return caplog


@pytest.mark.parametrize("url", SERVER_URLS)
@pytest.mark.parametrize("kind", ["openai-like", "ollama"])
def test_a_model_spec_with_a_secret_in_its_url_is_refused_without_it(url, kind, logs, monkeypatch):
    from llama_index_kgplus.llm import embed_model_from_spec, llm_from_spec, resolve_model_spec
    from llama_index_kgplus.llm._specs import ModelSpec, parse_model_spec

    spec = f"{kind}:m@{url}"
    for build in (parse_model_spec, resolve_model_spec, llm_from_spec, embed_model_from_spec):
        with pytest.raises(KGPlusSetupError, match="carries credentials") as info:
            build(spec)
        _assert_hidden(info.value)
    with pytest.raises(KGPlusSetupError, match="carries credentials") as info:  # a spec made by hand
        resolve_model_spec(ModelSpec(kind, "m", url))  # type: ignore[arg-type]
    _assert_hidden(info.value)
    monkeypatch.setenv("KGPLUS_LLM", spec)  # the environment's spec
    with pytest.raises(KGPlusSetupError, match="carries credentials") as info:
        llm_from_spec()
    _assert_hidden(info.value, logs.text)


def test_a_server_error_names_the_server_without_its_secrets(logs):
    """A URL with a secret that reached a client anyway (an ``OpenAILike`` built by hand): the pack's description
    of the failure still hides it (the client's own debug log lines are the client's)."""
    from llama_index.llms.openai_like import OpenAILike

    from llama_index_kgplus.llm._specs import describe_server_error

    for url in SERVER_URLS:
        llm = OpenAILike(model="m", api_base=url.replace(":1/", f":{free_port()}/"), api_key="x", max_retries=0)
        with pytest.raises(Exception) as info:
            llm.complete("hi")
        described = describe_server_error(info.value)
        assert described is not None and described.startswith("cannot reach the model server at http://")
        _assert_hidden(described)


@pytest.mark.parametrize("uri", STORE_URIS)
def test_a_graph_store_uri_with_a_secret_is_refused_without_it(uri, tmp_path, logs):
    from llama_index_kgplus.graph_stores import open_graph_store
    from llama_index_kgplus.graph_stores._uri import GraphStoreURI
    from llama_index_kgplus.kg import KnowledgeGraph, import_kg
    from llama_index_kgplus.ui import WorkbenchConfig

    nodes, relationships = tmp_path / "n.csv", tmp_path / "r.csv"
    nodes.write_text("id:ID,name\n1,a\n")
    relationships.write_text(":START_ID,:END_ID,:TYPE\n1,1,R\n")
    entry_points = [
        lambda: GraphStoreURI.parse(uri),
        lambda: open_graph_store(uri),
        lambda: KnowledgeGraph.open(uri),
        lambda: import_kg(uri, nodes, relationships),
        lambda: WorkbenchConfig(kg_store=uri).check(),
    ]
    for entry_point in entry_points:
        with pytest.raises(GraphStoreError) as info:
            entry_point()
        _assert_hidden(info.value)
        assert "***" in str(info.value) or "empty" in str(info.value)  # the URI is shown, redacted
    _assert_hidden(logs.text)


def _cli(argv: list[str]) -> tuple[int | str | None, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code: int | str | None = main(argv)
        except SystemExit as exc:  # argparse
            code = exc.code
    return code, out.getvalue(), err.getvalue()


class _Embeddings(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible embedding endpoint on 127.0.0.1, so that a real index exists and no model loads."""

    def do_POST(self):  # noqa: N802 (the http.server name)
        texts = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["input"]
        texts = texts if isinstance(texts, list) else [texts]
        data = [{"object": "embedding", "index": i, "embedding": [1.0, len(t) % 7, 0.5]} for i, t in enumerate(texts)]
        body = json.dumps({"object": "list", "data": data, "model": "e"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Real inputs, so that each command gets as far as its URL: a corpus, an index built with a stub embedding
    server (still serving, and named by ``{embed}``), a glossary, node and relationship CSVs."""
    folder = tmp_path_factory.mktemp("inputs")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Embeddings)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    files = {
        "docs": folder / "docs.jsonl",
        "index": folder / "index",
        "glossary": folder / "glossary.csv",
        "nodes": folder / "nodes.csv",
        "relationships": folder / "relationships.csv",
        "embed": f"openai-like:e@http://127.0.0.1:{server.server_address[1]}/v1",
    }
    files["docs"].write_text('{"id": "a", "text": "Python makes virtual environments with venv."}\n')
    files["glossary"].write_text("term,definition\nvenv,a virtual environment\n")
    files["nodes"].write_text("id:ID,name\n1,a\n")
    files["relationships"].write_text(":START_ID,:END_ID,:TYPE\n1,1,R\n")
    assert main(["ingest", str(files["docs"]), "--index", str(files["index"]), "--embed-model", files["embed"]]) == 0
    yield {name: str(value) for name, value in files.items()}
    server.shutdown()


#: every command with an option that takes a URL or URI, given one with a secret ({...} are the inputs above;
#: {new} is a folder that does not exist yet)
SPEC = f"openai-like:m@{SERVER_URLS[0]}"
STORE = STORE_URIS[0]
INDEX = ["--index", "{index}", "--embed-model", "{embed}"]
COMMANDS_WITH_URLS = [
    *(["query", "How?", *INDEX, "--llm", f"openai-like:x@{url}"] for url in SERVER_URLS),
    ["query", "How?", *INDEX, "--json", "--llm", SPEC],
    ["retrieve", "How?", *INDEX, "--glossary", "{glossary}", "--llm", SPEC],
    ["ask", "How?", *INDEX, "--llm", SPEC],
    ["ask", "How?", "--kg-store", STORE],
    ["route", "How?", "--kg-store", STORE],
    ["ingest", "{docs}", "--index", "{new}", "--embed-model", SPEC],
    ["ingest", "{docs}", "--index", "{new}", "--embed-model", "{embed}", "--entities", "kg", "--kg-store", STORE],
    ["ingest", "{docs}", "--index", "{new}", "--embed-model", "{embed}", "--entity-store", STORE],
    ["eval", "--dataset", "{docs}", "--corpus", "{docs}", "--pipelines", "kg", "--out", "{new}", "--kg-store", STORE],
    ["eval", "--dataset", "{docs}", "--corpus", "{docs}", "--pipelines", "baseline", "--out", "{new}",
     "--judge-llm", SPEC],
    ["graphrag", "query", "How?", "--store", "{new}", "--llm", SPEC],
    *(["kg", "import", "--nodes", "{nodes}", "--relationships", "{relationships}", "--store", uri] for uri in STORE_URIS),
    ["kg", "paths", "a", "--store", STORE],
    ["kg", "ask", "How?", "--store", STORE],
    ["kg", "ask", "How?", "--llm", SPEC],
    *(["ui", "--kg-store", uri] for uri in STORE_URIS),
    ["ui", "--index", "{new}", "--llm", SPEC],  # (a real index: the old code served the workbench)
    ["doctor", "--llm", SPEC, "--embed-model", "{embed}"],
    ["demo", "--llm", SPEC],
    ["query", "How?", *INDEX, "--retrieval", STORE],  # argparse's invalid choice quotes the value
]  # fmt: skip


@pytest.mark.parametrize("argv", COMMANDS_WITH_URLS, ids=[" ".join(argv) for argv in COMMANDS_WITH_URLS])
def test_no_command_prints_a_secret_of_a_url_it_was_given(argv, inputs, tmp_path, logs, monkeypatch):
    monkeypatch.setenv("KGPLUS_LLM_TIMEOUT", "5")
    new = tmp_path / "new"
    code, out, err = _cli([arg.format(new=new, **inputs) for arg in argv])
    assert code == 2, (argv, code, out, err)
    assert len(err.strip().splitlines()) == 1, (argv, err)
    _assert_hidden(out, err, logs.text)
    assert not new.exists()  # refused before anything was written


@pytest.mark.parametrize("uri", STORE_URIS[:3])
def test_doctor_hides_a_secret_of_the_default_store_uri(uri, monkeypatch):
    from llama_index_kgplus._doctor import run_doctor

    monkeypatch.setenv("KGPLUS_GRAPH_STORE", uri)
    out = io.StringIO()
    assert not run_doctor(llm="no-such-model", embed_model="no-such-model", out=out)  # both refused at once
    report = out.getvalue()
    assert "[FAIL] graph store: GraphStoreError: Put no credentials in the graph store URI '" in report
    assert "***@127.0.0.1:1'" in report
    _assert_hidden(report)


def test_what_an_index_records_of_a_served_embedding_model_holds_no_secret(tmp_path):
    from llama_index.embeddings.openai import OpenAIEmbedding

    from llama_index_kgplus._indexing import check_embed_model, embed_model_record

    model = OpenAIEmbedding(model_name="e", api_base=f"http://u:{SECRET}@127.0.0.1:1/v1?key={SECRET}", api_key="x")
    record = embed_model_record(model)
    assert record["server"] == "http://***@127.0.0.1:1/v1?key=***"
    (tmp_path / "ingest.json").write_text(
        '{"embed_model": {"class": "OpenAIEmbedding", "model_name": "e", '
        f'"server": "http://u:{SECRET}@10.0.0.1/v1"}}}}'  # an index written before redaction
    )
    with pytest.raises(KGPlusError, match=r"built with the embedding model e at http://\*\*\*@10.0.0.1/v1") as info:
        check_embed_model(tmp_path, model)
    _assert_hidden(info.value)


def test_every_logger_of_the_pack_redacts_its_records(caplog):
    import llama_index_kgplus

    for module in pkgutil.walk_packages(llama_index_kgplus.__path__, "llama_index_kgplus."):
        if module.name.endswith(("__main__", "ui.app", "ui._serve")):
            continue  # scripts: running them is not importing them
        with contextlib.suppress(ImportError):  # an optional extra that is not installed
            importlib.import_module(module.name)
    loggers = [
        logging.getLogger(name)
        for name in list(logging.Logger.manager.loggerDict)
        if name.startswith("llama_index_kgplus") and isinstance(logging.Logger.manager.loggerDict[name], logging.Logger)
    ]
    plain = [
        logger.name for logger in loggers if not any(type(f).__name__ == "_RedactingFilter" for f in logger.filters)
    ]
    assert len(loggers) >= 10 and not plain, plain  # every module logs through _redact.get_logger
    caplog.set_level(logging.DEBUG)
    get_logger("llama_index_kgplus.kg._graph").warning("Cannot reach %s (%s)", f"bolt://u:{SECRET}@h", "refused")
    assert caplog.records[-1].getMessage() == "Cannot reach bolt://***@h (refused)"
