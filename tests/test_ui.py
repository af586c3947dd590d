"""The browser workbench (``kgplus ui``): its logic through Streamlit's ``AppTest`` on a small real index (the real
embedding model; answers from ``ScriptedLLM``), the escaping of document text, the path guard, the command's
errors, and one end-to-end run in a real headless Chromium with the real local 0.5B model."""

from __future__ import annotations

import html
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from llama_index_kgplus import (
    build_index,  # noqa: E402
    load_corpus,  # noqa: E402
)
from llama_index_kgplus._testing import ScriptedLLM  # noqa: E402
from llama_index_kgplus.cli import main  # noqa: E402
from llama_index_kgplus.errors import InputDataError  # noqa: E402
from llama_index_kgplus.evaluation import EvalRunner, load_dataset, write_report  # noqa: E402
from llama_index_kgplus.sample import SAMPLE_WEATHER_TABLE  # noqa: E402
from llama_index_kgplus.ui import Workbench, WorkbenchConfig
from llama_index_kgplus.ui._config import CONFIG_ENV
from llama_index_kgplus.ui._eval_folder import EvalFolder
from llama_index_kgplus.ui._evidence import matching_sentences, paths_dot
from llama_index_kgplus.ui._safety import escape_label, escape_text, highlight_html, safe_path

APP = Path(__file__).resolve().parent.parent / "llama_index_kgplus" / "ui" / "app.py"
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
XSS = "<script>alert(1)</script> and <img src=x onerror=alert(1)> and ![tracker](http://example.com/x.png)"
DOCS = [
    {
        "id": "venv",
        "title": "Virtual environments",
        "text": "A virtual environment is a self-contained directory tree that contains a Python installation. "
        "To create a virtual environment, run python -m venv followed by the folder name. "
        "Activate it with source tutorial-env/bin/activate on Unix or tutorial-env\\Scripts\\activate on Windows.\n\n"
        "Packages installed with pip then go into the environment, not into the system Python.",
    },
    {
        "id": "hostile",
        "title": "A hostile page",
        "text": f"This page tries to run code in the browser. {XSS}\n\nIt also has a second paragraph.",
    },
    {
        "id": "exceptions",
        "title": "Errors and exceptions",
        "text": "The finally clause of a try statement runs whether or not an exception occurred. "
        "It is the place to release resources such as files or network connections.",
    },
]
ANSWER = "Run python -m venv followed by the folder name to create a virtual environment."


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory, embed_model) -> Path:
    root = tmp_path_factory.mktemp("ui")
    corpus = root / "docs.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCS), encoding="utf-8")
    build_index(load_corpus(corpus), root / "index", embed_model=embed_model, chunk_size=128, show_progress=False)
    return root / "index"


@pytest.fixture(scope="module")
def eval_dir(index_dir, embed_model, tmp_path_factory) -> Path:
    """A real `kgplus eval`-style folder: two pipelines over the index, scripted answers, metrics without a judge."""
    from llama_index_kgplus import load_index

    root = tmp_path_factory.mktemp("eval")
    dataset = root / "q.jsonl"
    rows = [
        {"id": "q1", "question": "How do I create a virtual environment?", "answers": ["python -m venv"],
         "gold_ids": ["venv"]},
        {"id": "q2", "question": "When does a finally clause run?", "answers": ["whether or not an exception"],
         "gold_ids": ["exceptions"]},
    ]  # fmt: skip
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    index = load_index(index_dir, embed_model=embed_model)
    pipelines = {
        "baseline": index.as_query_engine(llm=ScriptedLLM(default="I do not know."), similarity_top_k=2),
        "better": index.as_query_engine(
            llm=ScriptedLLM(rules=[(r"create a virtual environment\?", "Use python -m venv."), (r"finally clause run\?", "At the end.")]),
            similarity_top_k=2,
        ),
    }  # fmt: skip
    out = root / "out"
    # a scripted judge (hand-checkable verdicts) for faithfulness: the judge's statements and verdicts to show
    judge = ScriptedLLM(
        rules=[
            (r"Break the answer", json.dumps({"statements": ["Use python -m venv."]})),
            (r"Statement: ", json.dumps({"reason": "the passage says so", "verdict": "yes"})),
        ],
        default="I cannot do that.",
    )
    records = EvalRunner(
        load_dataset(dataset),
        pipelines,
        out,
        metrics=["answer_contains", "token_f1", "hit@5", "faithfulness"],
        llm=judge,
        show_progress=False,
    ).run()
    write_report(records, list(pipelines), out)
    return out


