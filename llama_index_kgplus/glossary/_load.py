"""Read glossaries from JSON, CSV or a dict, with errors that give the position of the problem.

JSON::

    {"terms": [{"term": "GIL", "explanation": "...", "aliases": ["global lock"], "see_also": ["thread"]}]}

``aliases``, ``see_also`` (lists of names) and ``metadata`` (an object) are optional; any other key is an error,
so a typo (``"alias"``) is reported instead of being dropped silently.

CSV (UTF-8, header row): ``term,explanation[,aliases][,see_also]``; several aliases or see-also names are
separated by ``|``; columns named ``metadata.KEY`` go to the entry's metadata.

Every error is an :class:`~llama_index_kgplus.errors.InputDataError` whose message starts with
``file:line:column`` (or ``file:line`` for CSV, ``<dict>: terms[i]`` for a dict) and says what to fix.
"""

from __future__ import annotations

import bisect
import csv
import io
import json
import json.decoder
import json.scanner
import re
from pathlib import Path
from typing import Any

from llama_index_kgplus._files import check_input_file, read_utf8
from llama_index_kgplus._jsonl import long_number
from llama_index_kgplus._paths import user_path
from llama_index_kgplus.errors import InputDataError
from llama_index_kgplus.glossary._entry import GlossaryEntry, check_entries

ENTRY_KEYS = ("term", "explanation", "aliases", "see_also", "metadata")
REQUIRED_KEYS = ("term", "explanation")
LIST_SEPARATOR = "|"


def load_entries(path: str | Path) -> list[GlossaryEntry]:
    """The entries of a ``.json`` or ``.csv`` glossary (chosen by suffix)."""
    path = user_path(path)
    check_input_file(path, "Glossary file")  # a device (/dev/zero) or FIFO is named as one, whatever its suffix
    suffix = path.suffix.lower()
    if suffix == ".json":
        return read_json_entries(path)
    if suffix == ".csv":
        return read_csv_entries(path)
    raise InputDataError(f"{path}: unknown glossary format {suffix or '(no suffix)'!r}; use .json or .csv.")


def _read_text(path: Path) -> str:
    text = read_utf8(path, "Glossary file")
    if not text.strip():
        raise InputDataError(f"{path} is empty: a glossary needs at least one term.")
    return text


def _line_starts(text: str) -> list[int]:
    return [0, *(m.end() for m in re.finditer("\n", text))]


def _line_col(starts: list[int], offset: int) -> tuple[int, int]:
    """1-based line and column of ``offset``, from the offsets where lines start (logarithmic per call)."""
    line = bisect.bisect_right(starts, offset)
    return line, offset - starts[line - 1] + 1


def _loads_with_offsets(text: str) -> tuple[Any, dict[int, int]]:
    """``json.loads`` that also records the offset of every JSON object (keyed by ``id`` of the dict)."""
    decoder = json.JSONDecoder()
    offsets: dict[int, int] = {}
    parse_object = json.decoder.JSONObject  # type: ignore[attr-defined]  # the pure-Python parser

    def recording(s_and_end: tuple[str, int], *args: Any, **kwargs: Any) -> tuple[Any, int]:
        obj, end = parse_object(s_and_end, *args, **kwargs)
        offsets[id(obj)] = s_and_end[1] - 1  # the opening brace
        return obj, end

    decoder.parse_object = recording  # type: ignore[attr-defined]
    # the C scanner would not call parse_object
    decoder.scan_once = json.scanner.py_make_scanner(decoder)  # type: ignore[attr-defined]
    return decoder.decode(text), offsets


def read_json_entries(path: str | Path) -> list[GlossaryEntry]:
    """Load ``{"terms": [...]}`` from a UTF-8 JSON file.

    Linear in the file's size: the file is parsed by the C parser and checked once; only when a check fails is
    it parsed again, recording where each object starts, so the message can give the line and column."""
    path = user_path(path)
    text = _read_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputDataError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}.") from exc
    except RecursionError as exc:
        raise InputDataError(f"{path}: JSON nested too deeply to be a glossary.") from exc
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise InputDataError(f"{path}: {long_number(exc)}") from exc
    try:
        return _build(data, str(path), lambda obj, label: f"{path}: {label}")
    except InputDataError:
        pass  # the same check again, to say where
    try:
        data, offsets = _loads_with_offsets(text)
    except RecursionError as exc:  # the pure-Python parser recurses deeper than the C one
        raise InputDataError(f"{path}: JSON nested too deeply to be a glossary.") from exc
    starts = _line_starts(text)

    def where(obj: Any, label: str) -> str:
        offset = offsets.get(id(obj))
        if offset is None:
            return f"{path}: {label}"
        line, col = _line_col(starts, offset)
        return f"{path}:{line}:{col}: {label}"

    return _build(data, str(path), where)


def entries_from_data(data: Any, source: str = "<dict>") -> list[GlossaryEntry]:
    """The validated entries of already-parsed glossary data."""
    return _build(data, source, lambda obj, label: f"{source}: {label}")


