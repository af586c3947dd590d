"""One writer per folder at a time: every command and call that writes into an index folder (``kgplus ingest``,
``build_index``, the entity graph and hierarchy files, a GraphRAG store's ``index`` and ``update``) holds an
exclusive lock on ``FOLDER/.kgplus-writer.lock`` while it writes; a second writer is refused at once with one line
that names the process holding it. Readers take no lock.

The lock is the operating system's (``flock``; ``msvcrt.locking`` on Windows): it goes with its process, on exit,
on a crash or on ``kill -9``, so it is never left behind; the file itself stays (it is not part of the index). It
belongs to the call chain that took it (a context variable, which follows ``async`` code and
:func:`~llama_index_kgplus._sync.run_sync`'s worker thread), so a command that holds it can call functions that take
it again; any other writer, in another process or in another thread of this one, is refused.

Example:

```python
with writer_lock("./index", "kgplus ingest"):
    ...  # no other writer gets into ./index until the block ends
```
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import time
from collections.abc import Iterator
from pathlib import Path

from llama_index_kgplus._paths import user_path
from llama_index_kgplus.errors import InputDataError

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]
    import msvcrt

__all__ = ["LOCK_FILE", "try_writer_lock", "writer_lock"]

LOCK_FILE = ".kgplus-writer.lock"
_HELD: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("kgplus_writer_locks", default=frozenset())


@contextlib.contextmanager
def writer_lock(folder: str | Path, what: str) -> Iterator[None]:
    """Hold the writer lock of ``folder`` (made if missing) for the block; ``what`` (e.g. ``"kgplus ingest"``)
    names this writer to a refused one. Raises :class:`InputDataError` when another writer holds it."""
    with try_writer_lock(folder, what) as held:
        if not held:
            raise InputDataError(_busy_message(user_path(folder)))
        yield


@contextlib.contextmanager
def try_writer_lock(folder: str | Path, what: str, *, wait: float = 0.0) -> Iterator[bool]:
    """The writer lock of ``folder`` for the block if no other writer holds it or lets it go within ``wait``
    seconds (``True``), else nothing (``False``). A folder that cannot be written is an :class:`InputDataError`."""
    folder = user_path(folder)
    key = os.path.realpath(folder)
    if key in _HELD.get():  # this call chain holds it already
        yield True
        return
    made = _missing_ancestor(folder)
    deadline = time.monotonic() + wait
    while True:
        fd = _open(folder)
        if _lock(fd):
            if _is_lock_file(fd, folder):
                break
            os.close(fd)  # its holder removed it with an unused folder: lock the new one
            continue
        os.close(fd)
        if time.monotonic() >= deadline:
            yield False
            return
        time.sleep(0.05)
    token = _HELD.set(_HELD.get() | {key})
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()} {what}\n".encode())
        yield True
    finally:
        _HELD.reset(token)
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            if made is not None:  # a writer that wrote nothing leaves no folder behind
                _remove_unused(folder, made)
        os.close(fd)  # closing the file lets the lock go


def _missing_ancestor(folder: Path) -> Path | None:
    """The highest of ``folder`` and its parents that does not exist (None when ``folder`` exists)."""
    missing = None
    for path in (folder, *folder.parents):
        if path.exists():
            break
        missing = path
    return missing


def _remove_unused(folder: Path, made: Path) -> None:
    """Remove ``folder`` and its parents up to ``made`` if the lock file is all they hold (under the lock)."""
    if [p.name for p in folder.iterdir()] != [LOCK_FILE]:
        return
    (folder / LOCK_FILE).unlink()
    for path in (folder, *folder.parents):
        path.rmdir()
        if path == made:
            return


def _is_lock_file(fd: int, folder: Path) -> bool:
    """Whether ``fd`` is still the folder's lock file (not one that its last holder removed with the folder)."""
    try:
        return os.path.samestat(os.fstat(fd), os.stat(folder / LOCK_FILE, follow_symlinks=False))
    except OSError:
        return False


def _open(folder: Path) -> int:
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        return os.open(folder / LOCK_FILE, flags, 0o644)
    except OSError as exc:
        raise InputDataError(f"Cannot write into {folder}: {exc.strerror or exc}.") from exc


def _lock(fd: int) -> bool:
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        else:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
    except OSError:  # BlockingIOError where flock is refused
        return False
    return True


def _busy_message(folder: Path) -> str:
    try:
        holder = (folder / LOCK_FILE).read_text(encoding="utf-8", errors="replace").split(maxsplit=1)
    except OSError:
        holder = []
    if len(holder) == 2 and holder[0].isdigit():
        pid, what = int(holder[0]), holder[1].strip()
        who = f"this process (pid {pid}, {what})" if pid == os.getpid() else f"process {pid} ({what})"
    else:  # the holder has not written its name yet
        who = "another process"
    return (
        f"{folder} is being written by {who}: one writer per folder at a time; wait for it to finish, or write "
        f"into another folder."
    )