def _app(config: WorkbenchConfig, bench: Workbench | None = None) -> AppTest:
    os.environ[CONFIG_ENV] = config.to_json()
    at = AppTest.from_file(str(APP), default_timeout=120)
    if bench is not None:
        at.session_state["kgplus_workbench"] = bench
    return at.run()


def _label(element) -> str:
    """A widget label as the browser shows it (the page backslash-escapes Markdown in labels from documents)."""
    return re.sub(r"\\(.)", r"\1", element.label)


def _all_markdown(at: AppTest) -> str:
    return "\n".join(str(m.value) for m in at.markdown)


# ------------------------------------------------------------------------------------------------ pure logic


@pytest.mark.parametrize(
    "text",
    [XSS, "<b onmouseover=alert(1)>x</b>", "[link](javascript:alert(1))", "a\n\n<script>x</script>", "$x$ :red[y]"],
)
def test_escape_text_is_inert_and_exact(text):
    escaped = escape_text(text)
    assert "<" not in escaped.replace("<br>", "") and ">" not in escaped.replace("<br>", "")
    assert not re.search(r"[\[\]()!$:]", re.sub(r"&#\d+;", "", escaped))  # no Markdown punctuation left
    assert html.unescape(escaped.replace("<br>", "\n")) == text  # shown exactly as written


def test_labels_from_documents_show_no_link_or_image():
    label = escape_label("![x](https://example.invalid/x.png) [click](https://example.invalid)\n*bold*")
    assert "](" not in label.replace("\\]\\(", "") and "\n" not in label
    assert (
        re.sub(r"\\(.)", r"\1", label) == "![x](https://example.invalid/x.png) [click](https://example.invalid) *bold*"
    )


def test_highlight_marks_the_matching_sentences_and_escapes_the_rest():
    text = "First <i>sentence</i>. Run python -m venv to create an environment. Last one."
    shown = highlight_html(text, ["Run python -m venv to create an environment."])
    assert shown.count("<mark>") == 1 and "&#60;i&#62;" in shown and "<i>" not in shown
    assert matching_sentences(text, ANSWER) == ["Run python -m venv to create an environment."]


def test_kg_paths_become_one_graph_with_stored_directions():
    paths = [
        {
            "nodes": [{"cid": "V", "name": 'Virus "x"'}, {"cid": "D", "name": "Disease"}, {"cid": "O", "name": "Org"}],
            "relationships": [{"type": "causes", "direction": "->"}, {"type": "part_of", "direction": "<-"}],
        }
    ]
    dot = paths_dot(paths)
    assert '"V" -> "D" [label="causes"]' in dot and '"O" -> "D" [label="part_of"]' in dot
    assert 'label="Virus \\"x\\""' in dot  # quotes escaped for DOT


def test_a_path_outside_the_given_sources_is_refused(tmp_path):
    root = tmp_path / "given"
    root.mkdir()
    (root / "inside.txt").write_text("ok")
    (tmp_path / "secret.txt").write_text("secret")
    (root / "link.txt").symlink_to(tmp_path / "secret.txt")
    assert safe_path("inside.txt", [root]) == (root / "inside.txt").resolve()
    for bad in ["../secret.txt", str(tmp_path / "secret.txt"), "/etc/passwd", "link.txt", "sub/../../secret.txt"]:
        with pytest.raises(InputDataError, match="not inside the sources"):
            safe_path(bad, [root])


