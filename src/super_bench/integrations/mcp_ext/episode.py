"""An episode whose agent is an MCP client: each tool call is one action, performed in the runner's episode.

The episode is ``runner.episode.run_episode`` on a thread of its own, with a ``ClientAgent``: the agent's
``run`` waits for the client's actions and performs them in order, so the environment, the trajectory, the
notebook, the scoring and the results row are exactly those of any agent's episode. The client's side
(``Episode.act``) hands an action over and waits for its step.
"""

from __future__ import annotations

import queue
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from super_bench import messages
from super_bench.actions import Action
from super_bench.errors import SuperBenchError
from super_bench.runner.episode import run_episode
from super_bench.trajectory import Step, StopReason

if TYPE_CHECKING:
    from collections.abc import Callable

    from super_bench.agents import AgentOptions
    from super_bench.environment import AgentEnv, EnvConfig
    from super_bench.runner.results import TaskResult
    from super_bench.scoring import ScoreMode
    from super_bench.tasks.model import Task


class ToolCallError(SuperBenchError):
    """A tool call the episode cannot carry out (out of order, after the end): its message is the client's."""


@dataclass
class _Call:
    action: Action
    thought: str | None
    reply: Future[Step]


@dataclass
class _End:
    reason: StopReason
    why: str


class ClientAgent:
    """The agent of an MCP client: ``run`` (the episode's thread) performs the actions the client's tool calls
    hand over with ``act`` (the server's threads), one at a time, until the episode is over or ``end`` is called
    (the client left, went idle, or the server stops)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.started: Future[list[Step]] = Future()  # the pre-executed cells, once the task is ready
        self.last_active = time.monotonic()
        self.busy = False
        self._calls: queue.Queue[_Call | _End] = queue.Queue()
        self._lock = threading.Lock()
        self._over: str | None = None  # why no more actions are taken, once they are not

    def run(self, env: AgentEnv) -> None:
        self.started.set_result([step for step in env.trajectory.steps if step.pre_executed])
        while not env.done:
            call = self._calls.get()
            if isinstance(call, _End):
                env.trajectory.metadata["stopped_because"] = call.why
                env.stop(call.reason)
                return
            try:
                step = env.step(call.action, call.thought)
            except BaseException as e:
                call.reply.set_exception(e)
                raise
            if env.done:  # before the reply, so the client's next call finds the episode over
                with self._lock:
                    self._over = f"the episode is over ({env.trajectory.stop_reason}); start_task starts another task"
            call.reply.set_result(step)

    @property
    def done(self) -> bool:
        return self._over is not None

    def act(self, action: Action, thought: str | None = None) -> str:
        """Perform ``action`` (blocks for the step); what the client is shown: the observation the environment
        cleaned and capped, as any agent sees it."""
        reply: Future[Step] = Future()
        with self._lock:
            if self._over is not None:
                raise ToolCallError(self._over)
            self.busy = True
            self._calls.put(_Call(action, thought, reply))
        try:
            step = reply.result()
        except ToolCallError:
            raise
        except Exception as e:  # the sandbox or kernel failed: the episode records it as the runner's episodes do
            raise ToolCallError(f"the step failed ({type(e).__name__}: {e}); the task is over") from e
        finally:
            self.busy, self.last_active = False, time.monotonic()
        if step.outcome == "invalid":
            raise ToolCallError(step.observation)
        text = step.observation or "(no output)"
        if step.stop_reason not in (None, "submitted"):
            text += messages.episode_over(step.stop_reason)
        return text

    def end(self, reason: StopReason, why: str) -> None:
        """End the episode without a submission; a step in flight finishes first. Returns at once."""
        with self._lock:
            if self._over is None:
                self._over = f"the episode was ended: {why}"
                self._calls.put(_End(reason, why))

    def close(self, problem: str) -> None:
        """The episode is over: every call from now on, and any still waiting, is answered with ``problem``."""
        with self._lock:
            self._over = problem
        if not self.started.done():
            self.started.set_exception(ToolCallError(problem))
        while True:
            try:
                call = self._calls.get_nowait()
            except queue.Empty:
                return
            if isinstance(call, _Call) and not call.reply.done():
                call.reply.set_exception(ToolCallError(problem))

    def idle_for(self) -> float:
        return 0.0 if self.busy else time.monotonic() - self.last_active


class Episode:
    """One task for one MCP client, run as a runner episode on its own thread. ``on_result`` gets the
    results row (from that thread) once the trajectory and notebook are written."""

    def __init__(
        self,
        task: Task,
        agent_name: str,
        options: AgentOptions,
        env_config: EnvConfig,
        task_dir: Path,
        *,
        run_dir: Path,
        mode: ScoreMode,
        epoch: int,
        on_result: Callable[[TaskResult], None],
    ) -> None:
        self.task = task
        self.epoch = epoch
        self.agent = ClientAgent(agent_name)
        self.result: Future[TaskResult] = Future()
        self._run_args = (task, agent_name, options, env_config, task_dir, run_dir, mode, epoch)
        self._on_result = on_result
        self._thread = threading.Thread(target=self._run, name=f"mcp-{task.task_id}", daemon=True)

    def start(self) -> list[Step]:
        """Start the sandbox and kernel (and run a Masked task's pre-executed cells); blocks until ready."""
        self._thread.start()
        try:
            return self.agent.started.result()
        except ToolCallError:
            raise
        except BaseException as e:
            raise ToolCallError(f"the task could not be started: {e}") from e

    @property
    def started(self) -> bool:
        return self._thread.ident is not None

    @property
    def running(self) -> bool:
        """Its sandbox is up, or being started or stopped."""
        return self._thread.is_alive()

    def wait(self) -> None:
        """Until the result is written (or the episode failed)."""
        self._thread.join()

    def _run(self) -> None:
        task, name, options, env_config, task_dir, run_dir, mode, epoch = self._run_args
        try:
            result = run_episode(
                task, name, options, env_config, task_dir, run_dir=run_dir, mode=mode, epoch=epoch, agent=self.agent
            )
        except BaseException as e:
            self.agent.close(f"the episode failed: {type(e).__name__}: {e}")
            self.result.set_exception(e)
            raise
        reason = result.stop_reason or result.status
        why = f": {result.error}" if result.error and result.status != "completed" else ""
        self.agent.close(f"the episode is over ({reason}{why}); start_task starts another task")
        try:
            self._on_result(result)
        finally:
            self.result.set_result(result)
