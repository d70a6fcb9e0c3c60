"""What defines a run (RunConfig, with RayOptions for the ray executor) and what is told of its
progress (Reporter): kept apart from ``run`` so the runner's parts below it can name them."""

from __future__ import annotations

import os
import re
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import ConfigDict, Field

from super_bench._pydantic import Model
from super_bench.agents import AGENTS, AgentOptions
from super_bench.environment import EnvConfig
from super_bench.models import ModelOptions
from super_bench.runner.results import TaskResult
from super_bench.scoring import ScoreMode
from super_bench.tasks.loaders import default_set, load_tasks
from super_bench.tasks.model import Task


class RayOptions(Model):
    """Where the ``ray`` executor runs, and what each task asks the cluster for."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    address: str | None = Field(
        None,
        description="Cluster to join (auto, HOST:6379 or ray://HOST:10001); default: $RAY_ADDRESS, else a local one",
    )
    cpus: float = Field(1, gt=0, description="CPUs each task asks for")
    memory_gb: float | None = Field(None, gt=0, description="Memory each task asks for, in GiB")
    gpus: float = Field(0, ge=0, description="GPUs each task asks for")


class RunConfig(Model):
    """Everything that defines a run."""

    model_config = ConfigDict(extra="forbid")

    source: str = Field("demo", description="demo, hf, hf:OWNER/NAME[@REV], or a path")
    task_set: str | None = Field(None, description="expert, masked or auto (default: expert for demo and hf)")
    task_ids: list[str] | None = None
    limit: int | None = Field(None, ge=1)
    query: str | None = Field(None, description="Run one ad-hoc task with this query instead of a task set")
    skip_invalid: bool = False
    agent: str = "gold"
    model: str | None = None
    seed: int | None = None
    agent_settings: dict[str, Any] = Field(default_factory=dict)
    model_options: ModelOptions = Field(default_factory=ModelOptions)
    env: EnvConfig = Field(default_factory=EnvConfig)
    out: Path | None = Field(None, description="Run directory (default: runs/<time>-<set or query>-<agent>[-<model>])")
    mode: ScoreMode = "corrected"
    executor: str = Field("local", description="local (threads of this process) or ray")
    workers: int | None = Field(
        None, ge=1, description="Tasks at once (default: 1 locally; on Ray, as many as the cluster's CPUs fit)"
    )
    ray: RayOptions = Field(default_factory=RayOptions)
    prestart: Literal["auto", "off"] = Field(
        "auto",
        description="auto: while every worker is busy and tasks wait, start the next task's sandbox and kernel "
        "ahead when a core is idle (the local executor); off: never",
    )
    infra_retries: int = Field(2, ge=0, description="Retries of a task that failed on the infrastructure")
    order: Literal["longest-first", "given"] = Field(
        "longest-first",
        description="With several workers: the tasks that took longest in earlier runs first (untimed ones first of "
        "all), or the order given",
    )
    epochs: int = Field(1, ge=1, description="Runs of each task, with seeds seed, seed+1, ...")
    redo: bool = Field(False, description="Replace the run in the run directory instead of resuming it")
    adopt: bool = Field(
        False,
        description="Resume a run directory whose run.json is lost or unreadable, keeping the rows these settings "
        "match (and rows too old to say, unchecked), and rebuild run.json from these settings",
    )

    def resolved_set(self) -> str | None:
        return default_set(self.source, self.task_set)

    def load(self) -> list[Task]:
        if self.query is not None:
            return [Task(task_id="query", query=self.query, task_set="expert")]
        return load_tasks(
            self.source, self.resolved_set(), task_ids=self.task_ids, limit=self.limit, skip_invalid=self.skip_invalid
        )

    def task_threads(self) -> int | None:
        """How many threads each task's numerical libraries (OpenMP, OpenBLAS, MKL: numpy, torch) may start. With
        several workers on this machine, the cores shared out among them, since each library otherwise starts a
        thread per core in every task at once; on Ray, the CPUs a task reserves (as Ray does for its own tasks);
        with one worker, None: their own default, as in SUPER's environment, which ran one task at a time."""
        if self.executor == "ray":
            return max(1, int(self.ray.cpus))
        workers = self.workers or 1
        return None if workers == 1 else max(1, len(os.sched_getaffinity(0)) // workers)

    def agent_options(self) -> AgentOptions:
        return AgentOptions(
            model=self.model, seed=self.seed, settings=self.agent_settings, model_options=self.model_options
        )

    def seed_for(self, epoch: int) -> int | None:
        """Epoch 1 runs with the seed as given; epoch k with seed + k - 1 (seed 0 when none is given),
        so that each epoch samples anew instead of replaying the response cache."""
        return self.seed if epoch == 1 else (self.seed or 0) + epoch - 1

    def default_out(self) -> Path:
        """``runs/<time>-<what>-<agent>[-<model>]``, named after what ran: the task set, or ``query``
        for an ad-hoc task; the agent with the agent it wraps (``reflexion-swe-agent``), not a file
        it replays; the model's name without its provider."""
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        what = "query" if self.query is not None else self.resolved_set() or "tasks"
        name, _, arg = self.agent.partition(":")
        parts = [stamp, what, name]
        if arg in AGENTS.names():
            parts.append(arg)
        if self.model:
            parts.append(self.model.rpartition("/")[2])
        return Path("runs") / re.sub(r"[^\w.+-]+", "_", "-".join(parts))


class Reporter(Protocol):
    """Told about a run's progress (the CLI's live display is one). Called from the driving thread."""

    def begin(self, total: int, finished: list[TaskResult]) -> None: ...
    def task_started(self, task: Task) -> None: ...
    def task_retried(self, result: TaskResult) -> None: ...
    def task_finished(self, result: TaskResult) -> None: ...
