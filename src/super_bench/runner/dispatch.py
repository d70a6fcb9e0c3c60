"""The driver loop: keep an executor busy, write each result as it arrives, retry infrastructure failures.

Results are appended to ``results.jsonl`` (and fsync'ed) by this one thread, as each task ends, so a
crash at any moment loses at most the tasks in flight. An infrastructure failure (sandbox, kernel,
model service, or the executor itself) is tried again, at the back of the queue, up to ``retries``
times; an agent's failure is a result like any other.
"""

from __future__ import annotations

import logging
import os
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

from super_bench.errors import ConfigError, RunDirWriteError
from super_bench.runner.episode import Cancelled
from super_bench.runner.executors import Executor, WorkItem
from super_bench.runner.guard import disk_error, write_error
from super_bench.runner.results import TaskResult
from super_bench.runner.rundir import RunDir
from super_bench.runner.waste import Waste

if TYPE_CHECKING:
    from super_bench.runner.config import Reporter

log = logging.getLogger(__name__)


def dispatch(
    executor: Executor,
    items: list[WorkItem],
    run_dir: RunDir,
    retries: int,
    reporter: Reporter | None = None,
    identity: str | None = None,
    kept: Callable[[TaskResult], None] | None = None,
) -> None:
    """Run ``items`` on ``executor``, writing each result, stamped with the run's ``identity`` digest, and handing
    it to ``kept`` (the rows are not held here: a run's memory does not grow with them). On an exception (Ctrl-C,
    a configuration error, a run directory that cannot be written) the tasks in flight are cancelled, those that
    still finish are kept, and the exception goes on."""
    queue = deque(items)
    running: dict[Future[Any], WorkItem] = {}
    submitted: dict[Future[Any], float] = {}

    def settle(future: Future[Any]) -> None:
        item = running.pop(future)
        seconds = time.monotonic() - submitted.pop(future)
        try:
            result = executor.result(future, item)
        except Cancelled:
            return
        except (ConfigError, RunDirWriteError):
            raise
        except Exception as e:  # the harness failed this task (a Ray worker died, the machine's disk filled up)
            if (full := disk_error(e)) is not None and _inside(full, run_dir):
                raise write_error(run_dir.path, full) from e  # its trajectory could not be saved: stop the run
            log.warning("task %s: the executor failed: %s", item.task.task_id, e, exc_info=True)
            result = _failure(item, e)
        if result.status == "infra_error" and item.attempt <= retries:
            queue.append(item.retry(result.error or "infra_error", max(0.0, seconds - result.waited)))
            if reporter is not None:
                reporter.task_retried(result)
            return
        result.attempts, result.retry_errors = item.attempt, list(item.retry_errors)
        result.identity_sha256 = identity
        if item.retried_seconds:
            result.waste = result.waste or Waste()
            result.waste.retried_attempts = item.retried_seconds
        run_dir.append_result(result)
        if kept is not None:
            kept(result)
        if reporter is not None:
            reporter.task_finished(result)

    try:
        while queue or running:
            _fill(executor, queue, running, submitted, reporter)
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                settle(future)
    except BaseException:
        executor.cancel()
        queue.clear()
        while running:
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                try:
                    settle(future)
                except (ConfigError, RunDirWriteError):
                    pass  # already stopping; a row that cannot be written now is not kept, and its task runs again
        raise


def _fill(
    executor: Executor,
    queue: deque[WorkItem],
    running: dict[Future[Any], WorkItem],
    submitted: dict[Future[Any], float],
    reporter: Reporter | None,
) -> None:
    """Submit queued items while the executor has room, and tell it which waits next."""
    while queue and len(running) < executor.capacity:
        item = queue.popleft()
        if reporter is not None:
            reporter.task_started(item.task)
        start = time.monotonic()  # before: with one worker, submit runs the task itself
        executor.upcoming(list(islice(queue, executor.capacity)))  # so too: the next may be prepared meanwhile
        future = executor.submit(item)
        running[future], submitted[future] = item, start
    executor.upcoming(list(islice(queue, executor.capacity)))  # what waits now (a retry may have joined the queue)


def _failure(item: WorkItem, error: Exception) -> TaskResult:
    return TaskResult(
        task_id=item.task.task_id,
        task_set=item.task.task_set,
        epoch=item.epoch,
        seed=item.seed,
        status="infra_error",
        stop_reason="infra_error",
        error=f"{type(error).__name__}: {error}",
    )


def _inside(error: OSError, run_dir: RunDir) -> bool:
    """Whether a disk error is the run directory's: its file is in it, or it names none (a write's error: the
    harness writes a task's files only into the run directory)."""
    if error.filename is None:
        return True
    return Path(os.fsdecode(error.filename)).resolve().is_relative_to(run_dir.path.resolve())
