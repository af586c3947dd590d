"""One rule for paths: every file the pack reads or writes is inside what the user named.

- A path the user names (command line or Python call) goes through :func:`user_path` once: ``~`` is expanded
  there, and that one ``Path`` is what is checked and what is read or written (no library below expands it
  again, or reads it as a pattern).
- A name read from a file (a manifest such as ``ingest.json``) goes through :func:`member`: one plain file name
  inside its folder, never ``..``, an absolute path or a link out of the folder.
- A file or folder the pack writes inside a named folder goes through :func:`inside`: refused when, symlinks
  followed, it lands outside that folder.
- A corpus folder is read with :func:`visible_files`: a symlink that leaves it is skipped with a warning.

Example:

```python
folder = user_path("~/index")                                  # /home/me/index
staging = inside(folder, ".ingest-staging", fix="remove it")   # refused if it links out of the index
stamp = member(folder, "docstore.json", what="ingest.json", fix="re-run `kgplus ingest`")
```
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path, PurePath

from llama_index_kgplus._redact import get_logger
from llama_index_kgplus.errors import InputDataError

__all__ = ["inside", "is_inside", "member", "user_path", "visible_files"]

logger = get_logger(__name__)


def user_path(path: str | os.PathLike[str]) -> Path:
    """A path the user named, with ``~`` (or ``~user``) expanded: the one form both checked and opened."""
    return Path(os.path.expanduser(os.fspath(path)))


def is_inside(folder: Path, path: Path) -> bool:
    """Whether ``path``, symlinks followed, is ``folder`` or lies under it (``folder`` resolved too)."""
    return path.resolve().is_relative_to(folder.resolve())


def inside(folder: Path, relative: str, *, fix: str) -> Path:
    """``folder / relative`` for the pack to write, refused (:class:`InputDataError` naming ``fix``) when it is, or
    passes through, a symlink that leaves ``folder``."""
    target = folder / relative
    if not is_inside(folder, target):
        raise InputDataError(
            f"{target} is a symbolic link to {target.resolve()}, outside {folder}; nothing is written through it: "
            f"{fix}."
        )
    return target


def member(folder: Path, name: object, *, what: str, fix: str) -> Path:
    """``folder / name`` for a ``name`` read from the manifest ``what``: one plain file name (no folder part, no
    ``..``, not absolute) that, symlinks followed, stays inside ``folder``; else :class:`InputDataError`."""
    separators = [s for s in ("/", "\x00", os.sep, os.altsep) if s]
    plain = (
        isinstance(name, str)
        and name not in ("", ".", "..")
        and not any(s in name for s in separators)
        and len(PurePath(name).parts) == 1
    )
    if not plain:
        raise InputDataError(f"{what} names {name!r}, which is not a file of {folder}; it is refused: {fix}.")
    assert isinstance(name, str)
    target = folder / name
    if not is_inside(folder, target):
        raise InputDataError(
            f"{what} names {name!r}, a symbolic link out of {folder} (to {target.resolve()}); it is refused: {fix}."
        )
    return target


def visible_files(folder: Path) -> Iterator[Path]:
    """Every visible file under ``folder``, sorted (hidden files and folders such as ``.git/`` are skipped); a
    symlink whose target lies outside ``folder``, a FIFO, device or socket are skipped with a warning, and no
    symlinked folder is entered."""
    root = folder.resolve()
    for path in sorted(folder.rglob("*")):
        if any(part.startswith(".") for part in path.relative_to(folder).parts):
            continue
        target = path.resolve()
        if not target.is_relative_to(root):
            logger.warning("Skipping %s: it is a symbolic link to %s, outside %s.", path, target, folder)
        elif path.is_file():
            yield path
        elif not path.is_dir():  # reading a FIFO would block, a device would stream forever
            logger.warning("Skipping %s: it is not a regular file (a named pipe, device or socket).", path)
