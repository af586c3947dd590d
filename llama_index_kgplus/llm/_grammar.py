"""JSON grammars for an in-process llama.cpp model, checked only where they would change a greedy reply.

llama.cpp's grammar sampler checks every token of the vocabulary (about 150,000 for Qwen) against the grammar at
every step, which made a constrained reply of the 0.5B model about 40% slower than a free one. At temperature 0
the reply is the grammar-allowed token of highest score, so :class:`GreedyGrammar` first checks the model's own
best token alone and masks the whole vocabulary only when the grammar refuses it (a few steps in a hundred here):
the reply is the same token for token, in the time of a free one. At a temperature above 0 llama.cpp's sampler
keeps the grammar (a sample must come from the allowed tokens' distribution).
"""

from __future__ import annotations

import ctypes
import weakref
from functools import lru_cache
from typing import Any

import numpy as np

from llama_index_kgplus.llm._llama import llama_vocabulary
from llama_index_kgplus.llm._llama import temperature as _temperature

# llama.cpp's llama_token_data (id, logit, p), as numpy lays out a C struct
_TOKEN_DATA = np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)


@lru_cache(maxsize=64)
def json_grammar(schema_json: str) -> str:
    """The GBNF grammar (llama.cpp's grammar language) of a JSON schema given as JSON text."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    return str(json_schema_to_gbnf(schema_json))


class GreedyGrammar:
    """A llama.cpp logits processor that constrains a greedy reply to a GBNF grammar (see the module docstring).

    One object per reply: it follows the reply token by token. ``vocabulary``: a ``llama_cpp.Llama`` of the same
    GGUF file (:func:`llama_vocabulary`); llama.cpp's grammar is freed when the object goes.
    """

    def __init__(self, vocabulary: Any, grammar: str) -> None:
        import llama_cpp

        self._llama_cpp = llama_cpp
        vocab = llama_cpp.llama_model_get_vocab(vocabulary.model)
        self._sampler = llama_cpp.llama_sampler_init_grammar(vocab, grammar.encode("utf-8"), b"root")
        if not self._sampler:
            raise ValueError("llama.cpp could not parse the grammar")
        weakref.finalize(self, llama_cpp.llama_sampler_free, self._sampler)
        self._one = (llama_cpp.llama_token_data * 1)()
        self._start: int | None = None
        self._accepted = 0
        self._all: np.ndarray | None = None
        self.refused = 0  # steps where the model's best token broke the grammar

    def _apply(self, data: Any, size: int) -> None:
        candidates = self._llama_cpp.llama_token_data_array(data=data, size=size, selected=-1, sorted=False)
        self._llama_cpp.llama_sampler_apply(self._sampler, ctypes.byref(candidates))

    def __call__(self, input_ids: Any, scores: np.ndarray) -> np.ndarray:
        if self._start is None:
            self._start = len(input_ids)  # the first call sees the prompt alone
        for token in input_ids[self._start + self._accepted :]:  # the reply's tokens since the last step
            self._llama_cpp.llama_sampler_accept(self._sampler, int(token))
            self._accepted += 1
        best = int(np.argmax(scores))
        self._one[0] = self._llama_cpp.llama_token_data(best, float(scores[best]), 0.0)
        self._apply(self._one, 1)
        if self._one[0].logit != -np.inf:
            return scores
        self.refused += 1
        if self._all is None or len(self._all) != len(scores):
            self._all = np.zeros(len(scores), dtype=_TOKEN_DATA)
            self._all["id"] = np.arange(len(scores))
        self._all["logit"] = scores
        self._apply(self._all.ctypes.data_as(ctypes.POINTER(self._llama_cpp.llama_token_data)), len(scores))
        return np.asarray(self._all["logit"], dtype=scores.dtype)


def grammar_options(local: Any, grammar: str) -> dict[str, Any]:
    """llama.cpp options that constrain a reply of the ``LlamaCPP`` LLM ``local`` to ``grammar`` (GBNF): a
    :class:`GreedyGrammar` at temperature 0, llama.cpp's grammar sampler otherwise."""
    if _temperature(local) == 0:
        from llama_cpp import LogitsProcessorList

        return {"logits_processor": LogitsProcessorList([GreedyGrammar(llama_vocabulary(local), grammar)])}
    from llama_cpp import LlamaGrammar

    return {"grammar": LlamaGrammar.from_string(grammar, verbose=False)}
