"""Test helpers for code built on this pack: a real LlamaIndex LLM whose replies are scripted, so a test can
reproduce broken JSON, a refusal or a given rewrite on demand (a real model cannot) while everything around the
LLM (prompts, parsing, retries, streaming, usage metering) runs for real. GraphRAG's rule-based stand-in is
:class:`llama_index_kgplus.graphrag.testing.RuleBasedGraphRAGLLM`.

Example::

    from llama_index_kgplus.testing import ScriptedLLM

    llm = ScriptedLLM(rules=[(r"Rewritten query:\\s*\\Z", ["a rewrite"])], replies=['{"a": 1'], default="An answer.")
    llm.complete("... Rewritten query:").text     # 'a rewrite' (a list reply is used up in order)
    llm.complete("anything").text                 # '{"a": 1' (then the default)
    llm.prompts                                   # every prompt, in order
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from llama_index.core.base.llms.types import CompletionResponse, CompletionResponseGen, LLMMetadata
from llama_index.core.llms import CustomLLM
from llama_index.core.llms.callbacks import llm_completion_callback
from pydantic import Field


class ScriptedLLM(CustomLLM):
    """Replies by script: the first rule whose pattern is found in the prompt, else the next queued reply, else
    ``default`` (no default: an error naming the prompt). Streams word by word."""

    rules: list[tuple[str, str | list[str]]] = Field(
        default_factory=list,
        description="(regex, reply) pairs, searched in order (DOTALL); a list reply is used up one item per call.",
    )
    replies: list[str] = Field(default_factory=list, description="Replies used in order when no rule matches.")
    default: str | None = Field(default=None, description="The reply when no rule matches and no reply is left.")
    model_name: str = Field(default="scripted", description="Model name reported in the metadata.")
    context_window: int = Field(default=8192, description="Context window reported in the metadata.")
    num_output: int = Field(default=256, description="Output tokens reported in the metadata.")
    prompts: list[str] = Field(default_factory=list, description="Every prompt received, in order.")
    chunks_streamed: int = Field(default=0, description="Stream chunks handed out (how far a reader read).")

    @classmethod
    def class_name(cls) -> str:
        return "ScriptedLLM"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(context_window=self.context_window, num_output=self.num_output, model_name=self.model_name)

    @property
    def calls(self) -> int:
        return len(self.prompts)

    def reply(self, prompt: str) -> str:
        self.prompts.append(prompt)
        for pattern, reply in self.rules:
            if re.search(pattern, prompt, re.DOTALL):
                if isinstance(reply, list):
                    if not reply:
                        raise AssertionError(f"ScriptedLLM: the replies of rule {pattern!r} are used up.")
                    return reply.pop(0)
                return reply
        if self.replies:
            return self.replies.pop(0)
        if self.default is None:
            raise AssertionError(f"ScriptedLLM: no scripted reply for the prompt {prompt[-200:]!r}.")
        return self.default

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self.reply(prompt))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        text = self.reply(prompt)

        def gen() -> Iterator[CompletionResponse]:
            so_far = ""
            for i, piece in enumerate(text.split(" ")):
                delta = piece if i == 0 else " " + piece
                so_far += delta
                self.chunks_streamed += 1
                yield CompletionResponse(text=so_far, delta=delta)

        return gen()
