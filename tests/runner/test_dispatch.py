"""The driver loop (``runner.dispatch``): each result written as its task ends, infrastructure failures tried again
at the back of the queue, an agent's failure kept as it is, a run directory that cannot be written and a stop (Ctrl-C,
a configuration error) ending the run with what finished kept.

Driven through a small executor of the real interface whose work items are plain functions on threads, so that each
test says exactly when and how every task ends; the run directory is a real one."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from tests.support.disks import fill
from tests.support.helpers import make_task

from super_bench.errors import ConfigError, RunDirWriteError
from super_bench.runner import guard
from super_bench.runner.dispatch import dispatch
from super_bench.runner.episode import Cancelled
from super_bench.runner.executors import Executor, WorkItem
from super_bench.runner.results import TaskResult
from super_bench.runner.rundir import RunDir
from super_bench.tasks.model import Task

Work = Callable[[WorkItem], TaskResult]
PATIENCE = 30.0  # seconds a task waits for what a test does before it gives up (never reached when all is well)


class FunctionExecutor(Executor):
    """Runs each work item's function (chosen by task id) on a thread of its own, and records what it was asked."""

    def __init__(self, work: dict[str, Work], capacity: int = 1) -> None:
        self.work = work
        self._capacity = capacity
        self._pool = ThreadPoolExecutor(capacity, thread_name_prefix="test-dispatch")
        self.cancelled = threading.Event()
        self.submitted: list[tuple[str, int]] = []  # (task id, attempt), in order
        self.told_upcoming: list[list[str]] = []

    def __enter__(self) -> FunctionExecutor:
        return self

    @property
    def capacity(self) -> int:
        return self._capacity

    def submit(self, item: WorkItem) -> Future[Any]:
        self.submitted.append((item.task.task_id, item.attempt))
        return self._pool.submit(self.work[item.task.task_id], item)

    def upcoming(self, items: Sequence[WorkItem]) -> None:
        self.told_upcoming.append([item.task.task_id for item in items])

    def cancel(self) -> None:
        self.cancelled.set()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class Recorder:
    """A reporter that writes down what it is told, in order."""

    def __init__(self, on_finished: Callable[[TaskResult], None] | None = None) -> None:
        self.events: list[tuple[str, str]] = []
        self.on_finished = on_finished

    def begin(self, total: int, finished: list[TaskResult]) -> None:
        self.events.append(("begin", str(total)))

    def task_started(self, task: Task) -> None:
        self.events.append(("started", task.task_id))

    def task_retried(self, result: TaskResult) -> None:
        self.events.append(("retried", result.task_id))

    def task_finished(self, result: TaskResult) -> None:
        self.events.append(("finished", result.task_id))
        if self.on_finished is not None:
            self.on_finished(result)


def result_of(
    item: WorkItem, status: Any = "completed", stop_reason: Any = "submitted", error: str | None = None
) -> TaskResult:
    task = item.task
    return TaskResult(
        task_id=task.task_id,
        task_set=task.task_set,
        epoch=item.epoch,
        seed=item.seed,
        status=status,
        stop_reason=stop_reason,
        error=error,
    )


def finishes(item: WorkItem) -> TaskResult:
    return result_of(item)


def items(*task_ids: str) -> list[WorkItem]:
    return [WorkItem(make_task(task_id), seed=7) for task_id in task_ids]


@pytest.fixture
def run_dir(tmp_path: Path) -> RunDir:
    made = RunDir(tmp_path / "run")
    made.create()
    return made


def rows(run_dir: RunDir) -> list[str]:
    return [result.task_id for result in run_dir.read_results()]


