"""The README's Python snippets run as printed (those that build the routed engine in Python, here)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


@pytest.mark.slow
def test_the_routed_engine_snippet_runs_as_printed(tmp_path, monkeypatch, capsys):
    [snippet] = [block for block in _python_blocks(README.read_text(encoding="utf-8")) if "KGPlusSources(" in block]
    assert len(snippet.strip().splitlines()) < 20
    monkeypatch.chdir(tmp_path)  # the snippet writes ./index and ./kg.lbug
    namespace: dict = {}
    exec(compile(snippet, "README.md", "exec"), namespace)
    answer, routed = capsys.readouterr().out.strip().splitlines()[-2:]
    assert answer.startswith("sql SELECT") and int(answer.rsplit(" ", 1)[1]) >= 1  # route, SQL, LLM calls
    assert routed == "kg"
    assert namespace["hits"] and namespace["response"].metadata["rows"]
