"""The README is short, starts with runnable code, shows the examples exactly, and links only to files that exist.

Every ```python block of the README is the text of one script in ``examples/``; ``tests/test_examples.py`` runs
those scripts, so the README's snippets run as printed. Its ```bash blocks (install, make, the workbench, which
starts a server) are not executed.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
EXAMPLES = ROOT / "examples"

MAX_LINES = 250
FIRST_PYTHON_WITHIN = 60  # lines

_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", flags=re.S | re.M)
# [text](target) and ![alt](target); the target ends at whitespace or the closing parenthesis
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def _readme() -> str:
    return README.read_text(encoding="utf-8")


def _normalized(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def _blocks(language: str) -> list[str]:
    return [body for lang, body in _FENCE.findall(_readme()) if lang == language]


def _examples() -> dict[str, str]:
    return {path.name: _normalized(path.read_text(encoding="utf-8")) for path in sorted(EXAMPLES.glob("*.py"))}


def test_readme_is_short_and_starts_with_code():
    lines = _readme().splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines (at most {MAX_LINES})"
    first = next(i for i, line in enumerate(lines, 1) if line.strip() == "```python")
    assert first <= FIRST_PYTHON_WITHIN, f"the first python block starts on line {first}"


def test_every_code_block_says_its_language():
    languages = [lang for lang, _ in _FENCE.findall(_readme())]
    assert languages and set(languages) <= {"python", "bash", "text"}, languages


def test_every_python_block_is_one_example_and_every_example_is_shown():
    examples = _examples()
    shown = []
    for block in _blocks("python"):
        matches = [name for name, text in examples.items() if text == _normalized(block)]
        assert len(matches) == 1, f"this README block is not the text of one examples/*.py:\n{block}"
        shown += matches
    assert len(shown) == len(set(shown)), f"an example is shown twice: {shown}"
    assert sorted(shown) == sorted(examples), f"examples not in the README: {sorted(set(examples) - set(shown))}"


def test_every_relative_link_points_at_an_existing_file():
    targets = _LINK.findall(_readme())
    assert targets
    missing = []
    for target in targets:
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # https://..., mailto:, an anchor of this page
        path = (ROOT / target.split("#", 1)[0]).resolve()
        if not path.is_relative_to(ROOT) or not path.exists():
            missing.append(target)
    assert not missing, f"README.md links to files that do not exist: {missing}"
