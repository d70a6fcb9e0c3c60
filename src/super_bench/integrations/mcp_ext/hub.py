"""The episodes of ``super-bench mcp``: one task at a time per MCP session, a limit on sessions at once, idle
and disconnected clients ended, and every episode written into one run directory as the runner writes it.

A session's episode ends with its submission or a budget (the environment decides), when its client
disconnects or stays idle longer than the idle timeout (``agent_stopped``, the reason kept in the
trajectory's metadata), or when the server stops (``cancelled``). Each ending writes the trajectory, the
notebook and a results row: nothing a client did is lost.
"""

from __future__ import annotations

import logging
import threading

import anyio
from anyio import to_thread

from super_bench._names import TaskSet
from super_bench.errors import SuperBenchError
from super_bench.integrations.mcp_ext.episode import ClientAgent, Episode, ToolCallError
from super_bench.runner.config import RunConfig
from super_bench.runner.manifest import build_manifest, check_same_run, identity
from super_bench.runner.records import RunManifest
from super_bench.runner.results import TaskResult, summarize
from super_bench.runner.run import record_tasks
from super_bench.runner.rundir import RunDir
from super_bench.sandbox import scratch_dir
from super_bench.tasks.loaders import find_task
from super_bench.tasks.model import Task
from super_bench.trajectory import Step, StopReason

log = logging.getLogger(__name__)


