"""One super-bench environment per Inspect sample: opened by the task's setup, used by the tools,
read by the scorers, closed by the task's cleanup.

The environment itself cannot live in Inspect's per-sample store (that holds JSON and is logged),
so the store holds a key and this module the open environments.
"""

from __future__ import annotations

import threading

import anyio
from anyio import to_thread
from inspect_ai.solver import TaskState
from inspect_ai.tool import ToolError
from inspect_ai.util import store

from super_bench.actions import Action
from super_bench.environment import EnvConfig, Environment
from super_bench.errors import EnvironmentClosedError
from super_bench.tasks.model import Task
from super_bench.trajectory import Step, Trajectory

TASK_KEY = "super_bench_task"  # in each sample's metadata: the task, as JSON
_STORE_KEY = "super_bench_notebook"
_OPEN: dict[str, Notebook] = {}


class Notebook:
    """A sample's environment, stepped from async code one action at a time."""

    def __init__(self, env: Environment) -> None:
        self.env = env
        # Held by the worker thread for the whole call: a cancelled tool call cannot let another in early.
        self._lock = threading.Lock()

    async def step(self, action: Action) -> Step:
        return await to_thread.run_sync(self._step, action)

    def _step(self, action: Action) -> Step:
        with self._lock:
            if self.env.done:
                raise ToolError(f"The episode is over ({self.env.trajectory.stop_reason}); no more actions are taken.")
            return self.env.step(action)


def sample_task(state: TaskState) -> Task:
    return Task.model_validate(state.metadata[TASK_KEY])


async def open_notebook(state: TaskState, config: EnvConfig) -> Notebook:
    """Start the sample's sandbox and kernel and run the task's pre-executed cells."""
    env = Environment(config)
    notebook = Notebook(env)
    _OPEN[state.uuid] = notebook  # registered first, so the cleanup stops it even if the start fails
    state.store.set(_STORE_KEY, state.uuid)
    await to_thread.run_sync(lambda: env.reset(sample_task(state), agent="inspect", model=str(state.model)))
    return notebook


def current_notebook() -> Notebook:
    """The notebook of the sample being run (for tools)."""
    notebook = _OPEN.get(store().get(_STORE_KEY, ""))
    if notebook is None:
        raise ToolError("No super-bench notebook is open for this sample: the task's setup did not run.")
    return notebook


def trajectory_of(state: TaskState) -> Trajectory:
    """The sample's trajectory so far (an empty one if its notebook never started)."""
    notebook = _OPEN.get(state.store.get(_STORE_KEY, ""))
    if notebook is not None:
        try:
            return notebook.env.trajectory
        except EnvironmentClosedError:
            pass
    task = sample_task(state)
    return Trajectory(task_id=task.task_id, query=task.query)


async def close_notebook(state: TaskState) -> None:
    """Stop the sample's sandbox (the task's cleanup)."""
    notebook = _OPEN.pop(state.store.get(_STORE_KEY, ""), None)
    if notebook is not None:
        with anyio.CancelScope(shield=True):
            await to_thread.run_sync(notebook.env.close)
