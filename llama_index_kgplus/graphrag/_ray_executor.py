"""Run GraphRAG's LLM tasks on Ray, the option for many machines (``pip install 'llama-index-kgplus[graphrag]'``).

Each task runs as a Ray task in a worker process. The worker needs its own LLM: give ``llm_factory`` (a
picklable function that builds one, e.g. ``functools.partial(llm_from_spec, "qwen2.5-coder-0.5b")``; each worker
calls it once and keeps the model), or pass a picklable LLM (API clients usually are; a llama.cpp model is not).
A local model that the factory builds without ``n_threads`` runs as many threads as the CPUs Ray gave the task
(one by default) unless ``KGPLUS_LLM_THREADS`` says otherwise, not one per core in every worker.
Workers count their LLM calls and tokens and send them back with each outcome, so the usage figures of a Ray run
are complete.

Example:

```python
make_llm = partial(llm_from_spec, "qwen2.5-coder-0.5b")
executor = RayExecutor.from_defaults(llm_factory=make_llm, num_cpus=2)
index = GraphRAGIndex.from_defaults("./store", executor=executor)
```
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from llama_index.core.llms import LLM
from pydantic import Field, PrivateAttr

from llama_index_kgplus._defaults import LLM_THREADS_ENV
from llama_index_kgplus.errors import KGPlusError, KGPlusSetupError
from llama_index_kgplus.graphrag._executor import BaseExecutor, LLMTask, TaskOutcome, describe_error
from llama_index_kgplus.llm._complete import local_llama
from llama_index_kgplus.llm._usage import metered, usage_meter

_WORKER_LLMS: dict[str, LLM] = {}


def _worker_llm(source: tuple[str, Any]) -> LLM:
    """The worker's LLM: built by the factory with the task's CPUs as the local model's default thread count (a
    llama.cpp model otherwise takes one thread per core in every worker), or the LLM that was sent."""
    kind, value = source
    if kind != "factory":
        return value
    import ray

    cpus = ray.get_runtime_context().get_assigned_resources().get("CPU")
    if cpus and LLM_THREADS_ENV not in os.environ:
        os.environ[LLM_THREADS_ENV] = str(max(1, int(cpus)))
    return value()


def _run_task(task: LLMTask, source: tuple[str, Any], token: str) -> TaskOutcome:
    """The body of one Ray task (runs in a worker process)."""
    llm = _WORKER_LLMS.get(token)
    if llm is None:
        llm = metered(_worker_llm(source))
        _WORKER_LLMS[token] = llm
    meter = usage_meter(llm)
    before = meter.snapshot()
    try:
        return TaskOutcome(task.key, result=asyncio.run(task.fn(llm)), usage=meter.snapshot() - before)
    except Exception as exc:  # recorded, like the asyncio executor does
        return TaskOutcome(task.key, error=describe_error(exc), usage=meter.snapshot() - before)


class RayExecutor(BaseExecutor):
    """Tasks as Ray tasks, at most ``num_workers`` in flight; see the module docstring.

    Starts a local Ray instance (``ray.init(num_cpus=..., include_dashboard=False)``) unless Ray is already
    initialised or ``address`` names a cluster; :meth:`shutdown` stops what it started.

    Example:

    ```python
    executor = RayExecutor.from_defaults(llm_factory=make_llm, num_workers=2, num_cpus=2)
    outcomes = executor.run(tasks, llm)
    executor.shutdown()
    ```
    """

    address: str | None = Field(
        default=None, description="Ray cluster address (e.g. 'ray://head:10001'); None starts a local instance."
    )
    num_cpus: int | None = Field(default=None, ge=1, description="CPUs of the local Ray instance (None: all).")
    init_kwargs: dict[str, Any] = Field(default_factory=dict, description="More keyword arguments for ray.init.")

    _llm_factory: Callable[[], LLM] | None = PrivateAttr(default=None)
    _token: str = PrivateAttr(default_factory=lambda: uuid.uuid4().hex)
    _started: bool = PrivateAttr(default=False)
    _remote: Any = PrivateAttr(default=None)

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this component under."""
        return "RayExecutor"

    @classmethod
    def from_defaults(cls, llm_factory: Callable[[], LLM] | None = None, **kwargs: Any) -> RayExecutor:
        """An executor whose workers build their LLM with ``llm_factory`` (else the LLM is pickled)."""
        executor = cls(**kwargs)
        executor._llm_factory = llm_factory
        return executor

    def _ensure_ray(self) -> Any:
        try:
            import ray
        except ImportError as exc:
            raise KGPlusSetupError("Ray is not installed: pip install 'llama-index-kgplus[graphrag]'.") from exc
        if not ray.is_initialized():
            kwargs = {"include_dashboard": False, "log_to_driver": False, **self.init_kwargs}
            if self.address:
                kwargs["address"] = self.address
            elif self.num_cpus:
                kwargs["num_cpus"] = self.num_cpus
            ray.init(**kwargs)
            self._started = True
        if self._remote is None:
            self._remote = ray.remote(_run_task)
        return ray

    async def arun(
        self,
        tasks: Sequence[LLMTask],
        llm: LLM,
        *,
        on_result: Callable[[TaskOutcome], None] | None = None,
        desc: str | None = None,
        show_progress: bool = False,
    ) -> list[TaskOutcome]:
        """Run ``tasks`` on Ray workers, each with its own LLM (from ``llm_factory``, or ``llm`` pickled); a failed
        task is recorded in its outcome and the batch goes on."""
        if not tasks:
            return []
        ray = self._ensure_ray()
        source = ("factory", self._llm_factory) if self._llm_factory else ("llm", llm)
        hint = "Build the executor with RayExecutor.from_defaults(llm_factory=...) so that each worker creates its own LLM."
        if self._llm_factory is None and local_llama(llm) is not None:
            # LlamaIndex would pickle it without its model, and every call in the workers would fail.
            raise KGPlusError(f"A llama.cpp model cannot be sent to Ray workers. {hint}")
        try:
            source_ref = ray.put(source)
        except Exception as exc:
            raise KGPlusError(f"This LLM cannot be sent to Ray workers ({type(exc).__name__}: {exc}). {hint}") from exc
        try:
            driver_meter = usage_meter(llm)
        except ValueError:
            driver_meter = None
        from tqdm.auto import tqdm

        bar = tqdm(total=len(tasks), desc=desc, disable=not show_progress)
        outcomes: dict[str, TaskOutcome] = {}
        pending: dict[Any, str] = {}
        queue = list(tasks)
        try:
            while queue or pending:
                while queue and len(pending) < self.num_workers:
                    task = queue.pop(0)
                    pending[self._remote.remote(task, source_ref, self._token)] = task.key
                done, _ = await asyncio.to_thread(ray.wait, list(pending), num_returns=1)
                for ref in done:
                    key = pending.pop(ref)
                    try:
                        outcome = ray.get(ref)
                    except Exception as exc:  # the worker died or the task could not run
                        outcome = TaskOutcome(key, error=describe_error(exc))
                    if driver_meter is not None and outcome.usage is not None:
                        driver_meter.add(outcome.usage)
                    outcomes[key] = outcome
                    if on_result is not None:
                        on_result(outcome)
                    bar.update(1)
        finally:
            bar.close()
            for ref in pending:
                ray.cancel(ref)
        return [outcomes[t.key] for t in tasks]

    def shutdown(self) -> None:
        """Stop the local Ray instance if this executor started it."""
        if self._started:
            import ray

            ray.shutdown()
            self._started = False
            self._remote = None
