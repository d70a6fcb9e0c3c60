"""The ``ray`` executor: each task is a Ray task, on a cluster or on a local Ray instance.

A Ray task runs the episode in a scratch directory of its worker and returns the result with
the task's files (``trajectory.json`` and ``.ipynb``); the driver writes them into the run
directory as they arrive. So workers need no shared storage, and a run on Ray resumes exactly
like a local one. Ray does not retry tasks itself: infrastructure failures, a worker's crash
included, are retried by the driver (``--infra-retries``), the same way for every executor.
"""

from __future__ import annotations

import logging
import os
import shutil
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

import ray
import ray.exceptions

from super_bench.agents import AgentOptions
from super_bench.environment import EnvConfig
from super_bench.errors import ConfigError
from super_bench.runner.episode import Cancelled, run_episode
from super_bench.runner.executors import EpisodeSpec, Executor, WorkItem
from super_bench.runner.results import TaskResult
from super_bench.sandbox import private_temp
from super_bench.sandbox.supply import release_git_config_dir
from super_bench.scoring import ScoreMode
from super_bench.tasks.model import Task

if TYPE_CHECKING:
    from super_bench.runner.config import RunConfig

log = logging.getLogger(__name__)


def episode_on_worker(
    task: Task, agent: str, options: AgentOptions, env: EnvConfig, mode: ScoreMode, epoch: int
) -> tuple[TaskResult, dict[str, bytes]]:
    """Runs on a Ray worker: the episode in a scratch directory, then its files as bytes."""
    # Named after the worker process: a worker killed mid-task leaves it to the next episode on the node to remove.
    scratch = private_temp("ray")
    try:
        task_dir = scratch / "task"
        result = run_episode(task, agent, options, env, task_dir, run_dir=scratch, mode=mode, epoch=epoch)
        files = {p.name: p.read_bytes() for p in task_dir.iterdir() if p.is_file()}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        # Ray ends its workers with no atexit run: nothing of the task's is left in the worker's temporary folder.
        release_git_config_dir()
    # Nodes of one machine share its host name: the Ray node's id tells them apart.
    result.node = f"{result.node}/{ray.get_runtime_context().get_node_id()}"
    return result, files


class RayExecutor(Executor):
    def __init__(self, spec: EpisodeSpec, config: RunConfig) -> None:
        self.spec = spec
        options = config.execution.ray
        # A Ray session the caller started (ray.init in their program) is used and left running.
        self._owns_session = not ray.is_initialized()
        if self._owns_session:
            try:
                ray.init(address=options.address, include_dashboard=False, log_to_driver=False)
            except (OSError, ValueError, RuntimeError, ray.exceptions.AuthenticationError) as e:  # OSError: sockets
                where = options.address or "a new local instance"
                hint = ""
                if options.address is not None and os.environ.get("RAY_AUTH_MODE", "").lower() != "token":
                    hint = (
                        "; if the cluster uses token authentication (the default of `ray start --head`), set "
                        "RAY_AUTH_MODE=token and give its token here too (~/.ray/auth_token, or RAY_AUTH_TOKEN): "
                        "see docs/runner.md#clusters-with-token-authentication"
                    )
                raise ConfigError(f"cannot start Ray on {where}: {e}{hint}") from e
        resources: dict[str, Any] = {"num_cpus": options.cpus, "num_gpus": options.gpus, "max_retries": 0}
        if options.memory_gb is not None:
            resources["memory"] = int(options.memory_gb * 1024**3)
        self._remote = ray.remote(episode_on_worker).options(**resources)
        cluster_cpus = ray.cluster_resources().get("CPU", 1.0)
        self._capacity = config.execution.workers or max(1, int(cluster_cpus // max(options.cpus, 1e-3)))
        self._refs: dict[Future[Any], ray.ObjectRef[Any]] = {}

    @property
    def capacity(self) -> int:
        return self._capacity

    def submit(self, item: WorkItem) -> Future[Any]:
        spec = self.spec
        ref = self._remote.remote(item.task, spec.agent, spec.options_for(item), spec.env, spec.mode, item.epoch)
        future: Future[Any] = ref.future()
        self._refs[future] = ref
        return future

    def result(self, future: Future[Any], item: WorkItem) -> TaskResult:
        self._refs.pop(future, None)
        result: TaskResult
        files: dict[str, bytes]
        try:
            result, files = future.result()
        except ray.exceptions.TaskCancelledError as e:
            raise Cancelled from e
        except ray.exceptions.RayTaskError as e:
            # The episode's own exception (a ConfigError, say), raised on the worker.
            cause = e.cause if isinstance(e.cause, BaseException) else e
            raise cause from None
        task_dir = self.spec.task_dir(item)
        if task_dir.exists():
            shutil.rmtree(task_dir)
        task_dir.mkdir(parents=True)
        for name, data in files.items():
            (task_dir / name).write_bytes(data)
        result.trajectory = str((task_dir / "trajectory.json").relative_to(self.spec.run_dir))
        return result

    def cancel(self) -> None:
        # Not forced: the task gets a KeyboardInterrupt, and stops its sandbox on the way out.
        for ref in self._refs.values():
            ray.cancel(ref)

    def close(self) -> None:
        if self._owns_session:
            ray.shutdown()
