"""Run a coroutine from synchronous code (the sync half of every sync/async pair).

LlamaIndex's ``asyncio_run`` retries a coroutine that raised any ``RuntimeError`` and then reports "Detected
nested async"; this pack's set-up and store errors are ``RuntimeError`` subclasses, so they would arrive
garbled. This runner lets the coroutine's own exception through, reuses the thread's event loop like
``asyncio_run``, and runs in a worker thread when a loop is already running (a notebook).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


def run_sync(coro: Awaitable[T]) -> T:
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no loop runs in this thread: use (or make) the thread's own loop
        try:
            loop = asyncio.get_event_loop_policy().get_event_loop()
        except RuntimeError:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
        if loop.is_closed():
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
        return loop.run_until_complete(coro)
    ctx = contextvars.copy_context()

    def in_thread() -> T:
        loop = asyncio.new_event_loop()
        try:
            return ctx.run(loop.run_until_complete, coro)
        finally:
            loop.close()

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(in_thread).result()