def test_eval_folder_lists_only_its_own_plots_and_sorts_worst_first(eval_dir, tmp_path):
    outside = tmp_path / "outside.png"
    outside.write_bytes(b"\x89PNG")
    (eval_dir / "sneaky.png").symlink_to(outside)
    try:
        folder = EvalFolder(eval_dir)
        assert folder.plots() and all(p.resolve().parent == eval_dir.resolve() for p in folder.plots())
        assert "sneaky.png" not in [p.name for p in folder.plots()]
    finally:
        (eval_dir / "sneaky.png").unlink()
    assert folder.pipelines == ["baseline", "better"]
    rows = folder.compare("baseline", "better", "answer_contains", order="worst")
    assert [r["sample_id"] for r in rows] and rows[0]["first"]["answer"] == "I do not know."
    sums = [(r["first"]["score"] or 0) + (r["second"]["score"] or 0) for r in rows]
    assert sums == sorted(sums)
    with pytest.raises(InputDataError, match="No pipeline"):
        folder.compare("baseline", "nope", "answer_contains")


# ------------------------------------------------------------------------------------------------ the pages


def test_ask_streams_the_answer_with_route_usage_and_highlighted_evidence(index_dir, embed_model):
    config = WorkbenchConfig(index=index_dir, tables={"weather": SAMPLE_WEATHER_TABLE}).check()
    llm = ScriptedLLM(default=ANSWER)
    at = _app(config, Workbench(config, llm=llm, embed_model=embed_model))
    assert not at.exception
    at.text_input(key="question").input("How do I create a virtual environment?")
    at.button[0].click().run()
    assert not at.exception
    shown = _all_markdown(at)
    assert escape_text(ANSWER) in shown
    assert "route **local**" in shown and "engine **vector_index**" in shown
    assert [m.label for m in at.metric][:3] == ["LLM calls", "prompt tokens", "completion tokens"]
    assert at.metric[0].value == "1"
    labels = [_label(e) for e in at.expander]
    assert labels and labels[0].startswith("[1] venv")
    assert "<mark>" in shown and "Why this source" in shown
    assert "Activate it with source" in html.unescape(shown)
    # the whole document on demand
    at.toggle(key="ask-doc-0").set_value(True).run()
    assert "system Python" in html.unescape(_all_markdown(at))


def test_ask_shows_the_glossary_rewrite_before_and_after(index_dir, embed_model, tmp_path):
    glossary = tmp_path / "glossary.json"
    terms = [{"term": "venv", "explanation": "The module that creates a virtual environment (python -m venv DIR)."}]
    glossary.write_text(json.dumps({"terms": terms}), encoding="utf-8")
    config = WorkbenchConfig(index=index_dir, glossary=glossary).check()
    rewrite = "How do I create a virtual environment with the venv module (python -m venv)?"
    llm = ScriptedLLM(rules=[(r"Rewritten query:\s*\Z", rewrite)], default=ANSWER)
    at = _app(config, Workbench(config, llm=llm, embed_model=embed_model))
    at.text_input(key="question").input("How do I use venv?")
    at.button[0].click().run()
    assert not at.exception
    assert [h.value for h in at.subheader][0] == "Glossary rewrite"
    shown = html.unescape(_all_markdown(at))
    assert "How do I use venv?" in shown and rewrite in shown and "terms: venv" in shown