def test_a_stop_during_a_rows_sync_keeps_the_row_and_one_during_its_write_cuts_it_back(
    run_dir: RunDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C (a real SIGINT) while a finished row is synced: the row is whole and stays, as a reader may already
    have counted it; one that comes while a row is half written leaves no part of it."""
    first, second = (result_of(item) for item in items("first", "second"))
    sync = os.fsync

    def interrupted_sync(fd: int) -> None:
        os.kill(os.getpid(), signal.SIGINT)  # Python raises KeyboardInterrupt once the sync returns
        sync(fd)

    monkeypatch.setattr(os, "fsync", interrupted_sync)
    # Python's own Ctrl-C handler, as the command has (a test worker may ignore SIGINT).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_dir.append_result(first)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert rows(run_dir) == ["first"]
    monkeypatch.setattr(os, "fsync", sync)
    write = os.write

    def half_then_interrupted(fd: int, data: Any) -> int:
        write(fd, bytes(data[: len(data) // 2]))
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "write", half_then_interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_dir.append_result(second)
    monkeypatch.setattr(os, "write", write)
    assert rows(run_dir) == ["first"] and run_dir.results_path.read_bytes().count(b"\n") == 1


def test_each_result_is_written_and_handed_on_as_its_task_ends(run_dir: RunDir) -> None:
    """The first task to end is on disk, fsync'ed and counted, while the other still runs: a crash then keeps it."""
    release = threading.Event()
    seen: dict[str, list[str]] = {}

    def slow(item: WorkItem) -> TaskResult:
        release.wait(PATIENCE)
        return result_of(item)

    def kept(result: TaskResult) -> None:
        seen[result.task_id] = rows(run_dir)
        release.set()  # only now may the slow task end

    work = {"slow": slow, "fast": finishes}
    reporter = Recorder()
    with FunctionExecutor(work, capacity=2) as executor:
        dispatch(executor, items("slow", "fast"), run_dir, 0, reporter, identity="ab" * 32, kept=kept)
    assert seen == {"fast": ["fast"], "slow": ["fast", "slow"]}
    assert reporter.events == [("started", "slow"), ("started", "fast"), ("finished", "fast"), ("finished", "slow")]
    written = run_dir.read_results()
    assert [(r.attempts, r.retry_errors, r.identity_sha256, r.seed) for r in written] == [(1, [], "ab" * 32, 7)] * 2
    assert all(r.waste is None for r in written)  # nothing was retried, so no attempt was wasted


def fails_first(how: str) -> Work:
    """Work that fails on the infrastructure in its first attempt (raising, or with a result that says so)."""

    def run(item: WorkItem) -> TaskResult:
        if item.attempt > 1:
            return result_of(item)
        if how == "raises":
            raise ConnectionError("the worker was lost")
        return result_of(item, "infra_error", "infra_error", error="SandboxError: the sandbox would not start")

    return run


@pytest.mark.parametrize(
    ("how", "error"),
    [("raises", "ConnectionError: the worker was lost"), ("returns", "SandboxError: the sandbox would not start")],
)
def test_an_infrastructure_failure_runs_again_at_the_back_of_the_queue(run_dir: RunDir, how: str, error: str) -> None:
    reporter = Recorder()
    work = {"flaky": fails_first(how), "b": finishes, "c": finishes}
    with FunctionExecutor(work) as executor:
        dispatch(executor, items("flaky", "b", "c"), run_dir, 1, reporter)
    assert executor.submitted == [("flaky", 1), ("b", 1), ("c", 1), ("flaky", 2)]
    assert ["flaky"] in executor.told_upcoming  # the retry, queued last, is announced before its turn
    assert rows(run_dir) == ["b", "c", "flaky"]
    flaky = run_dir.read_results()[-1]
    assert (flaky.status, flaky.attempts, flaky.retry_errors) == ("completed", 2, [error])
    assert flaky.waste is not None and flaky.waste.retried_attempts > 0  # the failed attempt's time is charged
    assert reporter.events.count(("retried", "flaky")) == 1
    assert reporter.events.count(("finished", "flaky")) == 1


@pytest.mark.parametrize("retries", [0, 2])
def test_a_task_that_keeps_failing_on_the_infrastructure_is_tried_retries_plus_one_times(
    run_dir: RunDir, retries: int
) -> None:
    def broken(item: WorkItem) -> TaskResult:
        raise ConnectionError(f"attempt {item.attempt}: the worker was lost")

    with FunctionExecutor({"down": broken, "ok": finishes}) as executor:
        dispatch(executor, items("down", "ok"), run_dir, retries)
    assert [n for task_id, n in executor.submitted if task_id == "down"] == list(range(1, retries + 2))
    (down,) = [r for r in run_dir.read_results() if r.task_id == "down"]
    assert (down.status, down.stop_reason, down.attempts) == ("infra_error", "infra_error", retries + 1)
    assert down.error == f"ConnectionError: attempt {retries + 1}: the worker was lost"
    assert down.retry_errors == [f"ConnectionError: attempt {n}: the worker was lost" for n in range(1, retries + 1)]
    assert sorted(rows(run_dir)) == ["down", "ok"]


@pytest.mark.parametrize(
    ("status", "stop_reason"), [("agent_error", "agent_error"), ("completed", "environment_broken")]
)
def test_an_agents_failure_is_kept_as_its_result_and_not_retried(
    run_dir: RunDir, status: str, stop_reason: str
) -> None:
    def fails(item: WorkItem) -> TaskResult:
        return result_of(item, status, stop_reason, error="ValueError: the agent's own code raised")

    reporter = Recorder()
    with FunctionExecutor({"a": fails}) as executor:
        dispatch(executor, items("a"), run_dir, 3, reporter)
    assert executor.submitted == [("a", 1)]
    (result,) = run_dir.read_results()
    assert (result.status, result.stop_reason, result.attempts, result.retry_errors) == (status, stop_reason, 1, [])
    assert ("retried", "a") not in reporter.events


def test_a_task_cancelled_on_its_own_leaves_no_row_and_the_others_go_on(run_dir: RunDir) -> None:
    """``Cancelled`` is an episode ending without a result (it runs again on resume): no row, no retry."""

    def stopped(item: WorkItem) -> TaskResult:
        raise Cancelled

    with FunctionExecutor({"gone": stopped, "b": finishes}) as executor:
        dispatch(executor, items("gone", "b"), run_dir, 2)
    assert executor.submitted == [("gone", 1), ("b", 1)]
    assert rows(run_dir) == ["b"]


def waits_for_cancel(executor_box: list[FunctionExecutor], ends: str) -> Work:
    """Work that runs until the run is cancelled, then ends as ``ends`` says: with its result, or ``Cancelled``."""

    def run(item: WorkItem) -> TaskResult:
        assert executor_box[0].cancelled.wait(PATIENCE), "the task in flight was never cancelled"
        if ends == "cancelled":
            raise Cancelled
        return result_of(item)

    return run


def stopped_run(
    run_dir: RunDir,
    first: str,
    work: Work,
    stop: AbstractContextManager[Any],
    ends: str = "finished",
    reporter: Recorder | None = None,
) -> FunctionExecutor:
    """``first`` (running ``work``), ``long`` (running until the run is cancelled, then ending as ``ends`` says)
    and ``never`` queued behind them, two at a time: a run that ``stop`` expects to stop; its executor, closed."""
    box: list[FunctionExecutor] = []
    tasks = {first: work, "long": waits_for_cancel(box, ends), "never": finishes}
    with FunctionExecutor(tasks, capacity=2) as executor:
        box.append(executor)
        with stop:
            dispatch(executor, items(first, "long", "never"), run_dir, 2, reporter)
    return executor


@pytest.mark.parametrize("ends", ["finished", "cancelled"])
def test_ctrl_c_cancels_the_tasks_in_flight_keeps_those_that_finish_and_starts_no_more(
    run_dir: RunDir, ends: str
) -> None:
    interrupted: list[str] = []

    def interrupt(result: TaskResult) -> None:
        if not interrupted:  # one Ctrl-C, landing in the driving thread as the first result is reported
            interrupted.append(result.task_id)
            raise KeyboardInterrupt

    executor = stopped_run(run_dir, "first", finishes, pytest.raises(KeyboardInterrupt), ends, Recorder(interrupt))
    assert executor.cancelled.is_set()
    assert executor.submitted == [("first", 1), ("long", 1)]  # the queue was dropped: "never" never started
    assert rows(run_dir) == (["first", "long"] if ends == "finished" else ["first"])


def test_a_configuration_error_stops_the_run_and_is_not_a_tasks_result(run_dir: RunDir) -> None:
    def misconfigured(item: WorkItem) -> TaskResult:
        raise ConfigError("no such model: nonesuch")

    executor = stopped_run(run_dir, "bad", misconfigured, pytest.raises(ConfigError, match="no such model: nonesuch"))
    assert executor.cancelled.is_set()
    assert executor.submitted == [("bad", 1), ("long", 1)]  # not retried, and nothing more started
    assert rows(run_dir) == ["long"]


def fails_to_write(path: Path) -> Work:
    """Work whose first attempt fails as a write to ``path`` on a full disk fails; a later one finishes."""

    def run(item: WorkItem) -> TaskResult:
        if item.attempt > 1:
            return result_of(item)
        try:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        except OSError as e:
            raise RuntimeError("the trajectory could not be saved") from e  # the disk error is found in the chain

    return run


def test_a_task_that_could_not_write_into_the_full_run_directory_stops_the_run(run_dir: RunDir) -> None:
    work = {"a": fails_to_write(run_dir.path / "tasks" / "a" / "trajectory.json"), "b": finishes}
    with FunctionExecutor(work) as executor, pytest.raises(RunDirWriteError) as stopped:
        dispatch(executor, items("a", "b"), run_dir, 2)
    reason = "no space left on device; the run stopped"
    assert str(stopped.value) == f"cannot write the run directory {run_dir.path}: {reason}"
    assert executor.cancelled.is_set()
    assert executor.submitted == [("a", 1)]
    assert rows(run_dir) == []


def test_a_full_disk_elsewhere_is_an_infrastructure_failure_and_is_retried(run_dir: RunDir, tmp_path: Path) -> None:
    """A disk that filled outside the run directory (a sandbox's) does not stop the run: its task runs again."""
    work = {"a": fails_to_write(tmp_path / "sandboxes" / "a" / "big.bin"), "b": finishes}
    with FunctionExecutor(work) as executor:
        dispatch(executor, items("a", "b"), run_dir, 1)
    assert executor.submitted == [("a", 1), ("b", 1), ("a", 2)]
    assert not executor.cancelled.is_set()
    (a,) = [r for r in run_dir.read_results() if r.task_id == "a"]
    saving = "RuntimeError: the trajectory could not be saved"
    assert (a.status, a.attempts, a.retry_errors) == ("completed", 2, [saving])


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A small real file system (tmpfs), empty; filled by the test. Mounting one needs root."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root")
    path = tmp_path / "disk"
    path.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(path)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    yield path
    subprocess.run(["umount", "-l", str(path)], check=False)


