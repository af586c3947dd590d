"""The exact sentence-transformers path (the ``sbert`` extra, spec ``all-MiniLM-L6-v2-sbert``): LlamaIndex's
``HuggingFaceEmbedding`` over the packaged all-MiniLM-L6-v2 folder, embedding a batch in order of text length
(see :mod:`llama_index_kgplus.llm._length_sort`). It needs torch; the default is
:class:`~llama_index_kgplus.llm._onnx_embedding.OnnxMiniLMEmbedding`.
"""

from __future__ import annotations

from llama_index.embeddings.huggingface import HuggingFaceEmbedding

from llama_index_kgplus.llm._length_sort import LengthSortedBatches


class LengthSortedHuggingFaceEmbedding(LengthSortedBatches, HuggingFaceEmbedding):
    """``HuggingFaceEmbedding`` whose batch embedding groups texts of similar length (same results, less
    padding)."""