def test_document_html_and_script_are_shown_as_text(index_dir, embed_model):
    config = WorkbenchConfig(index=index_dir).check()
    bench = Workbench(config, llm=ScriptedLLM(default="It says " + XSS), embed_model=embed_model)
    at = _app(config, bench)
    at.text_input(key="question").input("What does the hostile page try to run in the browser?")
    at.button[0].click().run()
    at.sidebar.radio(key="page").set_value("Browse").run()
    at.selectbox(key="browse-doc").set_value("hostile").run()
    at.toggle(key="browse-whole").set_value(True).run()
    assert not at.exception
    shown = _all_markdown(at)
    assert "&#60;script&#62;alert&#40;1&#41;&#60;/script&#62;" in shown
    assert "&#60;img src=x onerror=alert&#40;1&#41;&#62;" in shown.replace("&#61;", "=")
    for element in [*at.markdown, *at.caption]:
        value = str(element.value).lower()
        assert "<script" not in value and "<img" not in value and "](http" not in value


def test_ask_draws_the_kg_paths_of_a_kg_answer(index_dir, kg_store, embed_model):
    config = WorkbenchConfig(index=index_dir, kg_store=kg_store).check()
    llm = ScriptedLLM(default="A virus causes a disease or syndrome.")
    at = _app(config, Workbench(config, llm=llm, embed_model=embed_model))
    at.text_input(key="question").input("How is a virus related to a disease or syndrome?")
    at.button[0].click().run()
    assert not at.exception
    assert "engine **kg_paths**" in _all_markdown(at)
    assert _label(at.expander[0]).startswith("knowledge-graph paths")
    dot = at.get("graphviz_chart")[0].proto.spec
    assert '"virus" -> "disease_or_syndrome" [label="causes"]' in dot
    assert "virus -[causes]-> disease or syndrome" in [c.value for c in at.code][0]


def test_browse_shows_documents_chunks_and_the_kg(index_dir, kg_store):
    config = WorkbenchConfig(index=index_dir, kg_store=kg_store).check()
    at = _app(config)
    at.sidebar.radio(key="page").set_value("Browse").run()
    assert at.selectbox(key="browse-doc").options == ["exceptions", "hostile", "venv"]
    at.selectbox(key="browse-doc").set_value("venv").run()
    assert any(e.label.startswith("chunk 1") for e in at.expander)
    at.text_input(key="browse-kg-search").input("virus").run()
    assert not at.exception
    chosen = at.selectbox(key="browse-kg-entity")
    assert chosen.format_func(chosen.value) == "virus (virus)"
    graphs = [el for el in at.get("graphviz_chart")]
    assert graphs and "->" in graphs[0].proto.spec


@pytest.fixture(scope="module")
def graphrag_dir(tmp_path_factory) -> Path:
    """A real GraphRAG store built by the rule-based stand-in LLM of ``graphrag.testing`` (no language model)."""
    root = tmp_path_factory.mktemp("graphrag")
    corpus = root / "docs.jsonl"
    docs = [
        {"id": "a", "title": "Rivers", "text": "The Amazon River crosses Brazil. Brazil borders Peru."},
        {"id": "b", "title": "Peru", "text": "Peru lies on the Pacific. Lima is the capital of Peru."},
    ]
    corpus.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    assert main(["graphrag", "index", str(corpus), "--store", str(root / "store"), "--llm", RULE_LLM, "--quiet"]) == 0
    return root / "store"


RULE_LLM = "llama_index_kgplus.graphrag._testing:RuleBasedGraphRAGLLM"


def test_a_global_answer_shows_the_community_reports_it_used(graphrag_dir, embed_model):
    from llama_index_kgplus.graphrag._testing import RuleBasedGraphRAGLLM

    config = WorkbenchConfig(graphrag=graphrag_dir).check()
    at = _app(config, Workbench(config, llm=RuleBasedGraphRAGLLM(), embed_model=embed_model))
    at.text_input(key="question").input("What are the main themes across all of these documents about Peru and Brazil?")
    at.button[0].click().run()
    assert not at.exception
    assert "engine **graphrag_global**" in _all_markdown(at)
    reports = [_label(e) for e in at.expander if "community report:" in _label(e)]
    assert reports and all("(rating " in label for label in reports)
    assert "in the map step of global search" in html.unescape(_all_markdown(at))


