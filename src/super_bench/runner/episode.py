"""One task, start to finish: sandbox, agent, trajectory, score. Never raises for a task's
failure; a failure becomes the result's status and stop reason, as ``failures.classify_failure``
decides (the agent's failures are scored; ``infra_error`` is retried and left out). A
configuration error (a rejected API key, an unknown model) is not the task's failure: it
stops the run, and the task is run again when the run is resumed. Neither is a cancelled
run: the episode raises ``Cancelled`` and the task is left unfinished."""

from __future__ import annotations

import logging
import shutil
import socket
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from super_bench._files import open_append
from super_bench._names import TaskStatus
from super_bench.actions import Action
from super_bench.agents import Agent, AgentOptions, create_agent
from super_bench.environment import EnvConfig, Environment
from super_bench.environment.failures import Failure, classify_failure
from super_bench.errors import ConfigError, RunDirWriteError, UnscorableError
from super_bench.notebook import save_notebook
from super_bench.runner.admission import ADMISSION, Need, Slot
from super_bench.runner.guard import disk_error, write_error
from super_bench.runner.results import TaskResult
from super_bench.scoring import Metrics, ScoreDetails, ScoreMode, note_provenance, score_trajectory
from super_bench.tasks.model import Task
from super_bench.trajectory import Step, Trajectory, write_step_line

log = logging.getLogger(__name__)


class Cancelled(BaseException):  # a BaseException, like KeyboardInterrupt: no task failure to catch
    """The run is being stopped: the episode ends without a result, and the task reruns on resume."""


class Cancellation:
    """Stops the episodes of a run from another thread (the one that caught Ctrl-C).

    Their kernels are killed, so a running cell ends at once; each episode then raises
    ``Cancelled`` at its next step instead of going on."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._envs: set[Environment] = set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        if self._event.is_set():
            raise Cancelled

    def cancel(self) -> None:
        self._event.set()
        with self._lock:
            envs = list(self._envs)
        for env in envs:
            env.kill_kernel()  # between kernels it does nothing: the next step raises Cancelled

    def watch(self, env: Environment) -> None:
        with self._lock:
            self._envs.add(env)

    def forget(self, env: Environment) -> None:
        with self._lock:
            self._envs.discard(env)


class _CancellableEnvironment(Environment):
    """Checks for cancellation before and after every step (pre-executed cells included)."""

    def __init__(
        self, config: EnvConfig, cancellation: Cancellation, on_step: Callable[[Step], None], record: Path
    ) -> None:
        def logged(step: Step) -> None:
            on_step(step)
            cancellation.check()

        super().__init__(config, on_step=logged, record=record)
        self._cancellation = cancellation

    def step(self, action: Action | dict[str, Any], thought: str | None = None, metadata: Any = None) -> Step:
        self._cancellation.check()
        return super().step(action, thought=thought, metadata=metadata)


class _StepLog:
    """Appends each step to ``steps.jsonl`` as it happens, so a crash keeps the steps so far."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: BinaryIO | None = None

    def __call__(self, step: Step) -> None:
        try:
            if self._file is None:
                self._file = open_append(self.path)
            write_step_line(self._file, step)
            self._file.flush()
        except OSError as e:
            if (full := disk_error(e)) is None:
                raise
            # The run directory is full: the run stops (the agent is not to blame for it).
            raise write_error(self.path.parent, full) from e

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _play(
    env: Environment,
    task: Task,
    agent_spec: str,
    options: AgentOptions,
    given: Agent | None = None,
    cancellation: Cancellation | None = None,
) -> tuple[Failure | None, str | None]:
    """The agent's episode on ``task`` (by ``given``, else made from ``agent_spec``); a failure comes back
    classified, with its message. A failure the run's own stop caused (its kernel killed by the ``cancellation``)
    is no failure: the episode ends ``Cancelled``."""
    try:
        agent = given if given is not None else create_agent(agent_spec, options)
        env.reset(task, agent=agent.name, model=options.model)
        agent.run(env)
        if not env.done:
            env.stop("agent_stopped")
    except (ConfigError, RunDirWriteError):
        raise  # a bad key, model name or setting, or a full run directory, would fail every task alike: stop the run
    except Exception as e:
        if cancellation is not None:
            cancellation.check()  # the stop killed the kernel: not the infrastructure's failure, nor reported as one
        failure = classify_failure(e, agent_acted=env.agent_acted)
        if failure.status == "agent_error":
            log.warning("task %s: the agent failed: %s: %s", task.task_id, type(e).__name__, e)
            return failure, "".join(traceback.format_exception(e)).strip()
        error = f"{type(e).__name__}: {e}"
        log.warning("task %s: %s: %s", task.task_id, failure.stop_reason.replace("_", " "), error)
        return failure, error
    return None, None


