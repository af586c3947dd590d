"""Abstractive summaries written by any LlamaIndex LLM, with a grounded prompt."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from llama_index.core.base.llms.types import CompletionResponse
from llama_index.core.bridge.pydantic import Field, PrivateAttr, field_serializer
from llama_index.core.llms import LLM

from llama_index_kgplus._text import ends_sentence, split_sentences
from llama_index_kgplus.errors import KGPlusSetupError, SummarizationError
from llama_index_kgplus.llm._complete import acomplete_response, complete_response, repeats_itself
from llama_index_kgplus.summarizers._base import BaseSummarizer, model_fingerprint

DEFAULT_SUMMARY_PROMPT = (
    "Summarize the passages below in one paragraph of at most {max_words} words.\n"
    "Use only the given text: do not add facts, names, numbers or opinions that are not in it. "
    "Combine what the passages say; do not copy one passage.\n\n"
    "Passages:\n{context_str}\n\n"
    "Summary:"
)

NO_COPY_HINT = (
    "Your previous answer repeated passage [{copied}] word for word. Do not repeat any passage: write new "
    "sentences that combine what all the passages say.\n\n"
)
_SHINGLE = 8

_PREFIX = re.compile(
    r"^\s*(?:here is )?(?:a |the )?(?:short |concise )?summary\s*(?:of the passages)?\s*[:\-]\s*", re.I
)
_SPECIAL = re.compile(r"<\|[a-z_]+\|>")


class AbstractiveSummarizer(BaseSummarizer):
    """One LLM call per summary: the passages go into a prompt that says to use only the given text.

    Small models ignore the length they are asked for, so an in-process llama.cpp model's reply is bounded
    by ``max_tokens`` and cut back to its last full sentence, and once it has ``sentence_stop`` of that bound it
    stops at the next sentence end instead of writing a sentence that the cut would throw away; a reply still
    in its first sentence at the bound may finish it, at most half the bound later (such calls bypass
    LlamaIndex's callbacks; other LLMs keep their own bound and are not cut). The LLM's own usage
    figures (llama.cpp reports them) are added up in :attr:`usage_`. An empty answer raises
    :class:`SummarizationError`, so a builder can retry it. A reply that copies one passage (small
    models do that) gets one more call with the passages reversed and an instruction not to copy
    (``copy_retry``); a copy that is not retried, or a second copy, raises :class:`SummarizationError` too.
    A builder does not retry either when the LLM would only repeat itself (a llama.cpp model at temperature 0:
    ``retryable`` is False).

    Example:

    ```python
    summarizer = AbstractiveSummarizer(llm=llm_from_spec("qwen2.5-coder-0.5b"), max_words=80)
    summarizer.summarize(["Passage one ...", "Passage two ..."])
    ```
    """

    llm: LLM | None = Field(default=None, description="Writes the summary; None: Settings.llm.")
    prompt_template: str = Field(
        default=DEFAULT_SUMMARY_PROMPT,
        description="Prompt with {context_str} (the numbered passages) and {max_words}.",
    )
    max_words: int = Field(default=100, ge=5, description="Length the prompt asks for, in words.")
    max_tokens: int | None = Field(
        default=None,
        ge=8,
        description="Bound on the reply in tokens for an in-process llama.cpp LLM (LlamaCPP, also wrapped); a reply "
        "cut by it ends at its last full sentence (with sentence_stop, a first sentence may end up to half the "
        "bound later); other LLMs keep their own bound. None: 1.3 x max_words (small models write twice what "
        "they are asked).",
    )
    sentence_stop: float | None = Field(
        default=0.6,
        gt=0.0,
        le=1.0,
        description="For an in-process llama.cpp LLM: once a reply has this share of its bound (reply_tokens), it "
        "stops at the next sentence end, because a further sentence would mostly be cut by the bound and thrown "
        "away after it was paid for. None: write until the bound or the model's own end.",
    )
    copy_threshold: float | None = Field(
        default=0.8,
        gt=0.0,
        le=1.0,
        description="A reply with at least this share of its 8-word sequences from one passage is a copy: the "
        "summarizer raises SummarizationError, after asking once more if copy_retry. None: accept copies.",
    )
    copy_retry: bool = Field(
        default=True,
        description="After a copy, ask once more with the passages reversed and told not to copy. False: raise "
        "SummarizationError at the first copy (a TwoStageSummarizer then uses its extractive summary).",
    )

    _calls: int = PrivateAttr(default=0)
    _prompt_tokens: int = PrivateAttr(default=0)
    _completion_tokens: int = PrivateAttr(default=0)

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this component under."""
        return "AbstractiveSummarizer"

    @field_serializer("llm")
    def _serialize_llm(self, value: Any) -> Any:
        return model_fingerprint(value)

    @classmethod
    def from_defaults(cls, llm: LLM | None = None, **kwargs: Any) -> AbstractiveSummarizer:
        """Use ``llm`` or ``Settings.llm``."""
        return cls(llm=llm or _settings_llm(), **kwargs)

    @property
    def usage_(self) -> dict[str, int]:
        """LLM calls made and tokens used so far (tokens as reported by the LLM, 0 if it reports none)."""
        return {
            "calls": self._calls,
            "prompt_tokens": self._prompt_tokens,
            "completion_tokens": self._completion_tokens,
        }

    def format_prompt(self, texts: Sequence[str]) -> str:
        """The prompt sent for ``texts``."""
        passages = [" ".join(t.split()) for t in texts if t.strip()]
        context = "\n\n".join(f"[{i}] {p}" for i, p in enumerate(passages, 1))
        if not context:
            raise SummarizationError("Nothing to summarize: every text is empty.", retryable=False)
        return self.prompt_template.format(context_str=context, max_words=self.max_words)

    @property
    def reply_tokens(self) -> int:
        """The bound on a reply: ``max_tokens``, else 1.3 tokens per word asked for."""
        return self.max_tokens or max(8, round(1.3 * self.max_words))

    def _bounds(self) -> dict[str, Any]:
        stop = None if self.sentence_stop is None else max(1, round(self.sentence_stop * self.reply_tokens))
        return {"max_tokens": self.reply_tokens, "sentence_stop": stop}

    def _clean(self, response: CompletionResponse) -> str:
        self._calls += 1
        raw = response.raw if isinstance(response.raw, dict) else {}
        usage = raw.get("usage")
        if isinstance(usage, dict):
            self._prompt_tokens += int(usage.get("prompt_tokens") or 0)
            self._completion_tokens += int(usage.get("completion_tokens") or 0)
        text = _PREFIX.sub("", _SPECIAL.sub("", response.text or "")).strip()
        choice = (raw.get("choices") or [None])[0]
        if isinstance(choice, dict) and choice.get("finish_reason") == "length":
            text = _last_full_sentence(text)
        if not text:
            raise self._bad_reply(f"The LLM returned an empty summary ({response.text!r}).")
        return text

    def _bad_reply(self, message: str) -> SummarizationError:
        """A bad reply, which asking again repeats when the LLM repeats itself: then not for a builder to retry."""
        return SummarizationError(message, retryable=not repeats_itself(self.llm or _settings_llm()))

    def copied_passage(self, summary: str, texts: Sequence[str]) -> int | None:
        """The 1-based number of the passage that ``summary`` copies (see ``copy_threshold``), else None.

        Passages that all say the same (duplicates) cannot be summarised otherwise: that is not a copy.
        """
        own = _shingles(summary)
        if self.copy_threshold is None or not own:
            return None
        passages = [t for t in texts if t.strip()]
        copied = [len(own & _shingles(p)) / len(own) >= self.copy_threshold for p in passages]
        if not any(copied) or all(copied):
            return None
        return copied.index(True) + 1

    def _retry_prompt(self, texts: Sequence[str], copied: int) -> tuple[str, list[str]]:
        """The prompt asking once more after a copy of passage ``copied`` (raises without ``copy_retry``)."""
        if not self.copy_retry:
            raise self._bad_reply(f"The LLM copied passage [{copied}] instead of summarizing.")
        passages = [t for t in texts if t.strip()][::-1]
        return NO_COPY_HINT.format(copied=len(passages) + 1 - copied) + self.format_prompt(passages), passages

    def summarize(self, texts: Sequence[str]) -> str:
        """One summary of ``texts`` by the LLM; asked once more when it copied a passage."""
        llm = self.llm or _settings_llm()
        summary = self._clean(complete_response(llm, self.format_prompt(texts), **self._bounds()))
        copied = self.copied_passage(summary, texts)
        if copied is None:
            return summary
        prompt, passages = self._retry_prompt(texts, copied)
        return self._check_copy(self._clean(complete_response(llm, prompt, **self._bounds())), passages)

    async def asummarize(self, texts: Sequence[str]) -> str:
        """Async :meth:`summarize`."""
        llm = self.llm or _settings_llm()
        reply = await acomplete_response(llm, self.format_prompt(texts), **self._bounds())
        summary = self._clean(reply)
        copied = self.copied_passage(summary, texts)
        if copied is None:
            return summary
        prompt, passages = self._retry_prompt(texts, copied)
        reply = await acomplete_response(llm, prompt, **self._bounds())
        return self._check_copy(self._clean(reply), passages)

    def _check_copy(self, summary: str, passages: list[str]) -> str:
        copied = self.copied_passage(summary, passages)
        if copied is not None:
            raise self._bad_reply(f"The LLM copied passage [{copied}] instead of summarizing, twice.")
        return summary


def _last_full_sentence(text: str) -> str:
    """``text`` without its unfinished last sentence (the package's sentence splitter, which knows abbreviations);
    all of it when it is one unfinished sentence (better a cut sentence than none)."""
    sentences = split_sentences(text)
    if len(sentences) < 2 or ends_sentence(sentences[-1]):
        return text
    return " ".join(sentences[:-1])


def _shingles(text: str) -> set[tuple[str, ...]]:
    """Word sequences of length 8 (or the whole text if shorter), lower-cased, punctuation kept."""
    words = text.lower().split()
    n = min(_SHINGLE, len(words))
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)} if n else set()


def _settings_llm() -> LLM:
    from llama_index.core import Settings

    try:
        return Settings.llm
    except Exception as exc:  # Settings falls back to OpenAI, which is usually not installed here
        raise KGPlusSetupError(
            "AbstractiveSummarizer needs an LLM and none was given: pass llm=..., or set Settings.llm "
            "(e.g. llama_index_kgplus.llm.llm_from_spec())."
        ) from exc
