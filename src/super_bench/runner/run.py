"""Running an agent over a set of tasks, writing the run directory as results arrive."""

from __future__ import annotations

import platform
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from super_bench.agents import AgentOptions, create_agent
from super_bench.environment import EnvConfig
from super_bench.models import ModelOptions
from super_bench.runner.episode import run_episode
from super_bench.runner.results import Summary, TaskResult, summarize
from super_bench.runner.rundir import RunDir
from super_bench.sandbox import check_backend, resolve_backend
from super_bench.scoring import ScoreMode
from super_bench.tasks.loaders import default_set, load_tasks
from super_bench.tasks.model import Task


class RunConfig(BaseModel):
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
    out: Path | None = Field(None, description="Run directory (default: runs/<time>-<set>-<agent>)")
    mode: ScoreMode = "corrected"

    def resolved_set(self) -> str | None:
        return default_set(self.source, self.task_set)

    def load(self) -> list[Task]:
        if self.query is not None:
            return [Task(task_id="query", query=self.query, task_set="expert")]
        return load_tasks(
            self.source, self.resolved_set(), task_ids=self.task_ids, limit=self.limit, skip_invalid=self.skip_invalid
        )

    def agent_options(self) -> AgentOptions:
        return AgentOptions(
            model=self.model, seed=self.seed, settings=self.agent_settings, model_options=self.model_options
        )

    def default_out(self) -> Path:
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        agent = self.agent.split(":", 1)[0]
        return Path("runs") / f"{stamp}-{self.resolved_set() or 'tasks'}-{agent}"


@dataclass
class RunOutcome:
    run_dir: RunDir
    results: list[TaskResult]
    summary: Summary


class Reporter(Protocol):
    """Told about a run's progress (the CLI's progress bar is one)."""

    def begin(self, total: int, done: int) -> None: ...
    def task_started(self, task: Task) -> None: ...
    def task_finished(self, result: TaskResult) -> None: ...


def run(
    config: RunConfig | None = None,
    *,
    tasks: list[Task] | None = None,
    reporter: Reporter | None = None,
    **settings: Any,
) -> RunOutcome:
    """Run the configured agent on every task and return the results and their summary.

    Give a ``RunConfig``, or its fields as keywords: ``run(agent="gold", task_set="masked")``.
    Tasks already finished in the run directory (from an interrupted run) are not run again.
    """
    if config is not None and settings:
        raise TypeError("give either a RunConfig or keyword settings, not both")
    config = config or RunConfig(**settings)
    options = config.agent_options()
    # Fail on a bad agent, or a sandbox that cannot run here, now rather than once per task.
    create_agent(config.agent, options)
    check_backend(config.env.sandbox)
    tasks = config.load() if tasks is None else tasks
    run_dir = RunDir(config.out or config.default_out())
    run_dir.create()
    done = {r.task_id: r for r in run_dir.read_results() if r.status != "infra_error"}
    run_dir.write_tasks(tasks)
    run_dir.write_manifest(_manifest(config, tasks))
    results = [done[t.task_id] for t in tasks if t.task_id in done]
    if reporter is not None:
        reporter.begin(len(tasks), len(results))
    for task in tasks:
        if task.task_id in done:
            continue
        if reporter is not None:
            reporter.task_started(task)
        result = run_episode(
            task,
            config.agent,
            options,
            config.env,
            run_dir.task_dir(task.task_id),
            run_dir=run_dir.path,
            mode=config.mode,
        )
        run_dir.append_result(result)
        results.append(result)
        if reporter is not None:
            reporter.task_finished(result)
    summary = summarize(results, config.mode)
    run_dir.write_summary(summary)
    return RunOutcome(run_dir, results, summary)


def _manifest(config: RunConfig, tasks: list[Task]) -> dict[str, Any]:
    from super_bench import __version__

    return {
        "super_bench_version": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "command": sys.argv,
        "created_at": datetime.now().astimezone().isoformat(),
        "n_tasks": len(tasks),
        "sandbox": resolve_backend(config.env.sandbox.backend),
        "config": config.model_dump(mode="json"),
    }
