"""Reading JSONL input files with errors that name the file and line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from llama_index_kgplus._files import iter_utf8_lines
from llama_index_kgplus._paths import user_path
from llama_index_kgplus.errors import InputDataError

__all__ = [
    "id_field",
    "iter_jsonl",
    "long_number",
    "text_field",
]


def iter_jsonl(path: str | Path, what: str = "File", *, per_line: bool = False) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``("<path>:<line>", record)`` for each non-blank line; every record must be a JSON object.

    Lines end at ``\n`` only (``\r\n`` too): a raw U+2028 or form feed inside a JSON string is text, not a
    line break. The file is read one line at a time (``per_line``: see :func:`iter_utf8_lines`)."""
    path = user_path(path)
    for lineno, line in iter_utf8_lines(path, what, per_line=per_line):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputDataError(f"{where}: invalid JSON ({exc.msg} at column {exc.colno}).") from exc
        except RecursionError as exc:
            raise InputDataError(f"{where}: JSON nested too deeply.") from exc
        except ValueError as exc:  # an integer of more than 4,300 digits
            raise InputDataError(f"{where}: {long_number(exc)}") from exc
        if not isinstance(record, dict):
            raise InputDataError(f"{where}: each line must be a JSON object.")
        yield where, record


def long_number(exc: ValueError) -> str:
    """What to say of a JSON integer Python refuses to read (more than ``sys.get_int_max_str_digits()`` digits)."""
    return f"a number is too long to read ({str(exc).split(';')[0]}); write it as a string."


def text_field(record: dict[str, Any], key: str, where: str, *, required: bool = True) -> str | None:
    """``record[key]`` as a string: ``None`` when absent or null and not ``required``; any other type is an
    error naming the line (a list is never indexed as its Python repr)."""
    value = record.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        got = "missing" if key not in record else ("null" if value is None else _json_type(value))
        raise InputDataError(f'{where}: "{key}" must be a string, not {got}.')
    return value


def id_field(record: dict[str, Any], key: str, where: str) -> str:
    """An id: a non-empty string or an integer (as its decimal text)."""
    value = record.get(key)
    if isinstance(value, bool) or not isinstance(value, (str, int)) or (isinstance(value, str) and not value.strip()):
        got = "missing" if key not in record else ("null" if value is None else repr(value)[:40])
        raise InputDataError(f'{where}: "{key}" must be a non-empty string or an integer, not {got}.')
    return str(value)


def _json_type(value: Any) -> str:
    return {dict: "an object", list: "a list", bool: "a boolean", int: "a number", float: "a number"}.get(
        type(value), "a value"
    )