def large(item: WorkItem) -> TaskResult:
    """A result whose row is longer than the room a test leaves: its write can only be torn."""
    result = result_of(item)
    result.details = {"log": "x" * (64 << 10)}
    return result


@pytest.mark.parametrize("room", [0, 8192], ids=["no-room", "room-for-part-of-a-row"])
@pytest.mark.parametrize("reserve", [True, False], ids=["reserve", "no-reserve"])
def test_a_row_that_finds_the_disk_full_stops_the_run_and_no_row_is_torn(
    full_disk: Path, reserve: bool, room: int
) -> None:
    """With the reserve, the finishing row is written (the reserve given up for it) and so is the row of the task
    that still finishes once cancelled; without it, the long row is not kept, none is half-written (a short row
    that still fits after it starts on a clean line), and the run stops."""
    run_dir = RunDir(full_disk / "run")
    run_dir.create()
    if reserve:
        guard.keep_reserve(run_dir.path)
        assert (run_dir.path / guard.RESERVE_NAME).stat().st_size == guard.RESERVE_BYTES
    fill(full_disk, room)
    full = pytest.raises(RunDirWriteError, match="no space left on device; the run stopped")
    executor = stopped_run(run_dir, "first", large, full)
    assert executor.cancelled.is_set()
    assert executor.submitted == [("first", 1), ("long", 1)]
    kept = ["first", "long"] if reserve else ["long"] if room else []
    assert rows(run_dir) == kept
    written = run_dir.results_path.read_bytes() if run_dir.results_path.exists() else b""
    assert len(written.splitlines()) == len(kept) and written.endswith(b"\n" if kept else b"")  # whole rows only
