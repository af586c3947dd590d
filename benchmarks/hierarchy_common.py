"""Shared pieces of the hierarchy benchmarks: the corpus, the chunker, the counting LLM wrapper, node files.

Not a benchmark itself; see hierarchy_build.py and hierarchy_retrieval.py.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from llama_index.core import Document
from llama_index.core.base.llms.types import CompletionResponse, LLMMetadata
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.llms import LLM, CustomLLM
from llama_index.core.schema import BaseNode, TextNode

BENCH_DATA = Path(os.environ.get("KGPLUS_BENCH_DATA", Path(__file__).resolve().parents[2] / "shared" / "bench-data"))
LONGDOCS = BENCH_DATA / "longdocs-squad"
OUT_DIR = Path(__file__).resolve().parent / "results" / "hierarchy"
CHUNK_SIZE, CHUNK_OVERLAP = 256, 20
N_ARTICLES = 3


def load_articles(n: int = N_ARTICLES) -> list[Document]:
    """The first ``n`` articles of longdocs-squad, as ``load_corpus`` would make them (doc_id, title)."""
    from llama_index_kgplus import load_corpus

    return load_corpus(LONGDOCS / "docs.jsonl")[:n]


def load_questions(doc_ids: set[str]) -> list[dict[str, Any]]:
    lines = (LONGDOCS / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    return [q for q in map(json.loads, lines) if q["doc_id"] in doc_ids]


class CountingLLM(CustomLLM):
    """Wraps an LLM and adds up its calls, llama.cpp's own token usage figures and the time spent in it.

    It forwards the wrapped model's prompt templates, so both systems format prompts exactly as the model
    would; LlamaIndex's TokenCountingHandler is not used (it double-counts when sync and async events fire).
    """

    _inner: Any = PrivateAttr()
    _stats: dict = PrivateAttr(
        default_factory=lambda: {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "seconds": 0.0}
    )
    _outputs: list = PrivateAttr(default_factory=list)

    def __init__(self, inner: LLM, **kwargs: Any) -> None:
        super().__init__(
            messages_to_prompt=inner.messages_to_prompt, completion_to_prompt=inner.completion_to_prompt, **kwargs
        )
        self._inner = inner

    @property
    def metadata(self) -> LLMMetadata:
        return self._inner.metadata

    @property
    def stats(self) -> dict:
        return dict(self._stats)

    def _count(self, response: CompletionResponse, seconds: float) -> CompletionResponse:
        usage = (response.raw or {}).get("usage") if isinstance(response.raw, dict) else None
        if not isinstance(usage, dict):
            raise RuntimeError("the wrapped LLM reports no usage figures; this benchmark needs llama.cpp's")
        self._stats["calls"] += 1
        self._stats["prompt_tokens"] += int(usage["prompt_tokens"])
        self._stats["completion_tokens"] += int(usage["completion_tokens"])
        self._stats["seconds"] += seconds
        self._outputs.append(response.text)
        return response

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        start = time.perf_counter()
        response = self._inner.complete(prompt, formatted=formatted, **kwargs)
        return self._count(response, time.perf_counter() - start)

    async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        start = time.perf_counter()
        response = await self._inner.acomplete(prompt, formatted=formatted, **kwargs)
        return self._count(response, time.perf_counter() - start)

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any):
        raise NotImplementedError("the benchmark does not stream")


def save_nodes(path: Path, nodes: list[BaseNode]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for node in nodes:
            fh.write(json.dumps(node.to_dict(), ensure_ascii=False) + "\n")


def read_nodes(path: Path) -> list[TextNode]:
    return [TextNode.from_dict(json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines() if line]


def shingles(text: str, n: int = 8) -> set[tuple[str, ...]]:
    words = text.lower().split()
    return {tuple(words[i : i + n]) for i in range(max(0, len(words) - n + 1))}


def copy_ratio(summary: str, children: list[str]) -> float:
    """The largest share of the summary's 8-word shingles found in one child (1.0: a verbatim copy)."""
    own = shingles(summary)
    if not own:
        return 0.0
    return max((len(own & shingles(c)) / len(own) for c in children), default=0.0)
