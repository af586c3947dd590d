"""Ingest documents into a persisted vector index, and load it back.

The default vector store is LlamaIndex's simple vector store persisted in a folder; pass any LlamaIndex
``vector_store`` instead. Extra transformations (e.g. summary node builders) run after splitting and embedding.

Example::

    index = build_index(load_corpus("docs.jsonl"), "./index")
    index = load_index("./index")
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llama_index.core import Document, StorageContext, VectorStoreIndex, load_index_from_storage
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import TransformComponent

from llama_index_kgplus.errors import InputDataError

DEFAULT_CHUNK_SIZE = 384
DEFAULT_CHUNK_OVERLAP = 32


def build_index(
    documents: Sequence[Document],
    persist_dir: str | Path | None,
    *,
    embed_model: BaseEmbedding | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
    extra_transformations: Sequence[TransformComponent] = (),
    vector_store: Any | None = None,
    show_progress: bool = True,
) -> VectorStoreIndex:
    """Split, embed and index ``documents``; persist to ``persist_dir`` (if given)."""
    from llama_index.core import Settings

    if not documents:
        raise InputDataError("No documents to index.")
    embed_model = embed_model or Settings.embed_model
    pipeline = IngestionPipeline(
        transformations=[
            SentenceSplitter(chunk_size=chunk_size, chunk_overlap=chunk_overlap),
            embed_model,
            *extra_transformations,
        ]
    )
    nodes = pipeline.run(documents=list(documents), show_progress=show_progress)
    storage = StorageContext.from_defaults(vector_store=vector_store) if vector_store else StorageContext.from_defaults()
    storage.docstore.add_documents(nodes)
    index = VectorStoreIndex(nodes, storage_context=storage, embed_model=embed_model, show_progress=show_progress)
    if persist_dir is not None:
        Path(persist_dir).mkdir(parents=True, exist_ok=True)
        index.storage_context.persist(persist_dir=str(persist_dir))
    return index


def load_index(persist_dir: str | Path, *, embed_model: BaseEmbedding | None = None) -> VectorStoreIndex:
    """Load an index persisted by :func:`build_index`."""
    persist_dir = Path(persist_dir)
    if not (persist_dir / "docstore.json").is_file():
        raise InputDataError(f"{persist_dir} holds no index: build one with `kgplus ingest DOCS --index {persist_dir}`.")
    storage = StorageContext.from_defaults(persist_dir=str(persist_dir))
    return load_index_from_storage(storage, embed_model=embed_model)
