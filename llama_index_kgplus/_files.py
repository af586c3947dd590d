"""Files that are whole or absent: every state file of the pack is written beside its target, flushed to disk and
renamed over it, so a crash, ``kill -9`` or a full disk leaves the old file or the new one, never a half.

Input files go through :func:`read_input_bytes` or :func:`read_utf8` (read whole into memory) or
:func:`iter_utf8_lines` (one line at a time): only regular files (a FIFO, device or socket is refused before it is
opened, so it cannot block or stream forever) of at most :func:`max_file_bytes` (1 GiB; ``$KGPLUS_MAX_FILE_MB``
changes it), each refusal one line naming the file.

Example:

```python
from llama_index_kgplus._files import atomic_write_json

atomic_write_json("index/hierarchy.json", {"version": 1, ...})

with atomic_open("index/entity_graph.npz") as handle:   # any writer that takes a binary file
    np.savez(handle, ...)
```
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from llama_index_kgplus._paths import user_path
from llama_index_kgplus.errors import InputDataError

__all__ = [
    "atomic_open",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "check_input_file",
    "iter_utf8_lines",
    "json_writer",
    "max_file_bytes",
    "read_input_bytes",
    "read_utf8",
    "sha256_file",
]

#: the environment variable that sets the largest file read whole into memory, in MB (default 1024)
MAX_FILE_MB_ENV = "KGPLUS_MAX_FILE_MB"
DEFAULT_MAX_FILE_MB = 1024


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: str = "wb", encoding: str | None = None) -> Iterator[IO[Any]]:
    """A handle on a hidden file beside ``path`` that replaces ``path`` when the block ends without an error
    (and is removed when it raises)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, mode, encoding=encoding) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(target.parent)


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_open`)."""
    with atomic_open(path, "wb") as handle:
        handle.write(data)


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` as UTF-8, atomically."""
    with atomic_open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def atomic_write_json(path: str | Path, data: Any, **dumps: Any) -> None:
    """Write ``data`` to ``path`` as UTF-8 JSON (``dumps`` go to ``json.dumps``), atomically."""
    atomic_write_text(path, json.dumps(data, ensure_ascii=False, **dumps))


def json_writer(data: Any, **dumps: Any) -> Callable[[Path], None]:
    """A function that writes ``data`` as JSON (:func:`atomic_write_json`) to the path it is given."""
    return lambda path: atomic_write_json(path, data, **dumps)


def fsync_dir(folder: Path) -> None:
    """Make the rename itself durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_UTF8_BOM = b"\xef\xbb\xbf"


def max_file_bytes() -> int:
    """The largest file read whole into memory, in bytes: ``$KGPLUS_MAX_FILE_MB`` megabytes (default 1024)."""
    raw = os.environ.get(MAX_FILE_MB_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_FILE_MB << 20
    try:
        megabytes = float(raw)
    except ValueError:
        megabytes = -1.0
    if not megabytes > 0:
        raise InputDataError(f"${MAX_FILE_MB_ENV} must be a positive number of megabytes, not {raw!r}.")
    return int(megabytes * (1 << 20))


_NOT_REGULAR = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
)


def _kind(mode: int) -> str | None:
    """What a non-regular file is ("a named pipe (FIFO)", ...), or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _NOT_REGULAR if test(mode)), "not a regular file")


def _too_large(path: Path, what: str, size: int | None, limit: int) -> InputDataError:
    size_text = "" if size is None else f"{size / (1 << 20):,.1f} MB, "
    return InputDataError(
        f"{what} {path} is {size_text}over the {limit / (1 << 20):,.0f} MB limit on files read into memory: "
        f"split it, or raise the limit with ${MAX_FILE_MB_ENV}."
    )


def check_input_file(path: str | Path, what: str = "File", *, limit: int | None = None) -> os.stat_result:
    """``path``'s status when it is a regular file of at most ``limit`` bytes (default :func:`max_file_bytes`);
    else an :class:`InputDataError` of one line. The file is not opened: a FIFO, device or socket is refused
    before anything could block on it."""
    path = user_path(path)
    limit = max_file_bytes() if limit is None else limit
    try:
        status = path.stat()
    except FileNotFoundError as exc:
        raise InputDataError(f"{what} {path} does not exist.") from exc
    except OSError as exc:
        raise InputDataError(f"Cannot read {path}: {exc.strerror or exc}.") from exc
    kind = _kind(status.st_mode)
    if kind == "a folder":
        raise InputDataError(f"{what} {path} is a folder, not a file.")
    if kind is not None:
        raise InputDataError(f"{what} {path} is {kind}, not a regular file: give a file.")
    if status.st_size > limit:
        raise _too_large(path, what, status.st_size, limit)
    return status


def read_input_bytes(path: str | Path, what: str = "File", *, limit: int | None = None) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes (see :func:`check_input_file`). The file is opened
    without blocking and checked again once open, so one swapped for a FIFO after the check still cannot block,
    and one that grew is still cut off at the limit."""
    path = user_path(path)
    limit = max_file_bytes() if limit is None else limit
    with _open_input(path, what, limit) as handle:
        try:
            data = handle.read(limit + 1)
        except OSError as exc:
            raise InputDataError(f"Cannot read {path}: {exc.strerror or exc}.") from exc
    if len(data) > limit:
        raise _too_large(path, what, None, limit)
    return data


