"""What defines a run (RunConfig, with RayOptions for the ray executor) and what is told of its
progress (Reporter): kept apart from ``run`` so the runner's parts below it can name them."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

from super_bench._pydantic import Model
from super_bench.agents import AGENTS, AgentOptions
from super_bench.environment import EnvConfig
from super_bench.models import ModelOptions
from super_bench.runner.results import TaskResult
from super_bench.scoring import ScoreMode
from super_bench.tasks.loaders import default_set, load_tasks
from super_bench.tasks.model import Task

if TYPE_CHECKING:
    from typing_extensions import Self


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


class TaskChoice(Model):
    """Which tasks a run runs."""

    model_config = ConfigDict(extra="forbid")

    source: str = Field(
        "demo",
        description="Tasks: demo (bundled, offline), hf (the allenai/super dataset), hf:OWNER/NAME[@REV], or a "
        ".jsonl/.json/.parquet file or directory.",
    )
    task_set: str | None = Field(None, description="expert, masked or auto (default: expert for demo and hf)")
    task_ids: list[str] | None = Field(None, description="Run only these tasks.")
    limit: int | None = Field(None, ge=1, description="Run at most this many tasks.")
    query: str | None = Field(
        None,
        description="Run one ad-hoc task with this query instead of a task set; it has no gold solution, so give an "
        "agent that works on its own.",
    )
    skip_invalid: bool = Field(False, description="Skip invalid task rows instead of failing.")


class AgentChoice(Model):
    """The agent of a run and what it is built from."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        "gold",
        description="gold, replay:FILE, react, react-super, swe-agent, reflexion[:AGENT], human, mcp:COMMAND (an "
        "external MCP client, docs/integrations.md), or a plug-in.",
    )
    model: str | None = Field(None, description="Model as provider/name, for agents that use one.")
    seed: int | None = Field(None, description="Seed for agents and models that sample.")
    settings: dict[str, Any] = Field(
        default_factory=dict, description="Agent settings, e.g. temperature=0 or attempts=2; see docs/agents.md."
    )
    model_options: ModelOptions = Field(default_factory=ModelOptions)


class Execution(Model):
    """How and where a run's tasks are executed: none of it changes their scores."""

    model_config = ConfigDict(extra="forbid")

    executor: str = Field(
        "local", description="local (this machine) or ray (a Ray cluster, or a local Ray instance); see docs/runner.md."
    )
    workers: int | None = Field(
        None,
        ge=1,
        description="Tasks at once, each in its own sandbox (default: 1; with Ray, as many as the cluster's CPUs fit)",
    )
    ray: RayOptions = Field(default_factory=RayOptions)
    prestart: Literal["auto", "off"] = Field(
        "auto",
        description="auto: while every worker is busy and tasks wait, start the next task's sandbox and kernel "
        "ahead when a core is idle (the local executor); off: never.",
    )
    infra_retries: int = Field(
        2,
        ge=0,
        description="Times a task is tried again after an infrastructure failure (sandbox, kernel, model service).",
    )
    order: Literal["longest-first", "given"] = Field(
        "longest-first",
        description="With several workers, the tasks that took longest in earlier runs first, shared out evenly "
        "between the workers by those times (untimed ones first of all), or the order given.",
    )
    epochs: int = Field(
        1, ge=1, description="Runs of each task (seeds: seed, seed+1, ...); summary.json gets standard errors."
    )


# The settings of RunConfig as they were named before they were grouped, and where each is now: the flat names are
# still accepted (RunConfig(agent="react", workers=2)), run.json's `config` is written in them, and a run's identity
# names its settings by them, so that run directories written before stay readable and resumable.
FLAT: dict[str, tuple[str, str]] = {
    **{name: ("tasks", name) for name in ("source", "task_set", "task_ids", "limit", "query", "skip_invalid")},
    "agent": ("agent", "name"),
    "model": ("agent", "model"),
    "seed": ("agent", "seed"),
    "agent_settings": ("agent", "settings"),
    "model_options": ("agent", "model_options"),
    **{
        name: ("execution", name)
        for name in ("executor", "workers", "ray", "prestart", "infra_retries", "order", "epochs")
    },
}


