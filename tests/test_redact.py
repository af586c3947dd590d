"""No secret is ever printed: every URL or URI the pack shows (errors, log lines, reports, JSON) goes through one
redaction helper, ``llama_index_kgplus._redact``. First the helper, then every entry point that takes a URL (model
specs, server errors, graph store URIs, the CLI, the workbench's configuration, ``kgplus doctor``, what an index
records), fed URLs that carry a secret: the secret appears in no exception, no output and no log record."""

from __future__ import annotations

import contextlib
import importlib
import io
import logging
import pkgutil

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


def _commands_with_urls(tmp_path) -> list[list[str]]:
    index, docs = str(tmp_path / "index"), str(tmp_path / "docs.jsonl")
    spec = f"openai-like:m@{SERVER_URLS[0]}"
    store = STORE_URIS[0]
    return [
        ["query", "q", "--index", index, "--llm", spec],
        ["retrieve", "q", "--index", index, "--glossary", docs, "--llm", spec],
        ["ask", "q", "--index", index, "--llm", spec],
        ["ask", "q", "--kg-store", store],
        ["route", "q", "--kg-store", store],
        ["ingest", docs, "--index", index, "--embed-model", spec],
        ["ingest", docs, "--index", index, "--entities", "kg", "--kg-store", store],
        ["ingest", docs, "--index", index, "--entity-store", store],
        ["eval", "--dataset", docs, "--corpus", docs, "--pipelines", "kg", "--out", index, "--kg-store", store],
        ["eval", "--dataset", docs, "--corpus", docs, "--pipelines", "baseline", "--out", index, "--judge-llm", spec],
        ["graphrag", "query", "q", "--store", index, "--llm", spec],
        ["kg", "import", "--nodes", docs, "--relationships", docs, "--store", store],
        ["kg", "paths", "a", "--store", store],
        ["kg", "ask", "q", "--store", store],
        ["kg", "ask", "q", "--llm", spec],
        ["ui", "--kg-store", store],
        ["ui", "--index", index, "--llm", spec],
        ["doctor", "--llm", spec, "--embed-model", "openai-like:e@http://127.0.0.1:1/v1"],
        ["demo", "--llm", spec],
        ["query", "q", "--index", index, "--retrieval", store],  # argparse's invalid choice quotes the value
    ]


def test_no_command_prints_a_secret_of_a_url_it_was_given(tmp_path, logs, monkeypatch):
    monkeypatch.setenv("KGPLUS_LLM_TIMEOUT", "5")
    for argv in _commands_with_urls(tmp_path):
        code, out, err = _cli(argv)
        assert code == 2, (argv, code, out, err)
        assert len(err.strip().splitlines()) == 1, (argv, err)
        _assert_hidden(out, err, logs.text)
    assert not (tmp_path / "index").exists()  # refused before anything was written


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