def _environment(
    env_config: EnvConfig, cancellation: Cancellation | None, step_log: _StepLog, task_dir: Path
) -> Environment:
    # The task's folder is its record: an output too long to hold goes to a file there (outputs/), kept with the
    # trajectory that names it.
    if cancellation is None:
        return Environment(env_config, on_step=step_log, record=task_dir)
    env = _CancellableEnvironment(env_config, cancellation, step_log, task_dir)
    cancellation.watch(env)
    return env


@dataclass(eq=False)
class Prepared:
    """A task's environment, not yet reset, and its hold on the machine's room (``runner.admission``): made as
    the episode begins, or ahead of it (``prepare_episode``)."""

    task: Task
    env: Environment
    step_log: _StepLog
    slot: Slot
    cancellation: Cancellation | None

    @classmethod
    def open(
        cls, task: Task, env_config: EnvConfig, task_dir: Path, cancellation: Cancellation | None, slot: Slot
    ) -> Prepared:
        step_log = _StepLog(task_dir / "steps.jsonl")  # opened at the first step, once the episode has begun
        env = _environment(env_config, cancellation, step_log, task_dir)
        slot.usage = env.resource_usage
        return cls(task, env, step_log, slot, cancellation)

    def discard(self) -> None:
        """Stop its kernel and sandbox and give back its room: nothing of it is left."""
        try:
            self.env.close()
        finally:
            self.step_log.close()
            if self.cancellation is not None:
                self.cancellation.forget(self.env)
            ADMISSION.release(self.slot)


def _room(env_config: EnvConfig) -> tuple[Need, Path]:
    sandbox = env_config.sandbox
    return Need.of(sandbox.disk_limit, sandbox.memory_limit), sandbox.root or Path(tempfile.gettempdir())


def prepare_episode(
    task: Task, env_config: EnvConfig, task_dir: Path, cancellation: Cancellation | None = None
) -> Prepared | None:
    """Start ``task``'s sandbox and kernel ahead of its episode (``Environment.prepare``: the wall clock held, a
    failure kept for the episode to meet as it begins); None when the machine has no room for the task now.
    Give it to ``run_episode``, or ``discard`` it."""
    slot = ADMISSION.reserve(*_room(env_config))
    if slot is None:
        return None
    prepared = Prepared.open(task, env_config, task_dir, cancellation, slot)
    try:
        prepared.env.prepare(task)
    except BaseException:
        prepared.discard()
        raise
    return prepared


