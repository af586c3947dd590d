"""Every script in examples/ runs as shipped, each in a new process and an empty folder, on the bundled sample.

The 0.5B model answers (``KGPLUS_LLM``): these tests check that the scripts work, not the answers' quality.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

# What each script's output must show (a regular expression searched in stdout).
EXPECTED = {
    "hierarchy.py": r"^1 \d\.\d+ ",  # a summary node (level 1) among the hits
    "raptor.py": r"^[1-9]\d* summaries; levels of the hits: \[",
    "glossary.py": r"^\[.+\] -> .+",  # selected terms and the rewritten query
    "kg_paths.py": r"^virus -\[causes\]-> disease or syndrome$",
    "multihop.py": r"^Ermengarde of Tours \[",  # the bridge passage, reached through the graph
    "routing.py": r"^sql SELECT .+ \d+\nkg$",
    "global_search.py": r"^\['.+'\]$",  # the answer's cited documents (titles)
    "compression.py": r"'llm_calls': 1, .*'first_token_seconds': \d",
    "evaluation.py": r"\| recall@5 \| graph \|",
}


def test_every_example_has_an_expectation():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(EXPECTED)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs(name, tmp_path):
    env = {**os.environ, "KGPLUS_LLM": "qwen2.5-coder-0.5b", "PYTHONUNBUFFERED": "1"}
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1800
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(EXPECTED[name], done.stdout, flags=re.M), done.stdout[-3000:]
