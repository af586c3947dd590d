"""Bring the stored documents and chunks of a GraphRAG store up to date with a corpus (step 1 of an update)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence

from llama_index.core import Document
from llama_index.core.node_parser import TextSplitter

from llama_index_kgplus._redact import get_logger
from llama_index_kgplus._text import sentence_splitter
from llama_index_kgplus.errors import InputDataError
from llama_index_kgplus.graphrag._state import ChunkRecord, DocumentRecord, GraphRAGState

logger = get_logger(__name__)


def check_corpus(documents: Sequence[Document]) -> list[Document]:
    """The documents as a list; an empty corpus or duplicate ids raise :class:`InputDataError`."""
    docs = list(documents)
    if not docs:
        raise InputDataError(
            "The corpus is empty: there is nothing to index. (An update never treats an empty corpus as "
            "'delete everything'; to start over, delete the store folder.)"
        )
    counts = Counter(d.id_ for d in docs)
    if len(counts) != len(docs):
        dup = sorted(i for i, n in counts.items() if n > 1)[:5]
        raise InputDataError(f"Duplicate document ids in the corpus: {dup}. Give every document its own id.")
    return docs


def chunker(text_splitter: TextSplitter | None, chunk_size: int, chunk_overlap: int) -> tuple[TextSplitter, str]:
    """The splitter (``text_splitter``, else a ``SentenceSplitter``) and a key naming it with its settings: a
    document stored under another key is chunked again."""
    if text_splitter is None:
        splitter = sentence_splitter(chunk_size, chunk_overlap)
        return splitter, f"sentence:{chunk_size}:{chunk_overlap}"
    settings = json.dumps(text_splitter.to_dict(), sort_keys=True, default=str)
    return text_splitter, f"{text_splitter.class_name()}:{hashlib.sha256(settings.encode()).hexdigest()[:16]}"


def split_document(doc: Document, splitter: TextSplitter) -> list[ChunkRecord]:
    """The non-blank chunks of ``doc``, with ids ``<doc id>#<n>`` and text hashes."""
    texts = [t for t in splitter.split_text(doc.text) if t.strip()]
    return [
        ChunkRecord(f"{doc.id_}#{i}", doc.id_, i, text, hashlib.sha256(text.encode()).hexdigest()[:24])
        for i, text in enumerate(texts)
    ]


def sync_documents(
    state: GraphRAGState, docs: list[Document], splitter: TextSplitter, key: str
) -> tuple[int, int, int]:
    """Store added and changed documents (by content hash and chunker ``key``) with their chunks and drop the
    missing ones: ``(added, changed, deleted)``."""
    stored = state.documents()
    added = changed = 0
    for doc in docs:
        record = stored.get(doc.id_)
        if record is not None and record.hash == doc.hash and record.chunker == key:
            continue
        chunks = split_document(doc, splitter)
        if not chunks:
            logger.warning("Document %r has no text; it is stored without chunks.", doc.id_)
        title = str(doc.metadata.get("title") or doc.id_)
        state.replace_document(DocumentRecord(doc.id_, title, doc.hash, key, len(chunks)), chunks)
        if record is None:
            added += 1
        else:
            changed += 1
    gone = sorted(set(stored) - {d.id_ for d in docs})
    for doc_id in gone:
        state.delete_document(doc_id)
    return added, changed, len(gone)