def _build(data: Any, source: str, where: Any) -> list[GlossaryEntry]:
    if not isinstance(data, dict) or "terms" not in data:
        raise InputDataError(
            f'{where(data, "top level")}: expected an object with a "terms" list, '
            f'like {{"terms": [{{"term": "...", "explanation": "..."}}]}}.'
        )
    extra = sorted(set(data) - {"terms"})
    if extra:
        raise InputDataError(f'{where(data, "top level")}: unknown key(s) {extra}; only "terms" is allowed.')
    records = data["terms"]
    if not isinstance(records, list):
        raise InputDataError(f'{where(data, "terms")}: "terms" must be a list, not {type(records).__name__}.')
    if not records:
        raise InputDataError(f"{where(data, 'terms')}: the glossary has no terms.")
    entries, labels = [], []
    for i, record in enumerate(records):
        label = f"terms[{i}]"
        if isinstance(record, dict) and isinstance(record.get("term"), str) and record["term"].strip():
            label += f" ({record['term'].strip()!r})"
        labels.append(where(record, label))
        entries.append(_entry(record, labels[-1]))
    check_entries(entries, lambda i: labels[i])
    return entries


def _entry(record: Any, label: str) -> GlossaryEntry:
    if not isinstance(record, dict):
        raise InputDataError(f"{label}: each term must be an object with term and explanation, not {record!r:.60}.")
    missing = [k for k in REQUIRED_KEYS if k not in record]
    if missing:
        raise InputDataError(f"{label}: missing key(s) {', '.join(repr(k) for k in missing)}.")
    unknown = sorted(set(record) - set(ENTRY_KEYS))
    if unknown:
        raise InputDataError(
            f'{label}: unknown key(s) {unknown}; allowed: {", ".join(ENTRY_KEYS)} (put extra data under "metadata").'
        )
    for key in REQUIRED_KEYS:
        if not isinstance(record[key], str):
            raise InputDataError(f"{label}: {key!r} must be a string, not {type(record[key]).__name__}.")
        if not record[key].strip():
            raise InputDataError(f"{label}: empty {key!r}; give the {key} text or remove the entry.")
    for key in ("aliases", "see_also"):
        value = record.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise InputDataError(f"{label}: {key!r} must be a list of non-empty strings, got {value!r:.80}.")
    if not isinstance(record.get("metadata", {}), dict):
        raise InputDataError(f"{label}: 'metadata' must be an object.")
    # the checks above are the model's rules; building without validating them again keeps 10^5 entries fast
    return GlossaryEntry.model_construct(
        _fields_set=set(record),
        term=record["term"].strip(),
        explanation=record["explanation"].strip(),
        aliases=[v.strip() for v in record.get("aliases", [])],
        see_also=[v.strip() for v in record.get("see_also", [])],
        metadata=dict(record.get("metadata", {})),
    )


def read_csv_entries(path: str | Path) -> list[GlossaryEntry]:
    """Load a CSV glossary with a header row (term, explanation, optional aliases/see_also/metadata.KEY)."""
    path = user_path(path)
    text = _read_text(path)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = [h.strip() for h in next(reader)]
    except csv.Error as exc:
        raise InputDataError(f"{path}:1: invalid CSV header ({exc}).") from exc
    missing = [k for k in REQUIRED_KEYS if k not in header]
    if missing:
        raise InputDataError(
            f"{path}:1: the header {header} lacks column(s) {', '.join(missing)}; "
            "the first row must name the columns: term,explanation[,aliases][,see_also]."
        )
    columns = ("term", "explanation", "aliases", "see_also")
    unknown = [h for h in header if h not in columns and not h.startswith("metadata.")]
    if unknown:
        raise InputDataError(
            f"{path}:1: unknown column(s) {unknown}; allowed: term, explanation, aliases, see_also, metadata.KEY."
        )
    dup = sorted({h for h in header if header.count(h) > 1})
    if dup:
        raise InputDataError(f"{path}:1: column(s) {dup} appear more than once in the header.")
    entries: list[GlossaryEntry] = []
    labels: list[str] = []
    start_line = 2
    try:
        for row in reader:
            line = start_line
            start_line = reader.line_num + 1
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise InputDataError(f"{path}:{line}: {len(row)} fields, the header has {len(header)}.")
            cells = dict(zip(header, row))
            term = cells["term"].strip()
            label = f"{path}:{line}: row {len(entries) + 1}" + (f" ({term!r})" if term else "")
            record: dict[str, Any] = {"term": cells["term"], "explanation": cells["explanation"]}
            for key in ("aliases", "see_also"):
                if cells.get(key, "").strip():
                    record[key] = [v.strip() for v in cells[key].split(LIST_SEPARATOR)]
            meta = {h.removeprefix("metadata."): v for h, v in cells.items() if h.startswith("metadata.") and v.strip()}
            if meta:
                record["metadata"] = meta
            labels.append(label)
            entries.append(_entry(record, label))
    except csv.Error as exc:
        raise InputDataError(f"{path}:{reader.line_num}: invalid CSV ({exc}).") from exc
    if not entries:
        raise InputDataError(f"{path}: the glossary has no terms (only a header).")
    check_entries(entries, lambda i: labels[i])
    return entries