def test_browse_lists_the_communities_with_their_reports_and_sources(graphrag_dir):
    config = WorkbenchConfig(graphrag=graphrag_dir).check()
    at = _app(config)
    at.sidebar.radio(key="page").set_value("Browse").run()
    assert not at.exception
    labels = [_label(e) for e in at.expander if " · rating " in _label(e)]
    assert labels and all(label.startswith("level ") for label in labels)
    shown = html.unescape(_all_markdown(at))
    assert re.search(r"source documents: (a|b)(, b)?\b", shown)
    at.text_input(key="browse-communities-search").input("no such entity anywhere").run()
    assert "0 communities" in html.unescape(_all_markdown(at))


def test_sessions_browsing_at_once_open_each_source_once(index_dir, graphrag_dir, monkeypatch):
    """Browser sessions share one Workbench: two that open the docstore and the GraphRAG store at the same
    moment get the same objects. The real openers run, slowed down (only a sleep is added) so that the two
    threads overlap."""
    from concurrent.futures import ThreadPoolExecutor

    from llama_index.core.storage.docstore import SimpleDocumentStore

    from llama_index_kgplus.graphrag import GraphRAGIndex

    opened: list[str] = []

    def slowed(name, real):
        def open_slowly(*args, **kwargs):
            opened.append(name)
            time.sleep(0.3)
            return real(*args, **kwargs)

        return open_slowly

    monkeypatch.setattr(
        SimpleDocumentStore, "from_persist_dir", slowed("docstore", SimpleDocumentStore.from_persist_dir)
    )
    monkeypatch.setattr(GraphRAGIndex, "from_defaults", slowed("graphrag", GraphRAGIndex.from_defaults))
    bench = Workbench(WorkbenchConfig(index=index_dir, graphrag=graphrag_dir).check())
    with ThreadPoolExecutor(4) as pool:
        stores = list(pool.map(lambda _: bench.docstore, range(2)))
        communities = list(pool.map(lambda _: bench.communities(), range(2)))
    assert sorted(opened) == ["docstore", "graphrag"]
    assert stores[0] is stores[1]
    assert communities[0] and communities[0] == communities[1]


def test_compare_shows_two_pipelines_side_by_side(eval_dir, index_dir):
    config = WorkbenchConfig(index=index_dir, eval_dir=eval_dir).check()
    at = _app(config)
    at.sidebar.radio(key="page").set_value("Compare").run()
    assert not at.exception
    assert at.selectbox(key="cmp-a").value == "baseline" and at.selectbox(key="cmp-b").value == "better"
    at.selectbox(key="cmp-metric").set_value("answer_contains").run()
    shown = html.unescape(_all_markdown(at))
    assert "I do not know." in shown and "Use python -m venv." in shown and "At the end." in shown
    assert shown.index("q2: When does") < shown.index("q1: How do I")  # worst first: q2 failed in both
    at.selectbox(key="cmp-order").set_value("question").run()
    shown = html.unescape(_all_markdown(at))
    assert shown.index("q1: How do I") < shown.index("q2: When does")
    assert at.get("image"), "the plots of the folder are shown"
    at.selectbox(key="cmp-metric").set_value("faithfulness").run()
    assert not at.exception
    shown = [j.proto.body for j in at.json]  # the judge's details, as st.json shows them
    assert any("the passage says so" in text and "Use python -m venv." in text for text in shown), shown


# ------------------------------------------------------------------------------------------------ the command


@pytest.fixture
def busy_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ui"], "Give at least one source"),
        (["ui", "--index", "/no/such/index"], "holds no index"),
        (["ui", "--table", "w=/no/such.csv"], "no file at /no/such.csv"),
        (["ui", "--table", "weather"], "give NAME=PATH"),
        (["ui", "--graphrag", "/tmp"], "holds no GraphRAG index"),
        (["ui", "--eval", "/tmp"], "not a `kgplus eval` output"),
        (["ui", "--glossary", "/no/such.json", "--table", f"w={SAMPLE_WEATHER_TABLE}"], "give --index too"),
        (["ui", "--kg-store", "ladybug:///no/such/kg.lbug"], "does not exist"),
        (["ui", "--table", f"w={SAMPLE_WEATHER_TABLE}", "--port", "70000"], "65535"),
    ],
)
def test_bad_options_fail_in_one_line_before_the_server_starts(args, message, cli_error):
    assert message in cli_error(args)


