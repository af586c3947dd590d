"""JSON output that follows a pydantic schema, from any LlamaIndex LLM.

With the local llama.cpp model the schema becomes a grammar, so the model cannot emit anything else. A served
model gets it as a request option where the backend has one: OpenAI-compatible servers ``response_format``
(OpenAI's ``json_schema`` form, else the ``json_object`` + ``schema`` form of llama.cpp's server), Ollama
``format``; a function-calling LLM without such an option (Bedrock Converse) is made to call a tool whose
arguments are the schema; other LLMs get the schema in the prompt. Either way the text is parsed, repaired if it
is wrapped in prose or code fences, validated, and retried with the problem appended to the prompt (at
temperature 0 the same prompt would only bring the same reply back); after the last try a
:class:`StructuredOutputError` carries the raw text. With ``repair_truncated=True`` a reply cut off at the token
limit (or with raw control characters in its strings) is first repaired by :func:`truncated_json_candidates`,
which keeps its complete items, before asking again: for long lists whose tail may be lost (GraphRAG's
extraction and reports), not for answers that must be whole.

Example:

```python
class Answer(BaseModel):
    city: str = Field(max_length=60)

answer = generate_json(llm, "Which city is the capital of France?", Answer)
```
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any, TypeVar

from llama_index.core.llms import LLM
from pydantic import BaseModel, ValidationError

from llama_index_kgplus.errors import StructuredOutputError
from llama_index_kgplus.llm import MeteredLLM
from llama_index_kgplus.llm._complete import complete_response, local_llama
from llama_index_kgplus.llm._grammar import json_grammar

__all__ = [
    "agenerate_json",
    "generate_json",
    "parse_json_object",
    "truncated_json_candidates",
]

M = TypeVar("M", bound=BaseModel)


def parse_json_object(text: str) -> Any:
    """Parse JSON, tolerating code fences and prose around the first complete ``{...}`` object.

    The whole text is tried first: a valid reply may hold a fenced code block inside one of its strings.
    """
    candidates = [text.strip()]
    fenced = re.search(r"```(?:json)?\s*(.*?)```", candidates[0], re.DOTALL)
    if fenced:
        candidates.append(fenced.group(1).strip())
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            pass
    error: ValueError = ValueError("no JSON object in the text")
    for candidate in candidates:
        start = candidate.find("{")
        if start >= 0:
            try:
                return json.JSONDecoder().raw_decode(candidate[start:])[0]
            except json.JSONDecodeError as exc:
                error = exc
    raise error


def _complete_once(llm: LLM, prompt: str, output_cls: type[BaseModel], max_tokens: int) -> str:
    schema = output_cls.model_json_schema()
    if local_llama(llm) is None:
        options = _ServedOptions(llm, schema, max_tokens)
        if options.tool_llm is not None:
            return _tool_reply(llm, prompt, options.tool_llm.chat_with_tools(**_tool_request(output_cls, prompt)))
        while True:
            try:
                return llm.complete(options.prompt(prompt), **options.current()).text
            except Exception as exc:
                if not options.refused(exc):
                    raise
    grammar = json_grammar(json.dumps(schema, sort_keys=True))
    return complete_response(llm, prompt, max_tokens=max_tokens, grammar=grammar).text


def _tool_request(output_cls: type[BaseModel], prompt: str) -> dict[str, Any]:
    """A required call of a tool whose arguments are ``output_cls`` (a function-calling LLM's structured output)."""
    from llama_index.core.program.function_program import get_function_tool

    return {"tools": [get_function_tool(output_cls)], "user_msg": prompt, "tool_required": True}


def _tool_reply(llm: LLM, prompt: str, response: Any) -> str:
    """The arguments of the tool call in ``response`` as JSON text (counted as one call of ``llm``, if metered)."""
    inner: Any = getattr(llm, "inner", llm)
    calls = inner.get_tool_calls_from_response(response, error_on_no_tool_call=False)
    text = json.dumps(calls[0].tool_kwargs) if calls else str(response.message.content or "")
    if isinstance(llm, MeteredLLM):
        llm.record_reply(prompt, response, text)
    return text


# (server URL, model) of a served LLM -> the index of the first schema option it accepted (see _ServedOptions)
_ACCEPTED_OPTION: dict[Any, int] = {}


class _ServedOptions:
    """The request options that make a served model follow a JSON schema, the most standard first; an option
    the server refuses (an error reply naming it) is dropped for this server and model and the next one tried;
    none left: the schema goes in the prompt. The ``json_object`` + ``schema`` form is llama.cpp's server's,
    which enforces the schema as a grammar, so the prompt carries no copy of it then either."""

    def __init__(self, llm: LLM, schema: dict, max_tokens: int) -> None:
        inner = getattr(llm, "inner", llm)
        server = getattr(inner, "api_base", None) or getattr(inner, "base_url", None)
        self.key = (server, getattr(inner, "model", None)) if server else id(inner)  # what a server accepts
        modules = [c.__module__ for c in type(inner).__mro__]
        self.schema = schema
        self.options: list[dict[str, Any]] = []
        self.always: dict[str, Any] = {}
        self.tried = 0
        metadata = inner.metadata
        chat = bool(getattr(metadata, "is_chat_model", False))  # completion endpoints take no response_format
        if chat and any(m.startswith("llama_index.llms.openai") for m in modules):  # OpenAI, OpenAILike, subclasses
            name = re.sub(r"[^A-Za-z0-9_-]", "_", str(schema.get("title") or "output"))[:64]
            self.options = [
                {"response_format": {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}},
                {"response_format": {"type": "json_object", "schema": schema}},
            ]
            self.always = {"max_tokens": max_tokens}
        elif any(m.startswith("llama_index.llms.ollama") for m in modules):
            self.options = [{"format": schema}]
        # no schema option, but tool calling (Bedrock Converse, ...): the schema as a tool's arguments
        function_calling = getattr(metadata, "is_function_calling_model", False)
        self.tool_llm: Any = (
            inner if not self.options and function_calling and hasattr(inner, "chat_with_tools") else None
        )

    def current(self) -> dict[str, Any]:
        """The request options of the next try."""
        self.tried = _ACCEPTED_OPTION.get(self.key, 0)
        return {**self.always, **(self.options[self.tried] if self.tried < len(self.options) else {})}

    def prompt(self, prompt: str) -> str:
        """``prompt`` as sent: the schema goes into the text only when the server gets no schema option (as
        with the local grammar, a constrained model needs no copy of the schema to read)."""
        if _ACCEPTED_OPTION.get(self.key, 0) < len(self.options):
            return prompt
        return prompt + _schema_hint(self.schema)

    def refused(self, exc: Exception) -> bool:
        """True (and the next option chosen) when ``exc`` is the server refusing the option just tried: an error
        reply (400, 422; llama.cpp's server: 500) that names it. Other errors (a prompt too long) are not."""
        status = getattr(exc, "status_code", None)
        named = any(word in str(exc) for word in ("response_format", "json_schema", "format"))
        refusal = status in (400, 422, 500) and named
        if self.tried >= len(self.options) or not refusal:
            return False
        _ACCEPTED_OPTION[self.key] = max(_ACCEPTED_OPTION.get(self.key, 0), self.tried + 1)
        return True


def _schema_hint(schema: dict) -> str:
    return f"\n\nReply with one JSON object only, following this JSON schema:\n{json.dumps(schema)}"


def _validated(raw: str, output_cls: type[M]) -> tuple[M | None, str]:
    try:
        return output_cls.model_validate(parse_json_object(raw)), ""
    except (ValueError, ValidationError) as exc:
        return None, str(exc).splitlines()[0]


def _with_feedback(prompt: str, problem: str) -> str:
    if not problem:
        return prompt
    return f"{prompt}\n\nYour previous reply was not valid ({problem}). Reply again, shorter, with valid JSON only."


class _Attempts:
    """The retry loop shared by :func:`generate_json` and :func:`agenerate_json`: the prompt of each attempt,
    the check of each reply, and the error after the last."""

    def __init__(self, output_cls: type[M], max_retries: int, repair_truncated: bool) -> None:
        self.output_cls, self.tries, self.repair = output_cls, max(0, max_retries) + 1, repair_truncated
        self.raw = self.problem = ""

    def prompts(self, prompt: str) -> Any:
        for _ in range(self.tries):
            yield _with_feedback(prompt, self.problem)

    def check(self, raw: str) -> Any:
        self.raw = raw
        result, self.problem = _validated(raw, self.output_cls)
        if result is None and self.repair:
            for candidate in truncated_json_candidates(raw):
                try:
                    return self.output_cls.model_validate(candidate)
                except ValidationError:
                    continue
        return result

    def give_up(self) -> StructuredOutputError:
        name = self.output_cls.__name__
        return StructuredOutputError(
            f"The LLM returned no valid {name} JSON after {self.tries} tries ({self.problem}).", self.raw
        )


def generate_json(
    llm: LLM,
    prompt: str,
    output_cls: type[M],
    *,
    max_retries: int = 2,
    max_tokens: int = 1024,
    repair_truncated: bool = False,
) -> M:
    """Ask ``llm`` for one JSON object of ``output_cls``; validate; retry up to ``max_retries`` times
    (``repair_truncated``: see the module docstring)."""
    attempts = _Attempts(output_cls, max_retries, repair_truncated)
    for text in attempts.prompts(prompt):
        result = attempts.check(_complete_once(llm, text, output_cls, max_tokens))
        if result is not None:
            return result
    raise attempts.give_up()


async def agenerate_json(
    llm: LLM,
    prompt: str,
    output_cls: type[M],
    *,
    max_retries: int = 2,
    max_tokens: int = 1024,
    repair_truncated: bool = False,
) -> M:
    """Async twin of :func:`generate_json` (a local model runs in a worker thread, one call at a time)."""
    if local_llama(llm) is not None:
        return await asyncio.to_thread(
            generate_json,
            llm,
            prompt,
            output_cls,
            max_retries=max_retries,
            max_tokens=max_tokens,
            repair_truncated=repair_truncated,
        )
    attempts = _Attempts(output_cls, max_retries, repair_truncated)
    for text in attempts.prompts(prompt):
        result = attempts.check(await _acomplete_served(llm, text, output_cls, max_tokens))
        if result is not None:
            return result
    raise attempts.give_up()


async def _acomplete_served(llm: LLM, prompt: str, output_cls: type[BaseModel], max_tokens: int) -> str:
    options = _ServedOptions(llm, output_cls.model_json_schema(), max_tokens)
    if options.tool_llm is not None:
        reply = await options.tool_llm.achat_with_tools(**_tool_request(output_cls, prompt))
        return _tool_reply(llm, prompt, reply)
    while True:
        try:
            return (await llm.acomplete(options.prompt(prompt), **options.current())).text
        except Exception as exc:
            if not options.refused(exc):
                raise


_CLOSERS = {"{": "}", "[": "]"}


def truncated_json_candidates(text: str) -> list[Any]:
    """Parses of JSON that was cut off: unfinished trailing items dropped, open brackets closed (raw control
    characters inside strings, which strict JSON rejects, are accepted).

    ``'{"a": [{"x": 1}, {"x": 2}, {"x": '`` gives ``{"a": [{"x": 1}, {"x": 2}]}``. Candidates come
    innermost cut first (keeping the most); an empty list when nothing parseable is left.
    """
    start = text.find("{")
    if start < 0:
        return []
    text = text[start:]
    stack: list[list[Any]] = []  # [open char, last safe cut inside it]
    in_string = escaped = False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in _CLOSERS:
            stack.append([ch, i + 1])
        elif ch in "}]":
            if not stack:
                return []
            stack.pop()
            if not stack:  # complete: only raw control characters inside strings can be wrong with it
                try:
                    return [json.loads(text[: i + 1], strict=False)]
                except json.JSONDecodeError:
                    return []
            stack[-1][1] = i + 1
        elif ch == "," and stack:
            stack[-1][1] = i
    candidates = []
    for depth in range(len(stack) - 1, -1, -1):
        cut = text[: stack[depth][1]].rstrip().rstrip(",")
        closers = "".join(_CLOSERS[open_ch] for open_ch, _ in reversed(stack[: depth + 1]))
        try:
            candidates.append(json.loads(cut + closers, strict=False))
        except json.JSONDecodeError:
            continue
    return candidates
