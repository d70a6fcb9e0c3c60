"""Where a run's tasks execute: the executor interface, the local one (threads), and the registry.

An executor takes work items (a task, its epoch and seed) and returns a future per item; the
driver (``runner.dispatch``) keeps ``capacity`` items in flight and writes each result as its
future completes. The ``local`` executor runs episodes on threads of this process: each episode's
work happens in its own kernel process, so the threads mostly wait, and one process needs no
shipping of tasks or results. The ``ray`` executor (``runner.ray_executor``) runs them on a cluster.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from super_bench._registry import Registry
from super_bench.agents import AgentOptions
from super_bench.environment import EnvConfig
from super_bench.runner.episode import Cancellation, Prepared, prepare_episode, run_episode
from super_bench.runner.prestart import Prestart
from super_bench.runner.results import TaskResult
from super_bench.runner.rundir import RunDir
from super_bench.sandbox import sandbox_class
from super_bench.scoring import ScoreMode
from super_bench.tasks.model import Task

if TYPE_CHECKING:
    from super_bench.runner.config import RunConfig


@dataclass(frozen=True)
class WorkItem:
    """One attempt at one epoch of one task."""

    task: Task
    epoch: int = 1
    seed: int | None = None
    attempt: int = 1
    retry_errors: tuple[str, ...] = ()
    retried_seconds: float = 0.0  # spent in the attempts that failed on the infrastructure

    def retry(self, error: str, seconds: float) -> WorkItem:
        return dataclasses.replace(
            self,
            attempt=self.attempt + 1,
            retry_errors=(*self.retry_errors, error),
            retried_seconds=self.retried_seconds + seconds,
        )


@dataclass(frozen=True)
class EpisodeSpec:
    """What every episode of a run shares."""

    agent: str
    agent_options: AgentOptions
    env: EnvConfig
    mode: ScoreMode
    run_dir: Path

    def options_for(self, item: WorkItem) -> AgentOptions:
        return self.agent_options.model_copy(update={"seed": item.seed})

    def task_dir(self, item: WorkItem) -> Path:
        return RunDir(self.run_dir).task_dir(item.task.task_id, item.epoch)


class Executor(ABC):
    """Runs work items and hands back a future for each."""

    @property
    @abstractmethod
    def capacity(self) -> int:
        """How many items to keep in flight."""

    @abstractmethod
    def submit(self, item: WorkItem) -> Future[Any]:
        """Start ``item``; the future's value goes to ``result``."""

    def result(self, future: Future[Any], item: WorkItem) -> TaskResult:
        """The item's result, its files in the run directory. Raises what the episode raised:
        ``Cancelled``, a ``ConfigError``, or anything else (an infrastructure failure)."""
        result: TaskResult = future.result()
        return result

    def upcoming(self, items: Sequence[WorkItem]) -> None:  # noqa: B027 (not abstract: most executors ignore it)
        """The items submitted next, in order, as those in flight end (none: nothing waits). An executor may
        prepare them ahead."""

    @abstractmethod
    def cancel(self) -> None:
        """Stop the items in flight: their futures end with ``Cancelled`` (or, at the latest, normally)."""

    @abstractmethod
    def close(self) -> None:
        """Release workers and connections."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class LocalExecutor(Executor):
    """Episodes on ``workers`` threads of this process; with one worker, in the calling thread itself
    (so Ctrl-C and the human agent's prompt reach the episode directly)."""

    def __init__(self, spec: EpisodeSpec, config: RunConfig) -> None:
        self.spec = spec
        self.workers = config.execution.workers or 1
        self._cancellation = Cancellation()
        self._pool = (
            ThreadPoolExecutor(self.workers, thread_name_prefix="super-bench-task") if self.workers > 1 else None
        )
        self._prestart: Prestart[WorkItem, Prepared] | None = None
        if config.execution.prestart == "auto" and sandbox_class(spec.env.sandbox).starts_ahead:
            self._prestart = Prestart(self.workers, self._prepare)

    @property
    def capacity(self) -> int:
        return self.workers

    def upcoming(self, items: Sequence[WorkItem]) -> None:
        if self._prestart is not None:
            self._prestart.upcoming(items)

    def _prepare(self, item: WorkItem) -> Prepared | None:
        if self._cancellation.cancelled:
            return None
        return prepare_episode(item.task, self.spec.env, self.spec.task_dir(item), self._cancellation)

    def _run(self, item: WorkItem) -> TaskResult:
        spec, prestart = self.spec, self._prestart
        if prestart is not None:
            prestart.begin()
        try:
            return run_episode(
                item.task,
                spec.agent,
                spec.options_for(item),
                spec.env,
                spec.task_dir(item),
                run_dir=spec.run_dir,
                mode=spec.mode,
                epoch=item.epoch,
                cancellation=self._cancellation,
                prepared=None if prestart is None else prestart.take(item),
            )
        finally:
            if prestart is not None:
                prestart.end()

    def submit(self, item: WorkItem) -> Future[TaskResult]:
        if self._pool is not None:
            return self._pool.submit(self._run, item)
        future: Future[TaskResult] = Future()
        try:
            future.set_result(self._run(item))
        except Exception as e:
            future.set_exception(e)
        return future

    def cancel(self) -> None:
        self._cancellation.cancel()
        if self._prestart is not None:
            self._prestart.close()  # what was prepared ahead is stopped and removed

    def close(self) -> None:
        if self._prestart is not None:
            self._prestart.close()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)


class ExecutorFactory(Protocol):
    def __call__(self, spec: EpisodeSpec, config: RunConfig) -> Executor: ...


EXECUTORS: Registry[ExecutorFactory] = Registry("executor", "super_bench.executors")
EXECUTORS.register(
    "local", "super_bench.runner.executors:LocalExecutor", summary="threads of this process (--workers N)"
)
EXECUTORS.register(
    "ray", "super_bench.runner.ray_executor:RayExecutor", extra="ray", summary="Ray tasks, on a cluster or locally"
)