def test_the_demo_prints_a_workbench_command_that_parses():
    import shlex

    from llama_index_kgplus._demo import workbench_command
    from llama_index_kgplus.cli._parser import build_parser

    words = shlex.split(workbench_command())
    args = build_parser().parse_args(words[1:])
    assert words[:2] == ["kgplus", "ui"] and args.index.name == "index" and args.kg_store.startswith("ladybug://")
    assert args.glossary.is_file() and dict(args.table)["weather"] == SAMPLE_WEATHER_TABLE


def test_a_port_in_use_is_refused(busy_port, capsys):
    assert main(["ui", "--table", f"w={SAMPLE_WEATHER_TABLE}", "--port", str(busy_port)]) == 2
    assert f"--port {busy_port} is in use" in capsys.readouterr().err


def test_a_bad_glossary_is_refused_with_its_position(index_dir, tmp_path, capsys):
    bad = tmp_path / "g.json"
    bad.write_text('{"terms": [{"term": "x"}]}')
    assert main(["ui", "--index", str(index_dir), "--glossary", str(bad)]) == 2
    assert "g.json" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------ a real browser


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_http(url: str, deadline: float, proc: subprocess.Popen) -> None:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"kgplus ui exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"{url} did not answer in time")


def _chromium(profile: Path):
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    if not (Path("/usr/bin/chromium").exists() and Path("/usr/bin/chromedriver").exists()):
        pytest.skip("no system Chromium: `apt-get install chromium chromium-driver` (scripts/bootstrap.sh does it)")
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1400,1800"]:  # fmt: skip
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    return webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"), options=options)


def _citations(driver, by) -> list:
    return [s for s in driver.find_elements(by.CSS_SELECTOR, "[data-testid='stExpander'] summary") if "[1]" in s.text]


