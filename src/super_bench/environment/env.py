"""The notebook environment: ``reset(task)``, ``step(action) -> Step``, ``close()``.

One sandbox and one Jupyter kernel per episode. Cells have a soft timeout: when it expires
the step returns what the cell printed so far and says it is still running; the agent may
``continue_wait`` or ``interrupt``, and any other action interrupts it first. A dead kernel is
replaced (``kernel.recovery``) and the observation says that all state was lost; what the agent is told
is in ``messages``. Every step is recorded in the
trajectory, and says whether it ended the episode: ``terminated`` (an end state of the task, as a
submission) or ``truncated`` (a budget ran out), with the stop reason. The environment holds every
budget (steps, execution time, wall time, prompt tokens, cost; agents report their model usage with
``add_usage`` and ask ``budget_left()``), and ``new_attempt`` starts the task again in a fresh notebook
with the token and cost budgets carried over. The raw output kept is capped per step and per
episode, so no cell can make the trajectory, or the harness, grow without bound.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, NamedTuple

from pydantic import ConfigDict, Field

from super_bench import messages
from super_bench._pydantic import Model
from super_bench.actions import MAX_CONTENT_DEPTH, Action, content_problem, parse_answer, valid_text, valid_texts
from super_bench.environment.budget import BudgetLeft
from super_bench.environment.edit import EditFailed, apply_edit, parse_edit
from super_bench.environment.kernel import (
    CellResult,
    NotebookKernel,
    Spilled,
    SpillFolder,
    cap_text,
    clean_and_cap,
    joined,
)
from super_bench.environment.kernel.recovery import Broken, KernelRecovery, limit_note
from super_bench.errors import EnvironmentClosedError, KernelError, SandboxError, SuperBenchError
from super_bench.sandbox import MAX_EDIT_BYTES, FileTooLargeError, Sandbox, SandboxConfig, create_sandbox
from super_bench.spilled import OutputFile, excerpt
from super_bench.tasks.model import Task
from super_bench.trajectory import (
    Figure,
    Step,
    StepOutcome,
    StopReason,
    Trajectory,
    Usage,
    ending,
    metadata_problem,
    utcnow,
)


class EnvConfig(Model):
    """Settings of the notebook environment."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cell_timeout: float = Field(300, gt=0, description="Soft timeout of one step, in seconds")
    max_steps: int | None = Field(100, ge=1, description="Agent steps before the episode is stopped")
    max_compute: float | None = Field(1800, gt=0, description="Seconds of execution before the episode is stopped")
    max_tokens: int | None = Field(
        None, ge=1, description="Prompt tokens of model calls per episode (default: 600k, or 400k for Masked tasks)"
    )
    max_cost: float | None = Field(None, gt=0, description="USD of model calls per episode (default: no limit)")
    pre_execute_timeout: float = Field(3600, gt=0, description="Limit for each pre-executed (Masked) cell")
    observation_limit: int = Field(100_000, ge=1000, description="Characters of output shown per step")
    output_limit: int = Field(128_000_000, ge=1000, description="Characters of raw output kept per step")
    episode_output_limit: int = Field(
        128_000_000,
        ge=1000,
        description="Characters of raw output (images included) kept per episode; once they are kept, each "
        "further step keeps a head and a tail of about observation_limit characters",
    )
    startup_timeout: float = Field(60, gt=0)
    interrupt_grace: float = Field(10, gt=0, description="Seconds an interrupted cell gets to stop")
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)


# The paper's prompt-token budgets per task set.
DEFAULT_MAX_TOKENS = {"expert": 600_000, "auto": 600_000, "masked": 400_000}


