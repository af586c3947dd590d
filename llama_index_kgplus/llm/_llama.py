"""In-process llama.cpp models behind LlamaIndex's ``LlamaCPP``, through its public interface only.

A call that needs llama.cpp's own options (a token bound, a JSON grammar, a stopping criterion) goes to a
per-call copy of the ``LlamaCPP`` object whose public ``generate_kwargs`` carry them: the copy shares the
loaded model (a shallow copy, nothing reloads) and its ``complete()`` is LlamaIndex's, so callbacks
(``TokenCountingHandler``) and instrumentation see the call, with llama.cpp's ``usage`` in ``raw``. One
generation runs at a time per ``LlamaCPP`` object (:func:`llama_complete`). Token counts in the model's own
vocabulary come from a vocabulary-only load of the same GGUF file (:func:`llama_vocabulary`), since
``LlamaCPP`` keeps its model private.
"""

from __future__ import annotations

import atexit
import threading
from functools import lru_cache
from typing import Any

from llama_index.core.base.llms.types import CompletionResponse

from llama_index_kgplus._text import ends_sentence, split_sentences

_LOCKS: dict[int, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


@lru_cache(maxsize=1)
def _llama_cpp_class() -> type | None:
    try:
        from llama_index.llms.llama_cpp import LlamaCPP
    except ImportError:  # the `local` extra is not installed: no LLM can be one
        return None
    return LlamaCPP  # type: ignore[no-any-return]


def is_llama_cpp(llm: Any) -> bool:
    """Whether ``llm`` is a LlamaIndex ``LlamaCPP`` LLM (an in-process llama.cpp model)."""
    cls = _llama_cpp_class()
    return cls is not None and isinstance(llm, cls)


def temperature(llm: Any) -> float:
    """The temperature a ``LlamaCPP`` LLM is called with (0, greedy, when it names none)."""
    return float(getattr(llm, "temperature", 0.0) or 0.0)


def generation_lock(llm: Any) -> threading.Lock:
    """The lock of a ``LlamaCPP`` object: one llama.cpp context must not run two generations at once."""
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(id(llm), threading.Lock())


def with_options(llm: Any, **options: Any) -> Any:
    """A copy of the ``LlamaCPP`` LLM ``llm`` whose ``generate_kwargs`` add ``options`` (``max_tokens``,
    ``grammar``, ``stopping_criteria``, ...) and its current ``temperature``; it shares the loaded model."""
    generate = {**llm.generate_kwargs, "temperature": temperature(llm), **options}
    return llm.model_copy(update={"generate_kwargs": generate})


def llama_complete(llm: Any, prompt: str, *, formatted: bool = False, **options: Any) -> CompletionResponse:
    """``llm.complete(prompt)`` on a ``LlamaCPP`` LLM with llama.cpp ``options`` for this call, one generation
    at a time per model; ``raw`` is llama.cpp's reply (``usage``, ``choices[0]["finish_reason"]``)."""
    with generation_lock(llm):
        return with_options(llm, **options).complete(prompt, formatted=formatted)


@lru_cache(maxsize=8)
def _vocabulary(model_path: str) -> Any:
    import llama_cpp

    return llama_cpp.Llama(model_path=model_path, vocab_only=True, verbose=False)


# closed at exit while llama.cpp's bindings still exist (a vocabulary closed in interpreter teardown prints a
# traceback from Llama.__del__)
atexit.register(_vocabulary.cache_clear)


#: one llama.cpp load at a time in this process: a quiet load swaps ``sys.stdout``/``sys.stderr`` and file
#: descriptors 1 and 2 for /dev/null and back, so two loads in two threads can leave them swapped for good (every
#: later print of a notebook or a program disappears)
LOADING = threading.Lock()


def llama_vocabulary(llm: Any) -> Any:
    """A vocabulary-only ``llama_cpp.Llama`` of the GGUF file a ``LlamaCPP`` LLM loaded (``tokenize`` and
    ``detokenize`` as the model's own; loaded once per file, in well under a second)."""
    with LOADING:
        return _vocabulary(str(llm.model_path))


class SentenceStop:
    """A llama.cpp stopping criterion: the reply stops at the end of a sentence once it has ``min_tokens`` tokens,
    and at its last sentence end once it has ``max_tokens``; a reply still in its first sentence then goes on to
    that sentence's end (llama.cpp's own bound is set higher, see :func:`sentence_stop_options`).

    llama.cpp calls it after sampling each token with the tokens evaluated so far (the first call: the prompt
    alone). A sentence has ended when the reply before its last token ends with closing punctuation, a space or a
    line break comes between them (not "2." followed by "5"; the models have tokens like ".\\n\\n"), and the sentence
    splitter starts a new sentence there (not after "Dr."); :attr:`text` is then the reply up to that end
    (llama.cpp's own text keeps the next sentence's first token). ``vocabulary``: anything with llama.cpp's
    ``detokenize`` for the model's tokens (:func:`llama_vocabulary`).
    """

    def __init__(self, vocabulary: Any, min_tokens: int, max_tokens: int | None = None) -> None:
        self._vocabulary, self._min_tokens, self._max_tokens = vocabulary, min_tokens, max_tokens
        self._start: int | None = None
        self._last_end: str | None = None
        self.text: str | None = None

    def _decode(self, tokens: Any) -> str:
        return self._vocabulary.detokenize([int(t) for t in tokens]).decode("utf-8", "ignore")

    def __call__(self, input_ids: Any, logits: Any) -> bool:
        if self._start is None:
            self._start = len(input_ids)
        reply = input_ids[self._start :]
        following = self._decode(reply[-1:])
        if len(reply) > 1 and (following[:1].isspace() or self._decode(reply[-2:-1])[-1:].isspace()):
            before = self._decode(reply[:-1])
            if ends_sentence(before) and split_sentences(before + following)[-1] == following.strip():
                self._last_end = before.rstrip()
                if len(reply) > self._min_tokens:
                    self.text = self._last_end
        # past the bound, not at it: a sentence that ends on the bound's token is seen only at the next one
        if self.text is None and self._max_tokens is not None and len(reply) > self._max_tokens:
            self.text = self._last_end
        return self.text is not None


class TextStop:
    """A llama.cpp stopping criterion: the reply stops as soon as ``enough(reply_text)`` is true (the reply so far,
    decoded with ``vocabulary``)."""

    def __init__(self, vocabulary: Any, enough: Any) -> None:
        self._vocabulary, self._enough = vocabulary, enough
        self._start: int | None = None

    def __call__(self, input_ids: Any, logits: Any) -> bool:
        if self._start is None:
            self._start = len(input_ids)
        reply = [int(t) for t in input_ids[self._start :]]
        return bool(reply) and self._enough(self._vocabulary.detokenize(reply).decode("utf-8", "ignore"))