@pytest.mark.slow
def test_in_a_real_browser_ask_wait_for_the_answer_and_open_a_citation(index_dir, tmp_path):
    """Start `kgplus ui` (the real 0.5B model), ask in headless Chromium, open the first source, see its passage,
    save a screenshot (test-artifacts/workbench.png); records the first page load time after start-up."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    driver = _chromium(tmp_path / "chromium-profile")
    port = _free_port()
    command = [sys.executable, "-m", "llama_index_kgplus.cli", "ui", "--index", str(index_dir), "--port", str(port),
               "--llm", "qwen2.5-coder-0.5b", "--top-k", "3", "--context-budget", "256"]  # fmt: skip
    log = (tmp_path / "server.log").open("w")
    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    ARTIFACTS.mkdir(exist_ok=True)
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_http(f"{url}/_stcore/health", time.monotonic() + 60, proc)
        driver.get("data:text/html,<p>browser ready</p>")  # the browser's own start-up is not the app's page load
        started = time.perf_counter()
        driver.get(url)
        wait = WebDriverWait(driver, 30, poll_frequency=0.02)  # the default polls every 0.5 s: too coarse to time
        box = wait.until(ec.visibility_of_element_located((By.CSS_SELECTOR, "input[aria-label='Question']")))
        first_load = time.perf_counter() - started
        started = time.perf_counter()
        driver.refresh()
        box = wait.until(ec.visibility_of_element_located((By.CSS_SELECTOR, "input[aria-label='Question']")))
        reload = time.perf_counter() - started
        timing = f"first page load after start-up: {first_load:.2f} s (new browser profile); reload: {reload:.2f} s\n"
        (ARTIFACTS / "first-page-load.txt").write_text(timing)
        print(timing)

        box.send_keys("How do I create a virtual environment?")
        driver.find_element(By.XPATH, "//button[.//p[text()='Ask']]").click()
        # the sources are listed when the answer is complete (st.status is an expander too: wait for "[1] ...")
        WebDriverWait(driver, 300).until(lambda d: _citations(d, By))
        answer = driver.find_element(By.CSS_SELECTOR, ".st-key-answer").text
        assert answer.strip() and not answer.endswith("▌")
        citation = _citations(driver, By)[0]
        citation.click()
        passage = wait.until(ec.visibility_of_element_located((By.CSS_SELECTOR, ".st-key-passage-0")))
        assert "venv" in passage.text or "virtual environment" in passage.text
        driver.save_screenshot(str(ARTIFACTS / "workbench.png"))
        driver.save_screenshot(str(tmp_path / "workbench.png"))
    finally:
        driver.save_screenshot(str(tmp_path / "last.png"))  # what the browser showed last, pass or fail
        driver.quit()
        os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
        log.close()


# ------------------------------------------------------------------------------------------------ malformed eval folders


def _eval_folder(root: Path, header: str = "pipeline,sample_id,metric,score,invalid_reason") -> Path:
    """A hand-made `kgplus eval` folder whose cached answers, questions and ids are numbers."""
    root.mkdir()
    rows = ["a,1,token_f1,0.5,", "b,1,token_f1,0.25,"]
    (root / "per_question.csv").write_text(header + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    (root / "cache").mkdir()
    answers = [
        {"pipeline": "a", "sample_id": 1, "question": 7, "answer": 42, "contexts": [3.5, "text"]},
        {"pipeline": "b", "sample_id": 1, "question": 7, "answer": ["x", 1], "contexts": "not a list"},
    ]
    (root / "cache" / "answers.jsonl").write_text("".join(json.dumps(a) + "\n" for a in answers), encoding="utf-8")
    (root / "cache" / "scores.jsonl").write_text(
        json.dumps({"pipeline": "a", "sample_id": "1", "metric": "token_f1", "details": "not an object"}) + "\n"
    )
    return root


def test_an_eval_folder_without_a_column_is_refused_in_one_line_at_start_up(tmp_path, cli_error):
    folder = _eval_folder(tmp_path / "eval", header="sample_id,metric,score,invalid_reason")
    message = "per_question.csv:1: the header lacks column(s) pipeline"
    with pytest.raises(InputDataError, match=re.escape(message)):
        EvalFolder(folder)
    assert message in cli_error(["ui", "--eval", str(folder)])


def test_compare_shows_numbers_in_an_eval_folder_as_text(tmp_path):
    folder = EvalFolder(_eval_folder(tmp_path / "eval"))
    [row] = folder.compare("a", "b", "token_f1")
    assert (row["question"], row["first"]["answer"], row["second"]["answer"]) == ("7", "42", '["x", 1]')
    assert row["first"]["contexts"] == ["3.5", "text"] and row["second"]["contexts"] == []
    assert row["first"]["details"] == {}
    at = _app(WorkbenchConfig(eval_dir=folder.root).check())
    at.sidebar.radio(key="page").set_value("Compare").run()
    assert not at.exception
    assert "42" in html.unescape(_all_markdown(at))


def test_compare_shows_an_eval_folder_broken_after_start_up_as_one_line(tmp_path):
    root = _eval_folder(tmp_path / "eval")
    config = WorkbenchConfig(eval_dir=root).check()
    (root / "per_question.csv").write_text('pipeline,sample_id\n"a,1\n', encoding="utf-8")
    at = _app(config)
    at.sidebar.radio(key="page").set_value("Compare").run()
    assert not at.exception
    assert [e.value for e in at.error] == [
        f"{root.resolve() / 'per_question.csv'}:1: the header lacks column(s) metric, score; a `kgplus eval` output has pipeline, sample_id, metric, score, invalid_reason."
    ]