class RunHub:
    """Sessions' episodes, written into ``run_dir`` (which the caller holds locked) as run ``config``."""

    offers_start = True

    def __init__(
        self,
        config: RunConfig,
        run_dir: RunDir,
        *,
        sources: tuple[str, ...],
        max_sessions: int,
        idle_timeout: float,
        agent_name: str | None = None,
    ) -> None:
        self.config = config
        self.run_dir = run_dir
        self.sources = sources
        self.max_sessions = max_sessions
        self.idle_timeout = idle_timeout
        self.agent_name = agent_name
        self.episodes: dict[str, Episode] = {}
        self._starting = 0
        self._lock = threading.Lock()  # the run directory's files and the results
        self._results: list[TaskResult] = []
        self._tasks: dict[str, Task] = {}
        self._previous: RunManifest | None = None
        self._env = config.env.model_copy(
            update={
                "sandbox": config.env.sandbox.model_copy(
                    update={"root": scratch_dir(run_dir.path, config.env.sandbox.root)}
                )
            }
        )

    def open(self) -> None:
        """Write the manifest; a directory that holds another run is refused, one of the same run is added to."""
        self.run_dir.create()
        self._previous = self.run_dir.read_manifest()
        check_same_run(self.run_dir.path, self._previous, identity(self.config))
        self._results = self.run_dir.read_results()
        self._record_tasks()

    def _record_tasks(self) -> None:
        """The tasks started (added to those of earlier servers on this run), and the manifest that digests them."""
        record_tasks(self.run_dir, list(self._tasks.values()))
        self.run_dir.write_manifest(build_manifest(self.config, self.run_dir, self._previous))

    # -- the tools' side ---------------------------------------------------------------------------------
    @property
    def live(self) -> int:
        return self._starting + sum(e.running for e in self.episodes.values())

    async def start_task(
        self, key: str, client: str | None, task_id: str, task_set: TaskSet | None, source: str | None
    ) -> tuple[Task, list[Step]]:
        current = self.episodes.get(key)
        if current is not None:
            if not current.agent.done:
                raise ToolCallError(
                    f"task {current.task.task_id} is still running in this session: finish it with submit_answer "
                    "before starting another"
                )
            await to_thread.run_sync(current.wait)  # its sandbox stopped and its result written
        for finishing in [e for e in self.episodes.values() if e.agent.done and e.running]:
            if self.live < self.max_sessions:
                break
            await to_thread.run_sync(finishing.wait)  # over, its sandbox being stopped: its room is free in a moment
        if self.live >= self.max_sessions:
            raise ToolCallError(
                f"the server runs at most {self.max_sessions} task(s) at once and all are in use; retry when one ends"
            )
        self._starting += 1
        try:
            episode = await to_thread.run_sync(self._episode, client, task_id, task_set, source)
            self.episodes[key] = episode
        finally:
            self._starting -= 1
        pre_executed = await to_thread.run_sync(episode.start, abandon_on_cancel=True)
        log.info("session %s: started task %s (epoch %d)", key, episode.task.task_id, episode.epoch)
        return episode.task, pre_executed

    def agent(self, key: str) -> tuple[Task, list[Step], ClientAgent]:
        episode = self.episodes.get(key)
        if episode is None:
            raise ToolCallError("no task is running in this session: call start_task first")
        started = episode.agent.started
        pre_executed = started.result() if started.done() and started.exception() is None else []
        return episode.task, pre_executed, episode.agent

    # -- episodes -----------------------------------------------------------------------------------------
    def _episode(self, client: str | None, task_id: str, task_set: TaskSet | None, source: str | None) -> Episode:
        source = source or self.sources[0]
        if source not in self.sources:
            raise ToolCallError(f"source {source!r} is not offered here; this server offers: {', '.join(self.sources)}")
        try:
            task = find_task(task_id, source, task_set)
        except SuperBenchError as e:
            raise ToolCallError(str(e)) from None
        name = self.agent_name or f"mcp:{client or 'client'}"
        with self._lock:
            epoch = self._next_epoch(task.task_id)
            self._tasks[task.task_id] = task
            self._record_tasks()
        return Episode(
            task,
            name,
            self.config.agent_options(),
            self._env,
            self.run_dir.task_dir(task.task_id, epoch),
            run_dir=self.run_dir.path,
            mode=self.config.mode,
            epoch=epoch,
            on_result=self._write,
        )

    def _next_epoch(self, task_id: str) -> int:
        """The first epoch of the task that no finished or running episode has."""
        taken = {r.epoch for r in self._results if r.task_id == task_id}
        taken |= {e.epoch for e in self.episodes.values() if e.task.task_id == task_id}
        epoch = 1
        while epoch in taken:
            epoch += 1
        return epoch

    def _write(self, result: TaskResult) -> None:
        with self._lock:
            self.run_dir.append_result(result)
            self._results.append(result)
            self.run_dir.write_summary(summarize(self.run_dir.read_results(), self.config.mode))
        log.info("task %s: %s (%s)", result.task_id, result.status, result.stop_reason)

    # -- endings ------------------------------------------------------------------------------------------
    def end(self, key: str, reason: StopReason, why: str) -> Episode | None:
        """End the session's episode, if one runs; the result is written by its thread."""
        episode = self.episodes.get(key)
        if episode is not None:
            episode.agent.end(reason, why)
        return episode

    def end_quietly(self, key: str, reason: StopReason, why: str) -> None:
        self.end(key, reason, why)

    async def reap_forever(self) -> None:
        """End the episodes whose client has sent nothing for longer than the idle timeout, and forget those
        written that long ago."""
        period = max(0.05, min(self.idle_timeout / 4, 30.0))
        while True:
            await anyio.sleep(period)
            for key, episode in list(self.episodes.items()):
                if episode.agent.idle_for() <= self.idle_timeout:
                    continue
                if not episode.agent.done:
                    self.end(key, "agent_stopped", f"the client sent nothing for {self.idle_timeout:g} s")
                elif not episode.running:
                    del self.episodes[key]  # written long ago, its session gone quiet: nothing of it is kept

    def close_all_now(self, reason: StopReason, why: str) -> None:
        """End every episode and wait until each one's result is written (from outside the event loop)."""
        episodes = [self.end(key, reason, why) for key in list(self.episodes)]
        for episode in episodes:
            if episode is not None and episode.started:
                episode.wait()