class RunConfig(Model):
    """Everything that defines a run, in parts: the tasks, the agent, the environment (its limits and sandbox), the
    execution, and the scoring mode and run directory. Each setting may also be given by its flat name (``FLAT``)."""

    model_config = ConfigDict(extra="forbid")

    tasks: TaskChoice = Field(default_factory=TaskChoice)
    agent: AgentChoice = Field(default_factory=AgentChoice)
    env: EnvConfig = Field(default_factory=EnvConfig)
    execution: Execution = Field(default_factory=Execution)
    mode: ScoreMode = Field(
        "corrected",
        description="Output-match scoring: corrected, or exactly as the reference harness (the paper's numbers).",
    )
    out: Path | None = Field(
        None,
        description="Run directory; rerunning with the same one resumes "
        "(default: runs/<time>-<set or query>-<agent>[-<model>])",
    )
    redo: bool = Field(False, description="Replace the run in the run directory instead of resuming it.")
    adopt: bool = Field(
        False,
        description="Resume a run directory whose run.json is lost or unreadable, keeping the rows these settings "
        "match (and rows too old to say, unchecked), and rebuild run.json from these settings.",
    )

    @model_validator(mode="before")
    @classmethod
    def _grouped(cls, data: Any) -> Any:
        """Flat names (``agent="react"``, ``workers=2``) moved into their parts; one setting given twice is refused."""
        if not isinstance(data, dict) or not any(name in data for name in FLAT):
            return data
        data = dict(data)
        for name, (part, field) in FLAT.items():
            if name not in data or (name == "agent" and not isinstance(data[name], str)):
                continue
            value = data.pop(name)
            grouped = data.get(part, {})
            grouped = dict(grouped.model_dump(exclude_unset=True) if isinstance(grouped, BaseModel) else grouped)
            if field in grouped:
                raise ValueError(f"{name} is given twice: as {name} and as {part}.{field}")
            data[part] = {**grouped, field: value}
        return data

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with ``update``'s settings, given in their parts or by their flat names (not validated, as
        pydantic's copies are not)."""
        rest = dict(update or {})
        parts: dict[str, dict[str, Any]] = {}
        for name in [
            name for name in rest if name in FLAT and not (name == "agent" and not isinstance(rest[name], str))
        ]:
            part, field = FLAT[name]
            parts.setdefault(part, {})[field] = rest.pop(name)
        for part, fields in parts.items():
            rest[part] = (rest.get(part) or getattr(self, part)).model_copy(update=fields)
        return super().model_copy(update=rest, deep=deep)

    def flat(self) -> dict[str, Any]:
        """The settings as JSON in their flat names (as run.json's ``config`` holds them)."""
        data = self.model_dump(mode="json")
        parts = {part: data.pop(part) for part, _ in FLAT.values() if part in data}
        return {**{name: parts[part][field] for name, (part, field) in FLAT.items()}, **data}

    def resolved_set(self) -> str | None:
        return default_set(self.tasks.source, self.tasks.task_set)

    def load(self) -> list[Task]:
        tasks = self.tasks
        if tasks.query is not None:
            return [Task(task_id="query", query=tasks.query, task_set="expert")]
        return load_tasks(
            tasks.source,
            self.resolved_set(),
            task_ids=tasks.task_ids,
            limit=tasks.limit,
            skip_invalid=tasks.skip_invalid,
        )

    def task_threads(self) -> int | None:
        """How many threads each task's numerical libraries (OpenMP, OpenBLAS, MKL: numpy, torch) may start. With
        several workers on this machine, the cores shared out among them, since each library otherwise starts a
        thread per core in every task at once; on Ray, the CPUs a task reserves (as Ray does for its own tasks);
        with one worker, None: their own default, as in SUPER's environment, which ran one task at a time."""
        if self.execution.executor == "ray":
            return max(1, int(self.execution.ray.cpus))
        workers = self.execution.workers or 1
        return None if workers == 1 else max(1, len(os.sched_getaffinity(0)) // workers)

    def agent_options(self) -> AgentOptions:
        agent = self.agent
        return AgentOptions(
            model=agent.model, seed=agent.seed, settings=agent.settings, model_options=agent.model_options
        )

    def seed_for(self, epoch: int) -> int | None:
        """Epoch 1 runs with the seed as given; epoch k with seed + k - 1 (seed 0 when none is given),
        so that each epoch samples anew instead of replaying the response cache."""
        seed = self.agent.seed
        return seed if epoch == 1 else (seed or 0) + epoch - 1

    def default_out(self) -> Path:
        """``runs/<time>-<what>-<agent>[-<model>]``, named after what ran: the task set, or ``query``
        for an ad-hoc task; the agent with the agent it wraps (``reflexion-swe-agent``), not a file
        it replays; the model's name without its provider."""
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        what = "query" if self.tasks.query is not None else self.resolved_set() or "tasks"
        name, _, arg = self.agent.name.partition(":")
        parts = [stamp, what, name]
        if arg in AGENTS.names():
            parts.append(arg)
        if self.agent.model:
            parts.append(self.agent.model.rpartition("/")[2])
        return Path("runs") / re.sub(r"[^\w.+-]+", "_", "-".join(parts))


class Reporter(Protocol):
    """Told about a run's progress (the CLI's live display is one). Called from the driving thread."""

    def begin(self, total: int, finished: list[TaskResult]) -> None: ...
    def task_started(self, task: Task) -> None: ...
    def task_retried(self, result: TaskResult) -> None: ...
    def task_finished(self, result: TaskResult) -> None: ...
