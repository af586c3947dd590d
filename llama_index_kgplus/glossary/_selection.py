"""Pick the glossary entries relevant to one query, within a token budget.

Two sources, in this order: the terms and aliases written in the query (whole words, via the shared
:class:`~llama_index_kgplus._text.PhraseMatcher`), then the ``top_k`` entries whose ``"term: explanation"`` text is
most similar to the query by embedding (at least ``min_similarity``). Entries are added while the formatted text
fits ``max_tokens``; long explanations are first cut to ``max_explanation_tokens`` at a sentence end.
``whole_glossary=True`` returns every entry, untruncated and without a budget (the recipe's original behaviour,
kept for comparison).

Example:

```python
selector = GlossaryTermSelector.from_defaults(glossary, top_k=3, max_tokens=400)
selection = selector.select("How do I stop a generator early?")
selection.terms, selection.tokens
print(selection.text)
```
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import BaseModel, Field, PrivateAttr

from llama_index_kgplus._files import atomic_open
from llama_index_kgplus._redact import get_logger
from llama_index_kgplus._vectors import unit_rows
from llama_index_kgplus.glossary._model import Glossary, GlossaryEntry

logger = get_logger(__name__)

SelectionReason = Literal["matched", "similar", "all"]
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
#: from this many entries on, embedding them shows a progress bar (unless ``show_progress`` says otherwise)
PROGRESS_FROM = 1_000


@dataclass(frozen=True)
class SelectedEntry:
    """A chosen entry: why (``matched`` in the query, ``similar`` by embedding, or ``all``), and its prompt line."""

    entry: GlossaryEntry
    reason: SelectionReason
    score: float | None
    text: str
    tokens: int
    matched_text: str | None = None


@dataclass
class GlossarySelection:
    """The entries chosen for one query, and those left out because the token budget was spent."""

    query: str
    entries: list[SelectedEntry] = field(default_factory=list)
    dropped: list[SelectedEntry] = field(default_factory=list)

    @property
    def terms(self) -> list[str]:
        return [s.entry.term for s in self.entries]

    @property
    def tokens(self) -> int:
        return sum(s.tokens for s in self.entries)

    @property
    def text(self) -> str:
        """The entries as prompt lines (empty string when nothing was selected)."""
        return "\n".join(s.text for s in self.entries)

    def __len__(self) -> int:
        return len(self.entries)


class GlossaryTermSelector(BaseModel):
    """Selects the glossary entries for a query: whole-word mentions first, then embedding neighbours.

    Example:

    ```python
    selector = GlossaryTermSelector.from_defaults(Glossary.load("glossary.json"))
    selector.select("Why are dictionary keys immutable?").terms   # ['dictionary', 'immutable', ...]
    ```
    """

    glossary: Glossary = Field(description="The glossary to select from.")
    top_k: int = Field(default=3, ge=0, description="How many entries to add by embedding similarity.")
    min_similarity: float = Field(
        default=0.35,
        description="Cosine similarity an entry needs to be added by embedding (matched terms always are).",
    )
    max_tokens: int = Field(default=600, gt=0, description="Token budget of all selected entries' prompt lines.")
    max_explanation_tokens: int | None = Field(
        default=120, description="Cut each explanation to about this many tokens at a sentence end (None: keep whole)."
    )
    whole_glossary: bool = Field(
        default=False, description="Select every entry, untruncated, ignoring the budget (for comparison)."
    )
    embed_batch_size: int = Field(default=32, gt=0, description="Batch size when embedding the entries.")
    show_progress: bool | None = Field(
        default=None,
        description=f"Show a progress bar while embedding the entries (None: when there are {PROGRESS_FROM:,} or more).",
    )
    cache_embeddings: bool = Field(
        default=True,
        description="Keep the entries' embeddings in $KGPLUS_HOME/cache (a numpy file keyed by the entries' text "
        "and the embedding model), so a large glossary is embedded once, not in every process.",
    )

    _embed_model: BaseEmbedding | None = PrivateAttr(default=None)
    _tokenizer: Callable[[str], list] | None = PrivateAttr(default=None)
    _entry_embeddings: np.ndarray | None = PrivateAttr(default=None)
    _lines: dict[tuple[bool, int | None, int], tuple[str, int]] = PrivateAttr(default_factory=dict)

    def __init__(
        self,
        *,
        embed_model: BaseEmbedding | None = None,
        tokenizer: Callable[[str], list] | None = None,
        **data: Any,
    ) -> None:
        super().__init__(**data)
        self._embed_model = embed_model
        self._tokenizer = tokenizer

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this component under."""
        return "GlossaryTermSelector"

    @classmethod
    def from_defaults(
        cls,
        glossary: Glossary,
        *,
        embed_model: BaseEmbedding | None = None,
        tokenizer: Callable[[str], list] | None = None,
        **kwargs: Any,
    ) -> GlossaryTermSelector:
        """``embed_model`` falls back to ``Settings.embed_model``, ``tokenizer`` to LlamaIndex's global one."""
        from llama_index.core import Settings

        return cls(glossary=glossary, embed_model=embed_model or Settings.embed_model, tokenizer=tokenizer, **kwargs)

    # ------------------------------------------------------------------ lazy state

    @property
    def embed_model(self) -> BaseEmbedding:
        """The embedding model of the entries and queries (``Settings.embed_model`` unless one was given)."""
        if self._embed_model is None:
            from llama_index.core import Settings

            self._embed_model = Settings.embed_model
        return self._embed_model

    @property
    def tokenizer(self) -> Callable[[str], list]:
        """The tokenizer that counts the tokens of the glossary context (LlamaIndex's default unless one was given)."""
        if self._tokenizer is None:
            from llama_index.core.utils import get_tokenizer

            self._tokenizer = get_tokenizer()
        return self._tokenizer

    def count_tokens(self, text: str) -> int:
        """Number of tokens of ``text`` with :attr:`tokenizer`."""
        return len(self.tokenizer(text))

    @property
    def entry_embeddings_(self) -> np.ndarray:
        """Unit-normalised embeddings of every entry's ``"term: explanation"`` (computed on first use)."""
        if self._entry_embeddings is None:
            self.warm_up()
        assert self._entry_embeddings is not None
        return self._entry_embeddings

    def _entry_texts(self) -> list[str]:
        return [f"{e.term}: {' '.join(e.explanation.split())}" for e in self.glossary.entries]

    def warm_up(self) -> None:
        """Embed the entries, or read them from the cache (no-op when done, or when ``top_k`` is 0 or the whole
        glossary is used)."""
        if self._entry_embeddings is not None or self.top_k == 0 or self.whole_glossary:
            return
        texts = self._entry_texts()
        path = self._cache_path(texts)
        cached = self._cached(path, len(texts))
        if cached is None:
            vectors = self.embed_model.get_text_embedding_batch(texts, show_progress=self._progress(texts))
            cached = self._remember(path, vectors)
        self._entry_embeddings = cached

    async def awarm_up(self) -> None:
        """Async :meth:`warm_up`."""
        if self._entry_embeddings is not None or self.top_k == 0 or self.whole_glossary:
            return
        texts = self._entry_texts()
        path = self._cache_path(texts)
        cached = self._cached(path, len(texts))
        if cached is None:
            vectors = await self.embed_model.aget_text_embedding_batch(texts, show_progress=self._progress(texts))
            cached = self._remember(path, vectors)
        self._entry_embeddings = cached

    def _progress(self, texts: list[str]) -> bool:
        return self.show_progress if self.show_progress is not None else len(texts) >= PROGRESS_FROM

    def _cache_path(self, texts: list[str]) -> Path | None:
        if not self.cache_embeddings:
            return None
        from llama_index_kgplus._defaults import kgplus_home
        from llama_index_kgplus.summarizers._base import model_fingerprint

        key = hashlib.sha256(json.dumps([model_fingerprint(self.embed_model), texts], sort_keys=True).encode())
        return kgplus_home() / "cache" / "glossary-embeddings" / f"{key.hexdigest()[:32]}.npy"

    @staticmethod
    def _cached(path: Path | None, n: int) -> np.ndarray | None:
        """The ``n`` cached unit vectors at ``path``, or None (no cache, or one that is unreadable or the wrong
        shape)."""
        if path is None or not path.is_file():
            return None
        try:
            vectors = np.load(path, allow_pickle=False)
        except (OSError, ValueError):
            return None
        ok = vectors.ndim == 2 and vectors.shape[0] == n and vectors.dtype == np.float32
        return vectors if ok and np.isfinite(vectors).all() else None

    @staticmethod
    def _remember(path: Path | None, vectors: list[list[float]]) -> np.ndarray:
        unit = unit_rows(np.asarray(vectors, dtype=np.float32))
        if path is not None:
            try:
                with atomic_open(path) as handle:
                    np.save(handle, unit, allow_pickle=False)
            except OSError as exc:  # a read-only data folder costs a re-embedding next time, nothing else
                logger.warning("Cannot cache the glossary embeddings in %s (%s).", path, exc)
        return unit

    def _entry_line(self, i: int) -> tuple[str, int]:
        """Entry ``i``'s prompt line (explanation cut to the per-entry limit) and its token count, made when first
        needed: a query over 10^5 entries formats the few it selects, not all."""
        key = (self.whole_glossary, self.max_explanation_tokens, i)
        line = self._lines.get(key)
        if line is None:
            entry = self.glossary.entries[i]
            text = entry.to_text(None if self.whole_glossary else self._short_explanation(entry.explanation))
            line = self._lines[key] = (text, self.count_tokens(text))
        return line

    def _short_explanation(self, explanation: str) -> str:
        limit = self.max_explanation_tokens
        text = " ".join(explanation.split())
        if limit is None or self.count_tokens(text) <= limit:
            return text
        kept = ""
        for sentence in _SENTENCE_END.split(text):
            candidate = f"{kept} {sentence}".strip()
            if kept and self.count_tokens(candidate) > limit:
                break
            kept = candidate
            if self.count_tokens(kept) > limit:  # a single very long first sentence: cut by tokens
                words, kept = kept.split(), ""
                for word in words:
                    if self.count_tokens(f"{kept} {word}") > limit:
                        break
                    kept = f"{kept} {word}".strip()
                break
        return kept + (" ..." if kept != text else "")

    # ------------------------------------------------------------------ selection

    def select(self, query: str, query_embedding: list[float] | None = None) -> GlossarySelection:
        """The entries for ``query`` (``query_embedding``, if given, saves one embedding call)."""
        if self.whole_glossary:
            return self._all(query)
        similarities = None
        if self.top_k > 0:
            self.warm_up()
            if query_embedding is None:
                query_embedding = self.embed_model.get_query_embedding(query)
            similarities = self._similarities(query_embedding)
        return self._choose(query, similarities)

    async def aselect(self, query: str, query_embedding: list[float] | None = None) -> GlossarySelection:
        """Async :meth:`select`."""
        if self.whole_glossary:
            return self._all(query)
        similarities = None
        if self.top_k > 0:
            await self.awarm_up()
            if query_embedding is None:
                query_embedding = await self.embed_model.aget_query_embedding(query)
            similarities = self._similarities(query_embedding)
        return self._choose(query, similarities)

    def _similarities(self, query_embedding: list[float]) -> np.ndarray:
        q = unit_rows(np.asarray(query_embedding, dtype=np.float32)[None, :])[0]
        return self.entry_embeddings_ @ q

    def _all(self, query: str) -> GlossarySelection:
        return GlossarySelection(
            query, [SelectedEntry(e, "all", None, *self._entry_line(i)) for i, e in enumerate(self.glossary.entries)]
        )

    def _choose(self, query: str, similarities: np.ndarray | None) -> GlossarySelection:
        entries = self.glossary.entries
        candidates: list[tuple[int, SelectionReason, float | None, str | None]] = []
        seen: set[int] = set()
        for m in self.glossary.find(query):
            for value in m.values:
                i = int(value)  # type: ignore[call-overload]  # payloads are entry positions
                if i not in seen:
                    seen.add(i)
                    score = None if similarities is None else float(similarities[i])
                    candidates.append((i, "matched", score, m.text))
        if similarities is not None:
            added = 0
            for i in np.argsort(-similarities, kind="stable"):
                if added >= self.top_k or similarities[i] < self.min_similarity:
                    break
                if int(i) in seen:
                    continue
                seen.add(int(i))
                candidates.append((int(i), "similar", float(similarities[i]), None))
                added += 1
        selection, used = GlossarySelection(query), 0
        for i, reason, score, matched_text in candidates:
            text, tokens = self._entry_line(i)
            chosen = SelectedEntry(entries[i], reason, score, text, tokens, matched_text)
            if used + tokens <= self.max_tokens:
                selection.entries.append(chosen)
                used += tokens
            else:
                selection.dropped.append(chosen)
        return selection