@contextlib.contextmanager
def _open_input(path: Path, what: str, limit: int) -> Iterator[IO[bytes]]:
    """A binary handle on the regular file ``path`` of at most ``limit`` bytes (checked before it opens and again
    once open, without blocking)."""
    check_input_file(path, what, limit=limit)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputDataError(f"Cannot read {path}: {exc.strerror or exc}.") from exc
    with os.fdopen(fd, "rb") as handle:
        kind = _kind(os.fstat(handle.fileno()).st_mode)
        if kind is not None:
            raise InputDataError(f"{what} {path} is {kind}, not a regular file: give a file.")
        yield handle


def iter_utf8_lines(path: str | Path, what: str = "File", *, per_line: bool = False) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of each line of a UTF-8 file, read one line at a time, so memory stays flat however
    long the file: lines end at ``\n`` only (a raw U+2028 is text); the checks and errors are :func:`read_utf8`'s.
    ``per_line``: :func:`max_file_bytes` bounds each line rather than the file, for a caller that keeps nothing of
    the lines it has read (a streamed corpus)."""
    path = user_path(path)
    limit = max_file_bytes()
    offset = 0
    with _open_input(path, what, sys.maxsize if per_line else limit) as handle:
        for lineno, raw in enumerate(handle, 1):
            if lineno == 1 and raw.startswith(_UTF16_BOMS):
                raise _utf16(path)
            if lineno == 1 and raw.startswith(_UTF8_BOM):
                raw, offset = raw[len(_UTF8_BOM) :], len(_UTF8_BOM)
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise _not_utf8(path, raw[exc.start], lineno, exc.start + 1, offset + exc.start) from exc
            offset += len(raw)
            if per_line and len(raw) > limit:
                raise InputDataError(
                    f"{what} {path}:{lineno} is a line of {len(raw) / (1 << 20):,.1f} MB, over the "
                    f"{limit / (1 << 20):,.0f} MB limit on what is read into memory: split it, or raise the limit "
                    f"with ${MAX_FILE_MB_ENV}."
                )
            if not per_line and offset > limit:
                raise _too_large(path, what, None, limit)
            yield lineno, text.removesuffix("\n")


def _utf16(path: Path) -> InputDataError:
    return InputDataError(f"{path} is UTF-16 encoded (it starts with a UTF-16 byte order mark): save it as UTF-8.")


def _not_utf8(path: Path, byte: int, line: int, column: int, offset: int) -> InputDataError:
    return InputDataError(
        f"{path}:{line}:{column}: not UTF-8 text (byte 0x{byte:02x} at offset {offset}); "
        f"re-encode the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8 {path.name} > fixed{path.suffix}`)."
    )


def read_utf8(path: str | Path, what: str = "File") -> str:
    """A file's text as UTF-8 (a BOM is dropped), or an :class:`InputDataError` that names the file and, for a
    bad byte, its line, column and value with the fix (and for a FIFO, device or a file over the size limit,
    see :func:`read_input_bytes`)."""
    path = user_path(path)
    raw = read_input_bytes(path, what)
    if raw.startswith(_UTF16_BOMS):
        raise _utf16(path)
    bom = len(_UTF8_BOM) if raw.startswith(_UTF8_BOM) else 0
    try:
        return str(memoryview(raw)[bom:], "utf-8")  # the text after the BOM, without copying the bytes
    except UnicodeDecodeError as exc:
        at = bom + exc.start  # the bad byte's offset in the file
        line = raw.count(b"\n", 0, at) + 1
        column = at - max(raw.rfind(b"\n", 0, at) + 1, bom) + 1
        raise _not_utf8(path, raw[at], line, column, at) from exc
