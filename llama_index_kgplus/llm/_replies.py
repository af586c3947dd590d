"""The replies of a model server, checked as they arrive, before its client reads them (httpx response hooks, for
``openai-like:`` and ``ollama:`` specs). A 2xx reply that is empty, not JSON (an HTML page from a proxy, a
plain-text error), or (OpenAI's API) JSON without ``choices`` / ``data`` or no event stream where one was asked
for, is a one-line :class:`~llama_index_kgplus.errors.ModelServerError` naming the server (redacted) and what came
back (content type, first bytes): never an empty answer or an ``AttributeError`` deep inside the client.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from llama_index_kgplus._redact import redact_text, redact_url
from llama_index_kgplus.errors import ModelServerError

_SHOWN_BYTES = 60
#: where the API answers with a JSON object that must hold a non-empty list under this key
_REQUIRED_KEYS = {"/completions": "choices", "/embeddings": "data"}
#: how a stream of events starts
_STREAM_STARTS = (b"data:", b"event:", b":")


def _streamed(request: httpx.Request) -> bool:
    try:
        return bool(json.loads(request.content).get("stream"))
    except (ValueError, AttributeError, httpx.RequestNotRead):
        return False


def json_problem(response: httpx.Response) -> str | None:
    """What is wrong with a 2xx reply that should be JSON (its body read), or None: an empty body, not JSON."""
    if not response.content.strip():
        return "an empty body"
    if "json" not in response.headers.get("content-type", "").lower():
        return "not JSON"
    try:
        json.loads(response.content)
    except ValueError:
        return "not valid JSON"
    return None


def openai_problem(response: httpx.Response) -> str | None:
    """What is wrong with a 2xx reply of an OpenAI-compatible server (its body read), or None."""
    body = response.content
    if not body.strip():
        return "an empty body"
    if _streamed(response.request):  # and no event-stream content type: the stream's events, or not a stream
        return None if body.lstrip().startswith(_STREAM_STARTS) else "not an event stream"
    problem = json_problem(response)
    if problem:
        return problem
    path = response.request.url.path.rstrip("/")
    key = next((key for end, key in _REQUIRED_KEYS.items() if path.endswith(end)), None)
    data: Any = json.loads(body)
    if key and not (isinstance(data, dict) and isinstance(data.get(key), list) and data[key]):
        return f"JSON without {key!r}"
    return None


def _detail(response: httpx.Response, problem: str) -> str:
    kind = response.headers.get("content-type") or "no content type"
    body = response.content
    shown = " ".join(body[:_SHOWN_BYTES].decode("utf-8", "replace").split())
    start = f", {len(body)} bytes starting {shown!r}" if body.strip() else ""
    return f"{problem}: HTTP {response.status_code}, {kind}{start}"


@dataclass(frozen=True)
class ReplyCheck:
    """How the replies of one API are checked: ``problem`` finds what is wrong with a 2xx reply (its body read); a
    reply whose content type holds ``streams`` (``event-stream``, ``ndjson``) is a stream, left to the client."""

    api: str  # what a reply should be: "an OpenAI-style reply"
    hint: str  # the fix
    problem: Callable[[httpx.Response], str | None]
    streams: str
    error: type[ModelServerError] = ModelServerError

    def unusable(self, server: str, detail: str) -> ModelServerError:
        """The error for a reply of ``server`` described by ``detail``."""
        return self.error(
            f"the model server at {redact_url(server)} answered something that is not {self.api} "
            f"({redact_text(detail)}): {self.hint}"
        )

    def _read(self, response: httpx.Response) -> bool:
        # an error status is the client's to report (describe_server_error says it in one line)
        return response.is_success and self.streams not in response.headers.get("content-type", "")

    def _raise_for(self, response: httpx.Response) -> None:
        found = self.problem(response)
        if found:
            raise self.unusable(str(response.request.url), _detail(response, found))

    def check(self, response: httpx.Response) -> None:
        """The httpx response hook."""
        if self._read(response):
            response.read()
            self._raise_for(response)

    async def acheck(self, response: httpx.Response) -> None:
        """The httpx response hook of an async client."""
        if self._read(response):
            await response.aread()
            self._raise_for(response)

    def event_hooks(self, is_async: bool = False) -> dict[str, list[Callable[[httpx.Response], Any]]]:
        """``event_hooks`` for an httpx client."""
        return {"response": [self.acheck if is_async else self.check]}


OLLAMA = ReplyCheck(
    "an Ollama reply", "check the URL of the spec (the Ollama server's, e.g. http://host:11434)", json_problem, "ndjson"
)
