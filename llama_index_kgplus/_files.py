"""Files that are whole or absent: every state file of the pack is written beside its target, flushed to disk and
renamed over it, so a crash, ``kill -9`` or a full disk leaves the old file or the new one, never a half.

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
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from llama_index_kgplus._paths import user_path
from llama_index_kgplus.errors import InputDataError

__all__ = [
    "atomic_open",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "read_utf8",
    "sha256_file",
]


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


def read_utf8(path: str | Path, what: str = "File") -> str:
    """A file's text as UTF-8 (a BOM is dropped), or an :class:`InputDataError` that names the file and, for a
    bad byte, its line, column and value with the fix."""
    path = user_path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise InputDataError(f"{what} {path} does not exist.") from exc
    except IsADirectoryError as exc:
        raise InputDataError(f"{what} {path} is a folder, not a file.") from exc
    except OSError as exc:
        raise InputDataError(f"Cannot read {path}: {exc.strerror or exc}.") from exc
    if raw.startswith(_UTF16_BOMS):
        raise InputDataError(f"{path} is UTF-16 encoded (it starts with a UTF-16 byte order mark): save it as UTF-8.")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InputDataError(
            f"{path}:{line}:{column}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
            f"re-encode the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8 {path.name} > fixed{path.suffix}`)."
        ) from exc
