"""Pluggable executors for GraphRAG's batches of LLM work (extraction, report generation, the map step).

A batch is a list of :class:`LLMTask`: a key and an async function of the LLM, built from a module-level
function and plain data (``functools.partial``) so that it can also be shipped to other processes.
:class:`AsyncioExecutor` (the default) runs them in this process with a bounded number of concurrent tasks;
:class:`~llama_index_kgplus.graphrag.RayExecutor` runs them on a Ray cluster. Either way each task ends as a
:class:`TaskOutcome` (a result or an error message; one failure never stops the batch) and ``on_result`` is
called in this process as each one finishes, so the caller can persist results as they come.

Example:

```python
executor = AsyncioExecutor(num_workers=4)
outcomes = executor.run([LLMTask("a", partial(summarise, "some text"))], llm)
```
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

from llama_index.core.async_utils import run_jobs
from llama_index.core.llms import LLM
from pydantic import BaseModel, ConfigDict, Field

from llama_index_kgplus._sync import run_sync
from llama_index_kgplus.llm._usage import LLMUsage


@dataclass(frozen=True)
class LLMTask:
    """One unit of LLM work: ``fn(llm)`` is awaited; it must be picklable for executors on other processes."""

    key: str
    fn: Callable[[LLM], Coroutine[Any, Any, Any]]


@dataclass(frozen=True)
class TaskOutcome:
    """The result or the error of one task; ``usage`` is set when the LLM ran in another process."""

    key: str
    result: Any = None
    error: str | None = None
    usage: LLMUsage | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def describe_error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class BaseExecutor(BaseModel, ABC):
    """Runs a batch of :class:`LLMTask` with one LLM; sync ``run`` and async ``arun``.

    Example:

    ```python
    from llama_index_kgplus import GraphRAGIndex
    from llama_index_kgplus.graphrag import AsyncioExecutor

    # an executor runs the LLM calls of extraction and reports; AsyncioExecutor and RayExecutor are the two kinds
    index = GraphRAGIndex.from_defaults("./grag", llm=llm, executor=AsyncioExecutor(num_workers=8))
    ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    num_workers: int = Field(default=4, ge=1, description="Most tasks in flight at once.")

    @abstractmethod
    async def arun(
        self,
        tasks: Sequence[LLMTask],
        llm: LLM,
        *,
        on_result: Callable[[TaskOutcome], None] | None = None,
        desc: str | None = None,
        show_progress: bool = False,
    ) -> list[TaskOutcome]:
        """Run ``tasks``; outcomes in task order; ``on_result`` is called in this process as each ends."""

    def run(
        self,
        tasks: Sequence[LLMTask],
        llm: LLM,
        *,
        on_result: Callable[[TaskOutcome], None] | None = None,
        desc: str | None = None,
        show_progress: bool = False,
    ) -> list[TaskOutcome]:
        """Sync twin of :meth:`arun`."""
        return run_sync(self.arun(tasks, llm, on_result=on_result, desc=desc, show_progress=show_progress))

    def shutdown(self) -> None:
        """Release what the executor started (nothing for asyncio)."""


class AsyncioExecutor(BaseExecutor):
    """Tasks as coroutines in this process, at most ``num_workers`` at a time (LlamaIndex's ``run_jobs``).

    A local llama.cpp model still generates one reply at a time; the concurrency pays off with remote LLMs.

    Example:

    ```python
    outcomes = AsyncioExecutor(num_workers=8).run(tasks, llm, desc="Reports")
    ```
    """

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this component under."""
        return "AsyncioExecutor"

    async def arun(
        self,
        tasks: Sequence[LLMTask],
        llm: LLM,
        *,
        on_result: Callable[[TaskOutcome], None] | None = None,
        desc: str | None = None,
        show_progress: bool = False,
    ) -> list[TaskOutcome]:
        """Run ``tasks`` on ``llm`` at most ``num_workers`` at a time; a failed task is recorded in its outcome and the
        batch goes on. ``on_result`` sees each outcome as it arrives."""

        async def job(task: LLMTask) -> TaskOutcome:
            try:
                outcome = TaskOutcome(task.key, result=await task.fn(llm))
            except Exception as exc:  # one failed task is recorded, the batch goes on
                outcome = TaskOutcome(task.key, error=describe_error(exc))
            if on_result is not None:
                on_result(outcome)
            return outcome

        if not tasks:
            return []
        return await run_jobs([job(t) for t in tasks], show_progress=show_progress, workers=self.num_workers, desc=desc)