def run_episode(
    task: Task,
    agent_spec: str,
    agent_options: AgentOptions,
    env_config: EnvConfig,
    task_dir: Path,
    *,
    run_dir: Path | None = None,
    mode: ScoreMode = "corrected",
    epoch: int = 1,
    cancellation: Cancellation | None = None,
    prepared: Prepared | None = None,
    agent: Agent | None = None,
) -> TaskResult:
    """Run ``task`` with a fresh agent and environment; save its trajectory in ``task_dir``.

    ``agent``: one already made (an MCP client's proxy, ``mcp_ext``), instead of one made from ``agent_spec``.

    It starts once this machine has the free disk and memory the task needs (``runner.admission``), or at once
    in the environment ``prepared`` for it ahead (``prepare_episode``), which holds that room already.
    Whatever ``task_dir`` held before (the remains of an interrupted attempt) is removed first."""
    if prepared is not None and prepared.task is not task:
        prepared.discard()
        prepared = None
    if prepared is None:
        need, where = _room(env_config)
        check = cancellation.check if cancellation is not None else _never
        with ADMISSION.room(need, where, check) as slot:
            _clear(task_dir)
            started = Prepared.open(task, env_config, task_dir, cancellation, slot)
            result = _episode(task, agent_spec, agent_options, task_dir, run_dir, mode, epoch, started, agent)
        result.waited = slot.waited
        return result
    try:
        _clear(task_dir)
    except BaseException:
        prepared.discard()
        raise
    try:
        return _episode(task, agent_spec, agent_options, task_dir, run_dir, mode, epoch, prepared, agent)
    finally:
        ADMISSION.release(prepared.slot)


def _clear(task_dir: Path) -> None:
    if task_dir.is_symlink() or (task_dir.exists() and not task_dir.is_dir()):
        task_dir.unlink()  # a link planted in a run directory is removed, never written through
    elif task_dir.exists():
        shutil.rmtree(task_dir)
    task_dir.mkdir(parents=True)


def _never() -> None:
    pass


def _episode(
    task: Task,
    agent_spec: str,
    agent_options: AgentOptions,
    task_dir: Path,
    run_dir: Path | None,
    mode: ScoreMode,
    epoch: int,
    started: Prepared,
    agent: Agent | None = None,
) -> TaskResult:
    """The episode in ``started``'s environment, which it closes."""
    env, step_log, cancellation = started.env, started.step_log, started.cancellation
    wall_start = time.monotonic()
    failure: Failure | None = None
    error: str | None = None
    trajectory: Trajectory | None = None
    try:
        failure, error = _play(env, task, agent_spec, agent_options, agent, cancellation)
    finally:
        trajectory = env.close()
        step_log.close()
        if cancellation is not None:
            cancellation.forget(env)
    if cancellation is not None:
        cancellation.check()  # a failure caused by the cancellation (a killed kernel) is no result
    if trajectory is None:  # failed before the episode began
        trajectory = Trajectory(task_id=task.task_id, query=task.query, agent=agent_spec, model=agent_options.model)
    if epoch > 1:
        trajectory.metadata["epoch"] = epoch
    unkept = trajectory.drop_unkeepable()
    if unkept and failure is None:
        failure = Failure("agent_error", "agent_error")
        error = "the agent put values into the trajectory that cannot be kept as JSON: " + "; ".join(unkept)
    status: TaskStatus = "completed"
    if failure is not None:
        status = failure.status
        trajectory.stop_reason = trajectory.stop_reason or failure.stop_reason
        trajectory.metadata["error"] = error
    # An episode the environment ended itself on the agent's account (environment_broken) says why there.
    error = error or trajectory.metadata.get("error")
    trajectory.finished_at = trajectory.finished_at or trajectory.started_at
    note_provenance(trajectory)
    path = trajectory.save(task_dir)
    save_notebook(trajectory, task_dir)
    (task_dir / "steps.jsonl").unlink(missing_ok=True)
    unscored = None
    try:
        metrics, details = score_trajectory(trajectory, task, mode)
    except UnscorableError as e:  # the row says why; the run goes on
        metrics, details, unscored = Metrics(submitted=float(trajectory.submitted)), ScoreDetails(), str(e)
    return TaskResult.from_trajectory(
        trajectory,
        task.task_set,
        task_id=task.task_id,
        epoch=epoch,
        seed=agent_options.seed,
        status=status,
        metrics=metrics,
        mode=mode,
        wall_time=time.monotonic() - wall_start,
        error=error,
        trajectory=str(path.relative_to(run_dir)) if run_dir else str(path),
        details=details.model_dump(),
        node=socket.gethostname(),
        answer_provenance=details.answer_provenance,
        unscored=unscored,
    ).diagnosed(trajectory)