class Environment:
    """A stateful notebook for one task at a time."""

    def __init__(
        self,
        config: EnvConfig | None = None,
        *,
        sandbox_factory: Callable[[SandboxConfig, str], Sandbox] = create_sandbox,
        on_step: Callable[[Step], None] | None = None,
        record: Path | None = None,
    ) -> None:
        """``record``: the folder of the task's record (the run directory's task folder), where a step's output
        too long to hold in memory is written (``outputs/``, see ``spilled``); without one, every output is held
        in memory."""
        self.config = config or EnvConfig()
        self._sandbox_factory = sandbox_factory
        self._on_step = on_step
        self._spill = None if record is None else SpillFolder(record, self.config.sandbox.disk_limit)
        # Shown each piece of a running cell's output as it arrives, in the thread that steps (a terminal's
        # live view: ``super-bench play``); the step's observation is recorded as ever.
        self.on_output: Callable[[str], None] | None = None
        self._sandbox_now: Sandbox | None = None
        self._kernel_now: NotebookKernel | None = None
        self._task: Task | None = None  # as the agent is told it, in this attempt
        self._trajectory: Trajectory | None = None
        self._attempt = 0
        self._cell_started: datetime | None = None
        # Running totals of the agent's steps, so that the budget check after each step does not
        # walk the whole trajectory (which would make an episode quadratic in its length).
        self._agent_steps = 0
        self._execution_time = 0.0
        self._agent_acted = False
        self._output_kept = 0
        self._recovery: KernelRecovery | None = None  # this attempt's kernel's
        self._prepared: Task | None = None  # the task whose sandbox and kernel ``prepare`` started
        self._prepare_error: Exception | None = None

    # -- state ---------------------------------------------------------------------------------
    @property
    def task(self) -> Task:
        """The task, as the agent is told it in this attempt (see ``new_attempt``)."""
        if self._task is None:
            raise EnvironmentClosedError("call reset(task) first")
        return self._task

    @property
    def trajectory(self) -> Trajectory:
        if self._trajectory is None:
            raise EnvironmentClosedError("call reset(task) first")
        return self._trajectory

    @property
    def done(self) -> bool:
        return self._trajectory is not None and self._trajectory.stop_reason is not None

    @property
    def cwd(self) -> str:
        """The notebook's current directory, as agent code sees it: where ``%cd`` last moved the kernel,
        ``workdir`` until then (and again after a kernel restart). An edit's path is relative to it."""
        return self._kernel.cwd or self._sandbox.workdir

    @property
    def workdir(self) -> str:
        """The task's working directory, as agent code sees it: where the notebook starts."""
        return self._sandbox.workdir

    @property
    def attempt(self) -> int:
        """Which attempt at the task this is: 1 after ``reset``, one more after each ``new_attempt``."""
        return self._attempt

    # The sandbox and the kernel are the harness's, private: agents use AgentEnv's members (cwd, workdir, step, ...);
    # the harness's own checks (the conformance suite, tests) reach them here, the episode started.
    @property
    def _sandbox(self) -> Sandbox:
        if self._sandbox_now is None:
            raise EnvironmentClosedError("call reset(task) first")
        return self._sandbox_now

    @property
    def _kernel(self) -> NotebookKernel:
        if self._kernel_now is None:
            raise EnvironmentClosedError("call reset(task) first")
        return self._kernel_now

    # -- lifecycle -----------------------------------------------------------------------------
    def prepare(self, task: Task) -> None:
        """Start the sandbox and the kernel of ``task`` ahead of ``reset(task)`` (the runner does it while a core
        is idle): what an episode does before its first step that depends neither on the agent nor on the time.
        The wall clock is held until ``reset``, so the wait counts against no budget; the pre-executed cells run
        at ``reset``. A failure is kept, and raised by ``reset`` as if it had happened there."""
        self._shutdown()
        self._prepared, self._prepare_error = task, None
        try:
            self._start(task, clock=False)
        except Exception as e:
            self._shutdown()
            self._prepared, self._prepare_error = task, e

    def reset(self, task: Task, *, agent: str | None = None, model: str | None = None) -> str:
        """Start a fresh sandbox and kernel for ``task`` (or take those ``prepare`` started for it), run its
        pre-executed cells; returns the query."""
        if self._prepared is not task:
            self._shutdown()
        self._attempt = 1
        self._begin(task, Trajectory(task_id=task.task_id, query=task.query, agent=agent, model=model))
        return task.query

    def new_attempt(self, query: str | None = None) -> Trajectory:
        """End this attempt at the task and start another in a fresh sandbox and kernel (a Masked task's
        pre-executed cells run again); returns the finished attempt's trajectory.

        The new attempt's trajectory carries on the task's: the task's query, the agent, the model, the
        start time and the usage so far, so the token and cost budgets cover every attempt, while the
        step, execution-time and wall-time budgets start afresh. ``query``: what the agent is told in the
        new attempt (``task.query``), by default the task's own."""
        previous = self.trajectory
        self._shutdown()
        previous.finished_at = utcnow()
        task = self.task.model_copy(update={"query": previous.query if query is None else query})
        fresh = Trajectory(
            task_id=previous.task_id,
            query=previous.query,
            agent=previous.agent,
            model=previous.model,
            usage=previous.usage.model_copy(),
            started_at=previous.started_at,
        )
        self._attempt += 1
        self._begin(task, fresh)
        return previous

    def _begin(self, task: Task, trajectory: Trajectory) -> None:
        """Start an attempt: a new sandbox and kernel for ``task``, its pre-executed cells run."""
        self._task = task
        self._trajectory = trajectory
        self._agent_steps, self._execution_time = 0, 0.0
        self._agent_acted, self._output_kept, self._recovery = False, 0, None
        prepared, error = self._prepared is task, self._prepare_error
        self._prepared, self._prepare_error = None, None
        if not prepared:
            self._start(task)
        elif error is not None:
            raise error
        else:
            self._sandbox.start_clock()  # the task's time starts now, not when its sandbox was prepared
        self._recovery = KernelRecovery(self._kernel, self._sandbox, self.config.sandbox)
        for action in task.pre_execute_cells:
            self._emit(self._record(action, None, utcnow(), self._pre_execute(action), pre_executed=True))

    def _start(self, task: Task, *, clock: bool = True) -> None:
        """A new sandbox for ``task``, started, and its kernel; ``clock=False``: the wall clock held."""
        sandbox = self._sandbox_factory(self.config.sandbox, task.task_id)
        self._sandbox_now = sandbox
        if not clock:
            sandbox.hold_clock()
        sandbox.start()
        self._kernel_now = NotebookKernel(
            sandbox,
            max_output_chars=self.config.output_limit,
            startup_timeout=self.config.startup_timeout,
            interrupt_grace=self.config.interrupt_grace,
        )
        self._kernel_now.spill = self._spill
        self._kernel_now.start()

    def close(self) -> Trajectory | None:
        """Stop the kernel and sandbox; returns the finished trajectory (None if no episode began).
        Safe to call twice."""
        self._shutdown()
        trajectory = self._trajectory
        if trajectory is not None and trajectory.finished_at is None:
            trajectory.finished_at = utcnow()
        return trajectory

    def request_interrupt(self) -> None:
        """Interrupt the running cell, as Ctrl-C in Jupyter does: the step in flight returns the cell's
        output up to its ``KeyboardInterrupt``. Safe from a signal handler; does nothing between cells."""
        kernel = self._kernel_now
        if kernel is not None:
            kernel.request_interrupt()

    def kill_kernel(self) -> None:
        """Kill the kernel and everything it runs, at once. Safe from another thread, where it cuts short
        a step in flight; does nothing when no kernel runs."""
        kernel = self._kernel_now
        if kernel is not None:
            kernel.kill()

    def _shutdown(self) -> None:
        self._prepared = self._prepare_error = None
        if self._kernel_now is not None:
            if self._trajectory is not None:
                self._trajectory.kernel_restarts = self._kernel_now.restarts
            self._kernel_now.shutdown()
            self._kernel_now = None
        if self._sandbox_now is not None:
            self._sandbox_now.stop()
            self._sandbox_now = None

    @property
    def agent_acted(self) -> bool:
        """Whether the agent has begun an action in this episode (pre-executed cells are not its own)."""
        return self._agent_acted

    @property
    def max_tokens(self) -> int:
        """The prompt-token budget of this episode."""
        return self.config.max_tokens or DEFAULT_MAX_TOKENS[self.task.task_set]

    def add_usage(self, usage: Usage) -> None:
        """Count model usage against the episode's budgets (checked after each step, and by ``check_budgets``)."""
        self.trajectory.usage.add(usage)

    def budget_left(self) -> BudgetLeft:
        """What is left of each of the episode's budgets (None where one has no limit)."""
        config, usage, compute = self.config, self.trajectory.usage, self.config.max_compute
        return BudgetLeft(
            steps=None if config.max_steps is None else max(0, config.max_steps - self._agent_steps),
            execution_seconds=None if compute is None else max(0.0, compute - self._execution_time),
            wall_seconds=None if self._sandbox_now is None else self._sandbox_now.wall_time_left,
            prompt_tokens=max(0, self.max_tokens - usage.prompt_tokens),
            cost=None if config.max_cost is None else max(0.0, config.max_cost - usage.cost),
        )

    def resource_usage(self) -> tuple[int | None, int | None]:
        """Bytes of disk and of memory the task takes now, where its sandbox can tell (None where not, and
        before ``reset`` or after ``close``)."""
        sandbox = self._sandbox_now  # read once: the admission thread asks while the episode may be closing
        return (None, None) if sandbox is None else sandbox.usage()

    def stop(self, reason: StopReason) -> None:
        """End the episode for a reason decided outside the environment (an agent that gives up, say)."""
        if self.trajectory.stop_reason is None:
            self.trajectory.stop_reason = reason

    def __enter__(self) -> Environment:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- steps ---------------------------------------------------------------------------------
    def step(
        self, action: Action | dict[str, Any], thought: str | None = None, metadata: dict[str, Any] | None = None
    ) -> Step:
        """Perform one action and record it (with the agent's thought and any metadata it wants kept)."""
        if self._kernel_now is None or self.done:
            raise EnvironmentClosedError(
                "the episode is over" + (f" ({self.trajectory.stop_reason})" if self.done else "; call reset(task)")
            )
        action = Action.coerce(action)
        if action.type != "submit" and isinstance(action.content, str):
            # Code or an edit holding a lone surrogate (no text can): run and kept with U+FFFD in its place.
            action = action.model_copy(update={"content": valid_text(action.content)})
        if thought is not None and not isinstance(thought, str):
            raise SuperBenchError(f"a step's thought must be text, not {type(thought).__name__}")
        # A model's reply is text whatever it holds: a lone surrogate in the thought or the metadata (the raw
        # reply) is kept as U+FFFD, as in the code, and the episode goes on.
        thought, metadata = (None if thought is None else valid_text(thought)), valid_texts(metadata)
        problem = metadata_problem(metadata) if metadata else None
        if problem is not None:
            raise SuperBenchError(f"the step's metadata {problem}; it could not be kept in the trajectory")
        self._agent_acted = True
        start = utcnow()
        problem = (
            None if action.type == "submit" or isinstance(action.content, str) else content_problem(action.content)
        )
        if self._sandbox.ended:  # a limit passed while the agent was thinking: nothing more runs
            result = _Outcome(messages.not_performed(action.type, self._limit_note()), None, "invalid")
        elif problem is not None:
            result = _Outcome(
                messages.content_refused(action.type, problem),
                None,
                "invalid",
                action=_unkept(action, problem),
            )
        else:
            handler = {
                "execute": self._execute,
                "continue_wait": self._continue_wait,
                "interrupt": self._interrupt,
                "edit": self._edit,
                "submit": self._submit,
            }[action.type]
            try:
                result = handler(action)
            except (SandboxError, KernelError):
                if not self._sandbox.ended:
                    raise
                # The limit passed during the action (the sandbox refuses it, the kernel was killed): the
                # agent's budget ran out, which ends its episode; no infrastructure failed.
                note = messages.cut_short(action.type, self._limit_note())
                result = _Outcome(note, None, "kernel_died" if action.type != "edit" else "invalid")
        step = self._record(action, thought, start, result)
        if metadata:
            step.metadata.update(metadata)
        if self._broken is not None:
            self.stop(self._broken.stop_reason)
            self.trajectory.metadata["error"] = self._broken.error
        return self._end_step(step)

    def record_invalid(
        self,
        action: Action | dict[str, Any],
        observation: str,
        thought: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Step:
        """Record, without carrying it out, an action that was not a valid one (an unreadable reply in
        an imported trajectory, say): an ``invalid`` step that counts towards the step budget."""
        if self._kernel_now is None or self.done:
            raise EnvironmentClosedError(
                "the episode is over" + (f" ({self.trajectory.stop_reason})" if self.done else "; call reset(task)")
            )
        thought, metadata = (None if thought is None else valid_text(thought)), valid_texts(metadata)
        step = self._record(Action.coerce(action), thought, utcnow(), _Outcome(observation, None, "invalid"))
        if metadata:
            step.metadata.update(metadata)
        return self._end_step(step)

    def _end_step(self, step: Step) -> Step:
        """Check the budgets after an agent's step and mark the step with the end of the episode, if it came."""
        if self.check_budgets():
            reason = self.trajectory.stop_reason
            step.terminated, step.truncated = ending(reason)
            step.stop_reason = reason
        self._emit(step)
        return step

    def _emit(self, step: Step) -> None:
        if self._on_step is not None:
            self._on_step(step)

    def _record(
        self,
        action: Action,
        thought: str | None,
        start: datetime,
        result: _Outcome,
        *,
        pre_executed: bool = False,
    ) -> Step:
        trajectory = self.trajectory
        output, output_file = result.output, None
        if isinstance(output, Spilled) and self._spill is not None:
            # The whole output stays in its file; the step keeps its head and tail, as the model's are cut.
            output_file = OutputFile(name=self._spill.name(output), chars=output.chars)
            output = excerpt(self._spill.record, output_file, self.config.observation_limit)
        step = Step(
            index=len(trajectory.steps),
            thought=thought,
            action=result.action or action,
            observation=result.observation,
            output=None if output == result.observation and output_file is None else output,
            output_file=output_file,
            figures=list(result.figures),
            outcome=result.outcome,
            exit_code=result.exit_code,
            pre_executed=pre_executed,
            start_time=start,
            end_time=utcnow(),
        )
        if result.dropped:
            step.metadata["output_dropped"] = result.dropped
        if self._spill is not None and output_file is not None:
            step.kept_in(self._spill.record)
        trajectory.steps.append(step)
        if not pre_executed:
            self._agent_steps += 1
            self._execution_time += step.duration
        return step

    def check_budgets(self) -> bool:
        """End the episode if a budget is spent; returns whether the episode is over. Agents call it
        before a model call, so that no call is made once the tokens or money are spent."""
        trajectory = self.trajectory
        if trajectory.stop_reason is None:
            trajectory.stop_reason = self.budget_left().spent()
        if trajectory.stop_reason is None and self._sandbox_now is not None and self._sandbox_now.disk_limit_passed:
            trajectory.stop_reason = "max_disk"
        return trajectory.stop_reason is not None

    def _pre_execute(self, action: Action) -> _Outcome:
        if action.type == "edit":
            return self._edit(action)
        if action.type != "execute":
            return _Outcome(messages.pre_executed_skipped(action.type), None, "invalid")
        self._cell_started = utcnow()
        result = self._kernel_call(
            lambda: self._kernel.execute(str(action.content or ""), self.config.pre_execute_timeout)
        )
        notes = ""
        if result.state == "running":
            rest = self._kernel_call(self._kernel.interrupt)
            result = CellResult(
                joined(result.output, rest.output, self._spill),
                rest.state,
                rest.exit_code,
                rest.error_name,
                True,
                result.figures + rest.figures,
                result.dropped + rest.dropped,
            )
            notes = messages.pre_executed_cell_interrupted(self.config.pre_execute_timeout)
        return self._observe(result, notes)

    def _execute(self, action: Action) -> _Outcome:
        prefix = self._settle()
        if self._broken is not None:
            return _Outcome(prefix.rstrip("\n"), None, "kernel_died")
        self._cell_started = utcnow()
        result = self._kernel_call(lambda: self._kernel.execute(str(action.content or ""), self.config.cell_timeout))
        return self._observe(result, "", prefix)

    def _continue_wait(self, action: Action) -> _Outcome:
        if not self._kernel.running:
            return _Outcome(messages.NOTHING_TO_WAIT_FOR, None, "invalid")
        return self._observe(self._kernel_call(lambda: self._kernel.wait(self.config.cell_timeout)), "")

    def _interrupt(self, action: Action) -> _Outcome:
        if not self._kernel.running:
            return _Outcome(messages.NOTHING_TO_INTERRUPT, None, "invalid")
        return self._observe(self._kernel_call(self._kernel.interrupt), messages.CELL_INTERRUPTED)

    def _kernel_call(self, call: Callable[[], CellResult]) -> CellResult:
        """Run a cell, wait for it or interrupt it, keeping no more output than the episode has room for:
        the per-step limit while the episode's is not spent, then about what the agent is shown."""
        config = self.config
        left = config.episode_output_limit - self._output_kept
        self._kernel.set_output_limit(min(config.output_limit, max(left, config.observation_limit)))
        self._kernel.on_output = self.on_output
        result = call()
        self._output_kept += len(result.output) + sum(len(f.data) for f in result.figures)
        metadata = self.trajectory.metadata
        spent = self._output_kept >= config.episode_output_limit
        if (spent or (result.dropped and left < config.output_limit)) and "output_limit_reached" not in metadata:
            metadata["output_limit_reached"] = {
                "limit": config.episode_output_limit,
                "step": len(self.trajectory.steps),
            }
        return result

    @property
    def _broken(self) -> Broken | None:
        """Set when the agent's actions left a kernel that cannot be restarted (see ``kernel.recovery``)."""
        return None if self._recovery is None else self._recovery.broken

    def _settle(self) -> str:
        """Before a new action: interrupt a still-running cell, restart a dead kernel; returns a note."""
        if self._recovery is None:
            raise EnvironmentClosedError("call reset(task) first")
        return self._recovery.settle(agent_acted=self._agent_acted)

    def _observe(self, result: CellResult, notes: str, prefix: str = "") -> _Outcome:
        """Turn a cell result into what is recorded and shown."""
        outcome: StepOutcome
        if result.state == "running":
            outcome = "timeout"
            started = self._cell_started or utcnow()
            notes += messages.still_running((utcnow() - started).total_seconds())
        elif result.state == "died":
            outcome = "kernel_died"
            if self._recovery is None:
                raise EnvironmentClosedError("call reset(task) first")
            notes += self._recovery.replace_dead(agent_acted=self._agent_acted)
        elif result.interrupted:
            outcome = "interrupted"
        else:
            outcome = "error" if result.state == "error" else "ok"
        if self._sandbox.disk_full():
            notes += messages.disk_full(self.config.sandbox.disk_limit)
        output, dropped = result.output, result.dropped
        try:
            shown = clean_and_cap(output, self.config.observation_limit)
        except MemoryError:  # the output is let go, and the step ends with an error that says so
            if isinstance(output, Spilled):
                output.path.unlink(missing_ok=True)
            output = shown = messages.output_out_of_memory(len(output))
            dropped, outcome = dropped + len(result.output), "error" if outcome == "ok" else outcome
        observation = prefix + shown + notes
        return _Outcome(observation, output, outcome, result.exit_code, tuple(result.figures), dropped)

    def _limit_note(self) -> str:
        """What the agent is told once a limit has ended its task (``sandbox.ended``)."""
        return limit_note(self._sandbox, self.config.sandbox)

    def _edit(self, action: Action) -> _Outcome:
        notes = self._settle()
        if self._broken is not None:
            return _Outcome(notes.rstrip("\n"), None, "kernel_died")
        try:
            request = parse_edit(str(action.content or ""))
            cwd = self.cwd
            path = posixpath.join(cwd, request.path)
            message = ""

            def change(data: bytes) -> bytes:
                nonlocal message
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise EditFailed(messages.edit_unreadable(request.path, e)) from e
                edited, message = apply_edit(text, request)
                return edited.encode("utf-8")

            try:
                # What an edit reads is held by the harness, not the task: no more than a step's kept output.
                self._sandbox.edit_file(path, change, min(MAX_EDIT_BYTES, self.config.output_limit))
            except FileTooLargeError as e:
                raise EditFailed(messages.edit_too_large(request.path, e.limit)) from None
            except FileNotFoundError as e:
                raise EditFailed(messages.edit_no_such_file(request.path, cwd)) from e
            except OSError as e:
                raise EditFailed(messages.edit_failed(request.path, e)) from e
        except EditFailed as e:
            return _Outcome(notes + str(e), None, "invalid")
        except OSError as e:
            return _Outcome(notes + messages.edit_not_written(e), None, "invalid")
        return _Outcome(notes + message, None, "ok")

    def _submit(self, action: Action) -> _Outcome:
        try:
            answer = parse_answer(action.content)
        except ValueError as e:
            # The step keeps the agent's text (capped), or a description of a value JSON cannot hold.
            kept = (
                action.model_copy(
                    update={"content": valid_text(cap_text(action.content, self.config.observation_limit))}
                )
                if isinstance(action.content, str)
                else _unkept(action, str(e).removeprefix("the submission "))
            )
            return _Outcome(
                messages.nothing_submitted(e, MAX_CONTENT_DEPTH),
                None,
                "invalid",
                action=kept,
            )
        trajectory = self.trajectory
        trajectory.submission = answer
        trajectory.submitted = True
        trajectory.stop_reason = "submitted"
        return _Outcome("", None, "ok")


def _unkept(action: Action, problem: str) -> Action:
    """The action as recorded when its content cannot be kept: a note in its place."""
    return action.model_copy(update={"content": messages.not_kept(action.content, problem)})


class _Outcome(NamedTuple):
    """What an action handler produced."""

    observation: str
    output: str | Spilled | None
    outcome: StepOutcome
    exit_code: int | None = None
    figures: tuple[Figure, ...] = ()
    dropped: int = 0
    action: Action | None = None  # the action as recorded, where it differs from the one sent
