"""Rewrite a query with the glossary: select the relevant entries, ask the LLM, guard against drift, review.

:class:`GlossaryQueryRewriter` is a LlamaIndex ``BaseQueryTransform``, so it composes with any query engine::

    from llama_index.core.query_engine import TransformQueryEngine

    rewriter = GlossaryQueryRewriter.from_defaults(Glossary.load("glossary.json"), llm=llm)
    engine = TransformQueryEngine(index.as_query_engine(), query_transform=rewriter)

As a transform it keeps ``query_str`` (what the synthesizer answers) as the original question and puts the
rewrite in ``custom_embedding_strs`` (what vector retrieval embeds), like LlamaIndex's HyDE transform;
``replace_query_str=True`` puts the rewrite in ``query_str`` too (for keyword or entity-based retrievers).
:meth:`GlossaryQueryRewriter.rewrite` returns the full record (:class:`QueryRewrite`).
"""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Union

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import BaseModel, Field, PrivateAttr
from llama_index.core.indices.query.query_transform.base import BaseQueryTransform
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.llms import LLM
from llama_index.core.prompts import BasePromptTemplate
from llama_index.core.prompts.mixin import PromptDictType
from llama_index.core.schema import QueryBundle, QueryType

from llama_index_kgplus._sync import run_sync
from llama_index_kgplus.events import GlossaryRewriteEvent
from llama_index_kgplus.glossary._guard import DriftGuard, GuardVerdict
from llama_index_kgplus.glossary._model import Glossary
from llama_index_kgplus.glossary._prompts import DEFAULT_REWRITE_PROMPT, clean_rewrite
from llama_index_kgplus.glossary._selection import GlossarySelection, GlossaryTermSelector
from llama_index_kgplus.llm._complete import acomplete_response, complete_response, local_llama

dispatcher = get_dispatcher(__name__)

NO_TERMS = "no relevant glossary terms"
REJECTED = "rejected by reviewer"


@dataclass
class QueryRewrite:
    """The outcome of one rewrite.

    ``rewritten_query`` is the query retrieval will use: the LLM's rewrite if it passed the guard, the reviewer's
    edit if there was one, else the original query (then ``fallback_reason`` says why). ``proposed_query`` is the
    LLM's cleaned output, kept even when it was refused.

    Example:

    ```python
    from llama_index_kgplus.glossary import GlossaryQueryRewriter

    rewrite = GlossaryQueryRewriter.from_defaults(glossary, llm=llm).rewrite("Why is the GIL a problem?")
    print(rewrite.rewritten_query if rewrite.changed else rewrite.fallback_reason, rewrite.glossary_terms)
    ```
    """

    original_query: str
    rewritten_query: str
    selection: GlossarySelection
    proposed_query: str | None = None
    fallback_reason: str | None = None
    similarity: float | None = None
    raw_output: str | None = None
    edited: bool = False

    @property
    def glossary_terms(self) -> list[str]:
        """The terms of the glossary entries the rewrite was given."""
        return self.selection.terms

    @property
    def changed(self) -> bool:
        """Whether the rewritten query differs from the original."""
        return self.rewritten_query != self.original_query

    def to_metadata(self) -> dict[str, Any]:
        """The fields the engine puts in ``Response.metadata``."""
        return {
            "original_query": self.original_query,
            "rewritten_query": self.rewritten_query,
            "glossary_terms": self.glossary_terms,
            "fallback_reason": self.fallback_reason,
            "proposed_query": self.proposed_query,
            "rewrite_similarity": self.similarity,
            "rewrite_edited": self.edited,
        }


ReviewHook = Callable[[QueryRewrite], Union[str, None, Awaitable[Union[str, None]]]]
#: each rewriter's latest rewrite, per thread and asyncio task
_LAST_REWRITES: ContextVar[dict[str, QueryRewrite] | None] = ContextVar("kgplus_last_rewrites", default=None)


