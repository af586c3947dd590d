"""Load a corpus: a JSONL file of ``{"id", "title"?, "text"}`` records or a folder of text files.

Each record becomes a LlamaIndex ``Document`` whose ``id_`` and ``metadata["doc_id"]`` are the corpus id, so
every chunk, summary and citation can name its source document. ``metadata["title"]`` is the record's title
(a file's name for a folder); a record without one has no title (its id is not a title).

Example:

```python
docs = load_corpus("docs.jsonl")
docs[0].id_, docs[0].metadata["title"]
build_index(load_corpus("big.jsonl", stream=True), "./index", vector_store="lancedb")  # read as it is indexed
```
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from hashlib import sha256
from pathlib import Path
from typing import Literal, NamedTuple, overload

from llama_index.core import Document

from llama_index_kgplus._files import iter_utf8_lines, read_input_bytes
from llama_index_kgplus._jsonl import id_field, iter_jsonl, text_field
from llama_index_kgplus._paths import user_path, visible_files
from llama_index_kgplus._redact import get_logger
from llama_index_kgplus.errors import InputDataError

__all__ = [
    "CorpusRecord",
    "load_corpus",
    "load_records",
]

logger = get_logger(__name__)


@overload
def load_corpus(path: str | Path, *, stream: Literal[False] = False) -> list[Document]: ...


@overload
def load_corpus(path: str | Path, *, stream: Literal[True]) -> Iterable[Document]: ...


def load_corpus(path: str | Path, *, stream: bool = False) -> list[Document] | Iterable[Document]:
    """Read ``path`` (a ``.jsonl`` file or a folder); documents with no text are skipped with a warning.
    ``stream=True``: an iterable that reads the documents one at a time each time it is iterated (memory flat in
    the corpus size, for :func:`~llama_index_kgplus.build_index` into a LanceDB folder); its errors come as the
    faulty record is reached."""
    path = user_path(path)
    if not path.exists():
        raise InputDataError(f"Corpus {path} does not exist.")
    corpus = _Corpus(path, stream)
    return corpus if stream else list(corpus)


def load_records(path: str | Path) -> list[CorpusRecord]:
    """The documents of ``path`` as :func:`load_corpus` reads them (same checks, same errors), not yet built:
    a sync hashes every document but builds only the changed ones."""
    path = user_path(path)
    if not path.exists():
        raise InputDataError(f"Corpus {path} does not exist.")
    return list(_Corpus(path, stream=False).records())


class CorpusRecord(NamedTuple):
    """One document of a corpus: its id, title and text."""

    doc_id: str
    title: str | None
    text: str

    def document(self) -> Document:
        """The ``Document`` that :func:`load_corpus` makes of it."""
        return _document(self.doc_id, self.title, self.text)

    @property
    def hash(self) -> str:
        """``self.document().hash`` without building the Document (about 20 µs less per document)."""
        if not _hashes_as_documents_do():
            return self.document().hash
        return _record_hash(self.doc_id, self.title, self.text)


def _record_hash(doc_id: str, title: str | None, text: str) -> str:
    # LlamaIndex's Document.hash: its metadata string, then its text resource's hash (sha256 of the text)
    metadata = f"doc_id: {doc_id}" + (f"\ntitle: {title}" if title else "")
    text_hash = sha256((text or "<empty_string>").encode("utf-8")).hexdigest()
    return sha256(f"{metadata}-{text_hash}".encode("utf-8", "surrogatepass")).hexdigest()


@functools.cache
def _hashes_as_documents_do() -> bool:
    """Whether :func:`_record_hash` is this LlamaIndex's ``Document.hash`` (else records build their Document)."""
    samples = [CorpusRecord("a/b 1", "Title: é", "One.\nTwo - three."), CorpusRecord("c", None, " x ")]
    return all(_record_hash(*r) == r.document().hash for r in samples)


class _Corpus:
    """The documents of a corpus file or folder, read anew on each iteration (see :func:`load_corpus`)."""

    def __init__(self, path: Path, stream: bool) -> None:
        self.path = path
        self.stream = stream  # read as it is used: the file-size limit of what is read into memory is per record
        self._count: int | None = None

    def __iter__(self) -> Iterator[Document]:
        return (record.document() for record in self.records())

    def records(self) -> Iterator[CorpusRecord]:
        kept = 0
        for record in _read_folder(self.path) if self.path.is_dir() else _read_jsonl(self.path, self.stream):
            if record.text.strip():
                kept += 1
                yield record
            else:
                logger.warning("Skipping document %r of %s: it has no text.", record.doc_id, self.path)
        if not kept:
            raise InputDataError(f"Corpus {self.path} holds no document with text.")

    def __length_hint__(self) -> int:
        """How many documents it holds (records or files, empty ones counted): a progress bar's total."""
        if self._count is None:
            if self.path.is_dir():
                self._count = sum(1 for _ in visible_files(self.path))
            else:
                lines = iter_utf8_lines(self.path, "Corpus", per_line=self.stream)
                self._count = sum(1 for _, line in lines if line.strip())
        return self._count


def _read_jsonl(path: Path, per_line: bool) -> Iterator[CorpusRecord]:
    seen = set()
    for where, record in iter_jsonl(path, "Corpus", per_line=per_line):
        if "id" not in record or "text" not in record:
            raise InputDataError(f'{where}: a record needs at least "id" and "text" fields.')
        doc_id = id_field(record, "id", where)
        if doc_id in seen:
            raise InputDataError(f"{where}: duplicate document id {doc_id!r}.")
        seen.add(doc_id)
        title = (text_field(record, "title", where, required=False) or "").strip() or None
        yield CorpusRecord(doc_id, title, text_field(record, "text", where, required=False) or "")


def _read_folder(path: Path) -> Iterator[CorpusRecord]:
    """Every visible file (hidden files and folders such as ``.git/`` are skipped, and so, with a warning, is a
    symlink to a file outside the folder); the id is the relative path without its extension, so ``a.txt`` and
    ``a.md`` side by side are refused."""
    seen: dict[str, Path] = {}
    for file in visible_files(path):
        doc_id = file.relative_to(path).with_suffix("").as_posix()
        if doc_id in seen:
            raise InputDataError(
                f"{seen[doc_id]} and {file} would both be document {doc_id!r}: rename one (a document's id is "
                "its path without the extension)."
            )
        seen[doc_id] = file
        try:
            text = read_input_bytes(file, "Corpus file").decode("utf-8")
        except UnicodeDecodeError:
            logger.warning("Skipping %s: not UTF-8 text.", file)
            continue
        yield CorpusRecord(doc_id, file.stem, text)


def _document(doc_id: str, title: str | None, text: str) -> Document:
    return Document(
        id_=doc_id,
        text=text,
        metadata={"doc_id": doc_id, **({"title": title} if title else {})},
        excluded_embed_metadata_keys=["doc_id"],
        excluded_llm_metadata_keys=["doc_id"],
    )
