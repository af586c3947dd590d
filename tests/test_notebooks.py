"""The notebooks as committed: each keeps the outputs of a real run, and what the suite changes when it runs them
(nbmake's ``post_cell_execute``, docs/development.md) only shortens a list the cell defined."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
SHORTEN = re.compile(r"^(\w+) = \1\[-?\d*:-?\d*(:-?\d+)?\]$")  # e.g. questions = questions[:1]


def code_cells(path: Path) -> list[dict]:
    return [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_code_cell_keeps_the_outputs_of_a_real_run_in_order(path):
    cells = code_cells(path)
    assert [c["execution_count"] for c in cells] == list(range(1, len(cells) + 1))
    assert any(c["outputs"] for c in cells)
    assert not [o for c in cells for o in c["outputs"] if o["output_type"] == "error"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_suite_only_shortens_a_list_the_cell_defined(path):
    for cell in code_cells(path):
        steps = cell.get("metadata", {}).get("nbmake", {})
        assert set(steps) <= {"post_cell_execute"}, "no mocked values: the suite runs the notebook's own code"
        for line in steps.get("post_cell_execute", []):
            if line.startswith("#"):
                continue
            match = SHORTEN.match(line)
            assert match, line
            assert re.search(rf"^{match[1]} = ", "".join(cell["source"]), flags=re.M), line
