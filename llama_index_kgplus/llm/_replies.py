"""The replies of an OpenAI-compatible server, checked as they arrive, before the OpenAI client reads them (imported
only with the ``openai`` extra). A 2xx reply that is empty, not JSON (an HTML page from a proxy, a plain-text
error), JSON without ``choices`` (or ``data`` for embeddings), or not an event stream where one was asked for, is
a one-line :class:`~llama_index_kgplus.errors.ModelServerError` naming the server (redacted) and what came back:
never an empty answer, an ``AttributeError`` deep inside the client, or retries of a reply that will not change.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai

from llama_index_kgplus._redact import redact_text, redact_url
from llama_index_kgplus.errors import ModelServerError

_SHOWN_BYTES = 60


class UnusableReplyError(ModelServerError, openai.OpenAIError):
    """A :class:`ModelServerError` the OpenAI client passes on as it is: not retried, not wrapped in a connection
    error (it is an ``OpenAIError``), and not retried by LlamaIndex either."""


def unusable(server: str, detail: str) -> UnusableReplyError:
    """The error for a reply of ``server`` described by ``detail``."""
    return UnusableReplyError(
        f"the model server at {redact_url(server)} answered something that is not an OpenAI-style reply "
        f"({redact_text(detail)}): check the URL of the spec (it usually ends in /v1)"
    )


def _streamed(request: httpx.Request) -> bool:
    try:
        return bool(json.loads(request.content).get("stream"))
    except (ValueError, AttributeError, httpx.RequestNotRead):
        return False


def _problem(response: httpx.Response) -> str | None:
    """What is wrong with a 2xx reply whose body has been read, or None."""
    body = response.content
    if not body.strip():
        return "an empty body"
    if _streamed(response.request):  # and no event-stream content type: the stream's events, or not a stream
        return None if body.lstrip().startswith((b"data:", b"event:", b":")) else "not an event stream"
    if "json" not in response.headers.get("content-type", "").lower():
        return "not JSON"
    try:
        data: Any = json.loads(body)
    except ValueError:
        return "not valid JSON"
    path = response.request.url.path.rstrip("/")
    key = "data" if path.endswith("/embeddings") else "choices" if path.endswith("/completions") else None
    if key and not (isinstance(data, dict) and isinstance(data.get(key), list) and data[key]):
        return f"JSON without {key!r}"
    return None


def _detail(response: httpx.Response, problem: str) -> str:
    kind = response.headers.get("content-type") or "no content type"
    body = response.content
    shown = " ".join(body[:_SHOWN_BYTES].decode("utf-8", "replace").split())
    start = f", {len(body)} bytes starting {shown!r}" if body.strip() else ""
    return f"{problem}: HTTP {response.status_code}, {kind}{start}"


def _needs_reading(response: httpx.Response) -> bool:
    if not response.is_success:
        return False  # an error status: the OpenAI client raises its own error, described by describe_server_error
    return "event-stream" not in response.headers.get("content-type", "")


def check_reply(response: httpx.Response) -> None:
    """httpx response hook: raise :class:`UnusableReplyError` for an unusable 2xx reply."""
    if _needs_reading(response):
        response.read()
        problem = _problem(response)
        if problem:
            raise unusable(str(response.request.url), _detail(response, problem))


async def acheck_reply(response: httpx.Response) -> None:
    """:func:`check_reply` for the async client."""
    if _needs_reading(response):
        await response.aread()
        problem = _problem(response)
        if problem:
            raise unusable(str(response.request.url), _detail(response, problem))


def checked_http_client(is_async: bool) -> httpx.Client | httpx.AsyncClient:
    """The OpenAI client's default httpx client, with the reply check."""
    if is_async:
        return openai.DefaultAsyncHttpxClient(event_hooks={"response": [acheck_reply]})
    return openai.DefaultHttpxClient(event_hooks={"response": [check_reply]})
