"""Reading JSONL input files with errors that name the file and line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from llama_index_kgplus.errors import InputDataError


def iter_jsonl(path: str | Path, what: str = "File") -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``("<path>:<line>", record)`` for each non-blank line; every record must be a JSON object."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError as exc:
        raise InputDataError(f"{what} {path} does not exist.") from exc
    except UnicodeDecodeError as exc:
        raise InputDataError(f"{path} is not UTF-8 text (byte {exc.start}): re-encode it as UTF-8.") from exc
    except OSError as exc:
        raise InputDataError(f"Cannot read {path}: {exc}") from exc
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputDataError(f"{where}: invalid JSON ({exc.msg} at column {exc.colno}).") from exc
        if not isinstance(record, dict):
            raise InputDataError(f"{where}: each line must be a JSON object.")
        yield where, record
