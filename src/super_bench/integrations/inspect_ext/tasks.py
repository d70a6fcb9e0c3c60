"""The super_bench/... Inspect tasks.

``inspect eval super_bench/demo_expert --model openai/gpt-4o`` runs the bundled demo Expert tasks;
``super_bench/expert``, ``masked`` and ``auto`` the SUPER sets from the Hugging Face Hub;
``super_bench/custom -T source=FILE`` a task file of your own. Options go in ``-T``: task_ids,
limit, sandbox, cell_timeout, max_steps, max_compute, mode (see ``TaskOptions``).
"""

from __future__ import annotations

import json
from typing import Any

from inspect_ai import Task as InspectTask
from inspect_ai import task
from inspect_ai._util.error import PrerequisiteError
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageUser
from inspect_ai.scorer import Scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver
from pydantic import ConfigDict, Field, ValidationError, field_validator

from super_bench._pydantic import Model
from super_bench.environment import EnvConfig
from super_bench.errors import ConfigError
from super_bench.integrations.inspect_ext.agent import super_agent
from super_bench.integrations.inspect_ext.notebook import TASK_KEY, close_notebook, open_notebook
from super_bench.integrations.inspect_ext.scorers import entrypoint, landmarks, output_match
from super_bench.messages import pre_executed_text
from super_bench.runner.config import RunConfig
from super_bench.sandbox import SandboxConfig
from super_bench.scoring import ScoreMode
from super_bench.tasks.loaders import load_tasks
from super_bench.tasks.model import Task

# The defaults of the options are those of the harness's own settings.
_ENV, _SANDBOX, _RUN = EnvConfig.model_fields, SandboxConfig.model_fields, RunConfig.model_fields


class TaskOptionError(ConfigError, PrerequisiteError):
    """A ``-T`` option Inspect cannot give a super_bench task. Inspect shows a ``PrerequisiteError`` as its
    message alone, where any other error from making the task is a traceback of a hundred lines."""

    def __init__(self, message: str) -> None:
        ConfigError.__init__(self, message)
        self.message = f"error: {message}"


class TaskOptions(Model):
    """What ``-T name=value`` may set on a super_bench task."""

    model_config = ConfigDict(extra="forbid")

    task_ids: list[str] | None = Field(None, description="Run only these tasks")
    limit: int | None = Field(None, ge=1, description="Run at most this many tasks")
    sandbox: str = Field(_SANDBOX["backend"].default, description="auto, local, bwrap or docker")
    cell_timeout: float = Field(_ENV["cell_timeout"].default, gt=0, description="Soft timeout of a cell, in seconds")
    max_steps: int = Field(_ENV["max_steps"].default, ge=1, description="Agent steps per sample")
    max_compute: float = Field(_ENV["max_compute"].default, gt=0, description="Seconds of execution per sample")
    mode: ScoreMode = Field(_RUN["mode"].default, description="Output-match scoring: corrected or reference")

    @field_validator("task_ids", mode="before")
    @classmethod
    def _one_id(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    def env(self) -> EnvConfig:
        return EnvConfig(
            cell_timeout=self.cell_timeout,
            max_steps=self.max_steps,
            max_compute=self.max_compute,
            sandbox=SandboxConfig(backend=self.sandbox),
        )


def super_task(source: str, task_set: str | None, **options: Any) -> InspectTask:
    """An Inspect task over super-bench tasks: one sample, and one notebook, per task."""
    try:
        settings = TaskOptions(**options)
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors())
        known = ", ".join(TaskOptions.model_fields)
        raise TaskOptionError(f"invalid task option(s) (-T): {problems}; the options are: {known}") from None
    tasks = load_tasks(source, task_set, task_ids=settings.task_ids, limit=settings.limit)
    scorers: list[Scorer] = []
    if any(t.answer is not None for t in tasks):
        scorers.append(output_match(settings.mode))
    if any(t.landmarks for t in tasks):
        scorers.append(landmarks())
    if any(t.entrypoint for t in tasks):
        scorers.append(entrypoint())
    return InspectTask(
        dataset=MemoryDataset([_sample(t) for t in tasks], name=f"super-{source}-{task_set or 'all'}"),
        setup=notebook_setup(**settings.env().model_dump(mode="json")),
        solver=super_agent(),
        cleanup=close_notebook,
        scorer=scorers,
    )


def _sample(task: Task) -> Sample:
    return Sample(
        id=task.task_id,
        input=task.query,
        target=json.dumps(task.answer) if task.answer is not None else "",
        metadata={TASK_KEY: task.model_dump(mode="json")},
    )


@solver
def notebook_setup(**env: Any) -> Solver:
    """Start the sample's notebook (``env``: EnvConfig fields) and show the agent the cells already run."""
    config = EnvConfig.model_validate(env)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        notebook = await open_notebook(state, config)
        pre_executed = [s for s in notebook.env.trajectory.steps if s.pre_executed]
        if pre_executed:
            state.messages.append(ChatMessageUser(content=pre_executed_text(pre_executed)))
        return state

    return solve


@task
def demo_expert(**options: Any) -> InspectTask:
    """The bundled demo Expert tasks (offline)."""
    return super_task("demo", "expert", **options)


@task
def demo_masked(**options: Any) -> InspectTask:
    """The bundled demo Masked tasks (offline)."""
    return super_task("demo", "masked", **options)


@task
def demo_auto(**options: Any) -> InspectTask:
    """The bundled demo Auto tasks (offline)."""
    return super_task("demo", "auto", **options)


@task
def expert(**options: Any) -> InspectTask:
    """SUPER's Expert set (allenai/super on the Hugging Face Hub)."""
    return super_task("hf", "expert", **options)


@task
def masked(**options: Any) -> InspectTask:
    """SUPER's Masked set (allenai/super on the Hugging Face Hub)."""
    return super_task("hf", "masked", **options)


@task
def auto(**options: Any) -> InspectTask:
    """SUPER's Auto set (allenai/super on the Hugging Face Hub)."""
    return super_task("hf", "auto", **options)


@task
def custom(source: str, task_set: str | None = None, **options: Any) -> InspectTask:
    """Tasks from any super-bench source: a .jsonl/.json/.parquet file or directory, or hf:OWNER/NAME."""
    return super_task(source, task_set, **options)