class GlossaryQueryRewriter(BaseModel, BaseQueryTransform):
    """Rewrites queries with the domain's glossary terms; a LlamaIndex query transform.

    The optional ``review_hook(rewrite) -> str | None`` (sync or async) sees every :class:`QueryRewrite` before
    it is used: return None to accept it as it is, another string to use that instead (an edit), or
    ``rewrite.original_query`` (or an empty string) to reject the rewrite.

    Example:

    ```python
    rewriter = GlossaryQueryRewriter.from_defaults(Glossary.load("glossary.json"), llm=llm)
    result = rewriter.rewrite("How do I stop a loop over a big file early?")
    result.rewritten_query, result.glossary_terms, result.fallback_reason
    bundle = rewriter.run("...")      # QueryBundle: query_str original, custom_embedding_strs [rewrite]
    ```
    """

    selector: GlossaryTermSelector = Field(description="Chooses the glossary entries shown to the LLM.")
    guard: DriftGuard = Field(default_factory=DriftGuard, description="Refuses empty, overlong, off-topic rewrites.")
    rewrite_prompt: BasePromptTemplate = Field(
        default=DEFAULT_REWRITE_PROMPT,
        description="Prompt with {glossary_str}, {query_str} and {max_words} (the guard's word limit).",
    )
    rewrite_without_terms: bool = Field(
        default=False, description="Ask the LLM even when no glossary entry was selected (default: keep the query)."
    )
    replace_query_str: bool = Field(
        default=False,
        description="As a transform, also replace query_str (not only custom_embedding_strs) with the rewrite.",
    )
    review_hook: ReviewHook | None = Field(
        default=None, exclude=True, description="Called with each QueryRewrite to accept, edit or reject it."
    )

    _llm: LLM | None = PrivateAttr(default=None)
    _key: str = PrivateAttr(default_factory=lambda: uuid.uuid4().hex)  # this rewriter's entry in _LAST_REWRITES

    def __init__(self, *, llm: LLM | None = None, **data: Any) -> None:
        super().__init__(**data)
        self._llm = llm

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this component under."""
        return "GlossaryQueryRewriter"

    @classmethod
    def from_defaults(
        cls,
        glossary: Glossary,
        *,
        llm: LLM | None = None,
        embed_model: BaseEmbedding | None = None,
        top_k: int = 3,
        max_tokens: int = 600,
        whole_glossary: bool = False,
        max_words: int = 100,
        min_similarity: float = 0.5,
        review_hook: ReviewHook | None = None,
        selector: GlossaryTermSelector | None = None,
        **kwargs: Any,
    ) -> GlossaryQueryRewriter:
        """Build selector and guard around ``glossary``; ``llm``/``embed_model`` fall back to ``Settings``.

        Pass a ready ``selector`` to reuse its entry embeddings (then ``top_k``, ``max_tokens`` and
        ``whole_glossary`` are its own).
        """
        from llama_index.core import Settings

        embed_model = embed_model or Settings.embed_model
        if selector is None:
            selector = GlossaryTermSelector.from_defaults(
                glossary, embed_model=embed_model, top_k=top_k, max_tokens=max_tokens, whole_glossary=whole_glossary
            )
        elif selector.glossary is not glossary:
            raise ValueError("The selector was built for another glossary.")
        guard = DriftGuard.from_defaults(embed_model=embed_model, max_words=max_words, min_similarity=min_similarity)
        return cls(llm=llm or Settings.llm, selector=selector, guard=guard, review_hook=review_hook, **kwargs)

    @property
    def llm(self) -> LLM:
        """The LLM that rewrites (``Settings.llm`` unless one was given)."""
        if self._llm is None:
            from llama_index.core import Settings

            self._llm = Settings.llm
        return self._llm

    @property
    def glossary(self) -> Glossary:
        """The glossary of the term selector."""
        return self.selector.glossary

    # ------------------------------------------------------------------ prompts (PromptMixin)

    def _get_prompts(self) -> PromptDictType:
        return {"rewrite_prompt": self.rewrite_prompt}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        if "rewrite_prompt" in prompts:
            self.rewrite_prompt = prompts["rewrite_prompt"]

    def format_prompt(self, query: str, selection: GlossarySelection) -> str:
        """The rewrite prompt for ``query`` with the selected entries (what the LLM is sent)."""
        return self.rewrite_prompt.format(glossary_str=selection.text, query_str=query, max_words=self.guard.max_words)

    # ------------------------------------------------------------------ the rewrite

    def _generation_limit(self) -> int:
        """Stop reading the LLM's stream past this many words: the guard would refuse the text anyway."""
        return self.guard.max_words + 20

    def _local_bounds(self) -> dict[str, Any] | None:
        """With a llama.cpp model, the bounds of :func:`~llama_index_kgplus.llm.complete_response` that stop it
        where reading its stream would: the call then ends by itself and reports its usage (a stream left early
        reports none to LlamaIndex's callbacks)."""
        local = local_llama(self.llm)
        if local is None:
            return None
        limit = self._generation_limit()
        return {"max_tokens": local.max_new_tokens, "stop_when": lambda text: _enough(text, limit)}

    def _generate(self, prompt: str) -> str:
        bounds = self._local_bounds()
        if bounds is not None:
            return complete_response(self.llm, prompt, **bounds).text
        text, limit = "", self._generation_limit()
        for chunk in self.llm.stream_complete(prompt):
            text = chunk.text
            if _enough(text, limit):
                break
        return text

    async def _agenerate(self, prompt: str) -> str:
        bounds = self._local_bounds()
        if bounds is not None:
            return (await acomplete_response(self.llm, prompt, **bounds)).text
        text, limit = "", self._generation_limit()
        stream = await self.llm.astream_complete(prompt)
        async for chunk in stream:
            text = chunk.text
            if _enough(text, limit):
                break
        return text

    def _judged(self, query: str, selection: GlossarySelection, raw: str, verdict: GuardVerdict) -> QueryRewrite:
        proposed = clean_rewrite(raw)
        return QueryRewrite(
            original_query=query,
            rewritten_query=proposed if verdict.accepted else query,
            selection=selection,
            proposed_query=proposed,
            fallback_reason=verdict.reason,
            similarity=verdict.similarity,
            raw_output=raw,
        )

    @dispatcher.span
    def rewrite(self, query: QueryType, *, use_llm: bool = True) -> QueryRewrite:
        """Select terms, rewrite with the LLM, check with the guard, then let the review hook decide.

        ``use_llm=False`` only selects the glossary entries and keeps the query (no LLM call, no review).
        """
        query_str = query.query_str if isinstance(query, QueryBundle) else str(query)
        query_embedding = self.selector.embed_model.get_query_embedding(query_str) if self.selector.top_k else None
        selection = self.selector.select(query_str, query_embedding)
        if not use_llm:
            return _traced(QueryRewrite(query_str, query_str, selection))
        if not selection.entries and not self.rewrite_without_terms:
            result = QueryRewrite(query_str, query_str, selection, fallback_reason=NO_TERMS)
        else:
            raw = self._generate(self.format_prompt(query_str, selection))
            proposed = clean_rewrite(raw)
            same_model = self.guard.embed_model is self.selector.embed_model
            verdict = self.guard.check(query_str, proposed, query_embedding if same_model else None)
            result = self._judged(query_str, selection, raw, verdict)
        decision = self.review_hook(result) if self.review_hook else None
        if inspect.isawaitable(decision):
            decision = run_sync(decision)
        return _traced(self._review(result, decision))

    @dispatcher.span
    async def arewrite(self, query: QueryType, *, use_llm: bool = True) -> QueryRewrite:
        """Async twin of :meth:`rewrite` (the review hook may be a coroutine function)."""
        query_str = query.query_str if isinstance(query, QueryBundle) else str(query)
        query_embedding = None
        if self.selector.top_k:
            query_embedding = await self.selector.embed_model.aget_query_embedding(query_str)
        selection = await self.selector.aselect(query_str, query_embedding)
        if not use_llm:
            return _traced(QueryRewrite(query_str, query_str, selection))
        if not selection.entries and not self.rewrite_without_terms:
            result = QueryRewrite(query_str, query_str, selection, fallback_reason=NO_TERMS)
        else:
            raw = await self._agenerate(self.format_prompt(query_str, selection))
            proposed = clean_rewrite(raw)
            same_model = self.guard.embed_model is self.selector.embed_model
            verdict = await self.guard.acheck(query_str, proposed, query_embedding if same_model else None)
            result = self._judged(query_str, selection, raw, verdict)
        decision = self.review_hook(result) if self.review_hook else None
        if inspect.isawaitable(decision):
            decision = await decision
        return _traced(self._review(result, decision))

    @staticmethod
    def _review(result: QueryRewrite, decision: Any) -> QueryRewrite:
        if decision is None or decision == result.rewritten_query:
            return result
        if not isinstance(decision, str):
            raise TypeError(f"review_hook must return a string or None, not {type(decision).__name__}")
        edited = " ".join(decision.split())
        if not edited or edited == result.original_query:
            result.rewritten_query, result.fallback_reason = result.original_query, REJECTED
        else:
            result.rewritten_query, result.fallback_reason, result.edited = edited, None, True
        return result

    # ------------------------------------------------------------------ BaseQueryTransform

    @property
    def last_rewrite_(self) -> QueryRewrite | None:
        """The most recent :class:`QueryRewrite` of this thread or asyncio task (e.g. to show it after a
        ``TransformQueryEngine`` query); concurrent ``aquery`` calls each see their own."""
        return (_LAST_REWRITES.get() or {}).get(self._key)

    def _bundle(self, query_bundle: QueryBundle, result: QueryRewrite) -> QueryBundle:
        _LAST_REWRITES.set({**(_LAST_REWRITES.get() or {}), self._key: result})  # a new dict: others keep theirs
        if not result.changed:
            return query_bundle
        return QueryBundle(
            query_str=result.rewritten_query if self.replace_query_str else query_bundle.query_str,
            custom_embedding_strs=[result.rewritten_query],
            image_path=query_bundle.image_path,
        )

    def _run(self, query_bundle: QueryBundle, metadata: dict) -> QueryBundle:
        return self._bundle(query_bundle, self.rewrite(query_bundle.query_str))

    async def arun(self, query_bundle_or_str: QueryType, metadata: dict | None = None) -> QueryBundle:
        """Async twin of :meth:`run`."""
        bundle = (
            QueryBundle(query_str=query_bundle_or_str, custom_embedding_strs=[query_bundle_or_str])
            if isinstance(query_bundle_or_str, str)
            else query_bundle_or_str
        )
        return self._bundle(bundle, await self.arewrite(bundle.query_str))


def _traced(result: QueryRewrite) -> QueryRewrite:
    """``result``, reported as a :class:`~llama_index_kgplus.events.GlossaryRewriteEvent`."""
    dispatcher.event(
        GlossaryRewriteEvent(
            original_query=result.original_query,
            rewritten_query=result.rewritten_query,
            proposed_query=result.proposed_query,
            glossary_terms=list(result.glossary_terms),
            accepted=result.changed and result.fallback_reason is None,
            fallback_reason=result.fallback_reason,
            similarity=result.similarity,
            edited=result.edited,
        )
    )
    return result


def _enough(text: str, limit: int) -> bool:
    """True once the text holds more than ``limit`` words, or a finished first paragraph (not a bare label)."""
    body = text.strip()
    if len(body.split()) > limit:
        return True
    first, sep, _ = body.partition("\n\n")
    return bool(sep) and not first.rstrip().endswith(":")
