"""The exact sentence-transformers path (the ``sbert`` extra, spec ``all-MiniLM-L6-v2-sbert``): LlamaIndex's
``HuggingFaceEmbedding`` over the packaged all-MiniLM-L6-v2 folder, embedding a batch in order of text length
(see :mod:`llama_index_kgplus.llm._length_sort`). It needs torch; the default is
:class:`~llama_index_kgplus.llm._onnx_embedding.OnnxMiniLMEmbedding`.
"""

from __future__ import annotations

from typing import Any

from llama_index.embeddings.huggingface import HuggingFaceEmbedding

from llama_index_kgplus.llm._length_sort import by_length, restored


class LengthSortedHuggingFaceEmbedding(HuggingFaceEmbedding):
    """``HuggingFaceEmbedding`` whose batch embedding groups texts of similar length (same results, less
    padding)."""

    def get_text_embedding_batch(self, texts: list[str], show_progress: bool = False, **kwargs: Any) -> list[Any]:
        order = by_length(texts)
        vectors = super().get_text_embedding_batch([texts[i] for i in order], show_progress, **kwargs)
        return restored(order, vectors)

    async def aget_text_embedding_batch(
        self, texts: list[str], show_progress: bool = False, **kwargs: Any
    ) -> list[Any]:
        order = by_length(texts)
        vectors = await super().aget_text_embedding_batch([texts[i] for i in order], show_progress, **kwargs)
        return restored(order, vectors)
