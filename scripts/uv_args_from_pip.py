"""Print, one per line, the `uv pip install` options that carry over this machine's pip configuration.

uv does not read pip.conf or PIP_* variables, so the indexes, find-links and constraints that pip is configured
with (`pip config list`: the files and the environment) are passed on explicitly. Run with the venv's Python.
"""

import shlex
import subprocess
import sys

OPTIONS = {  # pip's key -> uv's option; all of them may hold several space-separated values
    "index-url": "--index-url",
    "extra-index-url": "--extra-index-url",
    "find-links": "--find-links",
    "constraint": "--constraint",
}
PRECEDENCE = {"global": 0, "install": 1, ":env:": 2}


def main() -> None:
    """Print the options: a pip setting from the environment wins over [install], which wins over [global]."""
    listing = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=True
    ).stdout
    chosen: dict[str, tuple[int, str]] = {}  # pip's precedence: the environment over [install] over [global]
    for line in listing.splitlines():
        key, _, value = line.partition("=")
        section, _, name = key.rpartition(".")
        rank = PRECEDENCE.get(section, -1)
        if rank >= 0 and name in OPTIONS and rank >= chosen.get(name, (-1, ""))[0]:
            chosen[name] = (rank, shlex.split(value)[0] if value else "")
    for name, (_, values) in chosen.items():
        for value in values.split():
            print(OPTIONS[name])
            print(value)


if __name__ == "__main__":
    main()
