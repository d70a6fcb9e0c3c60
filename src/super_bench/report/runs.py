"""A saved run as the reports see it: its results, its tasks where kept, who ran it, and its metric estimates."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from super_bench._names import METRICS
from super_bench.errors import ReportError, RunDirError
from super_bench.runner.records import RunManifest
from super_bench.runner.results import MIXED_MODE, Summary, TaskResult, summarize, task_means
from super_bench.runner.rundir import RunDir, tolerated
from super_bench.stats import Estimate, bootstrap_mean
from super_bench.tasks.model import Task, masked_categories

log = logging.getLogger(__name__)


@dataclass
class RunData:
    path: Path
    results: list[TaskResult]
    summary: Summary
    tasks: dict[str, Task] = field(default_factory=dict)
    manifest: RunManifest = field(default_factory=RunManifest)

    @property
    def config(self) -> dict[str, Any]:
        return self.manifest.config

    @property
    def agent(self) -> str | None:
        agent = self.config.get("agent")
        return str(agent) if agent else None

    @property
    def model(self) -> str | None:
        model = self.config.get("model")
        return str(model) if model else None

    @property
    def task_set(self) -> str:
        sets = sorted({r.task_set for r in self.results})
        return ",".join(sets) or str(self.config.get("task_set") or "")

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def primary_metric(self) -> str:
        """The headline metric: script-executed for the Auto set, output match otherwise."""
        return "entrypoint" if self.task_set == "auto" else "output_match"

    @property
    def mode(self) -> str:
        """How the run was scored: corrected, reference, recorded, or mixed when its rows differ."""
        return self.summary.mode

    def mode_counts(self) -> str:
        """``corrected 40, recorded 5``: the rows per scoring mode."""
        return ", ".join(f"{mode} {count}" for mode, count in sorted(self.summary.modes.items()))

    @property
    def scored(self) -> list[TaskResult]:
        """Results that count in the means: all but infrastructure failures and unscored rows."""
        return [r for r in self.results if r.in_means]

    def values(self, metric: str) -> dict[str, float]:
        """Each scored task's value of ``metric`` (the mean of its epochs), where the task defines it."""
        return task_means(self.scored, metric)

    @cached_property
    def estimates(self) -> dict[str, Estimate]:
        return {m: bootstrap_mean(list(self.values(m).values())) for m in METRICS}

    def categories(self, task_id: str) -> list[str]:
        """Masked categories of a task (from its record if kept, else from its id)."""
        task = self.tasks.get(task_id)
        if task is not None:
            return task.categories
        return masked_categories(task_id, self._sets.get(task_id))

    @cached_property
    def _sets(self) -> dict[str, str]:
        return {r.task_id: r.task_set for r in self.results}

    @property
    def cost(self) -> float | None:
        """The run's model cost; None (unknown) where no row records a model call: the gold agent's
        runs and imported trajectories, whose notebooks record no usage, cost what nobody measured."""
        return self.summary.usage.cost if self.summary.usage.model_calls else None

    @property
    def wall_time(self) -> float:
        return sum(r.wall_time for r in self.results)


def check_modes(runs: list[RunData]) -> None:
    """Refuse runs whose scores were computed in different modes, or that mix modes themselves."""
    modes = {run.mode for run in runs}
    if len(modes) > 1 or MIXED_MODE in modes:
        listed = ", ".join(
            f"{run.path}: {run.mode}" + (f" ({run.mode_counts()})" if run.mode == MIXED_MODE else "") for run in runs
        )
        raise ReportError(
            f"the runs were scored in different modes ({listed}); pass --allow-mixed-modes to compare them anyway, "
            "or re-score them in one mode: super-bench score RUN_DIR --mode reference"
        )


def load_run(path: Path) -> RunData:
    """Read a run directory for reporting; the summary is recomputed from the results."""
    run_dir = RunDir(path)
    if not run_dir.path.is_dir():
        raise RunDirError(f"no run directory at {path}")
    run_dir.check_links()
    results = sorted(run_dir.read_results(), key=lambda r: r.task_id)
    if not results:
        raise RunDirError(f"{path} has no results (no results.jsonl lines); is it a run directory?")
    tasks: dict[str, Task] = {}
    if (run_dir.path / "tasks.jsonl").is_file():
        try:
            tasks = {t.task_id: t for t in run_dir.read_tasks()}
        except (ValidationError, ValueError) as e:
            log.warning("%s/tasks.jsonl is unreadable; gold answers and landmarks are not shown: %s", path, e)
    manifest = tolerated(run_dir.read_manifest, "who ran it and when is not shown") or RunManifest()
    mode = run_dir.summary_mode()
    summary = summarize(results, mode)
    summary.task_environment = manifest.task_environment_line
    return RunData(run_dir.path, results, summary, tasks, manifest)


def board_runs(paths: Iterable[Path]) -> tuple[list[RunData], list[str]]:
    """The finished runs among ``paths`` (as ``runs/*`` expands), and one line for each path passed over:
    what is not a run directory, a run still going or cut short, and runs of ``play`` and ``doctor``,
    which measure a person or the tasks, not an agent."""
    loaded: list[RunData] = []
    skipped: list[str] = []
    for path in paths:
        reason = _unfinished(path)
        if reason is None:
            try:
                run = load_run(path)
            except RunDirError as e:
                reason = str(e)
            else:
                reason = _not_an_agent_run(run.manifest)
                if reason is None:
                    loaded.append(run)
                    continue
        skipped.append(f"{path}: {reason}")
    return loaded, skipped


def _unfinished(path: Path) -> str | None:
    if not (path / "results.jsonl").is_file():
        return "not a run directory (no results.jsonl)"
    if os.path.lexists(path / ".lock"):
        return "a run still going (or killed: rerun it to finish)"
    if not (path / "summary.json").is_file():
        return "an unfinished run (no summary.json: rerun its command to finish it)"
    return None


def _not_an_agent_run(manifest: RunManifest) -> str | None:
    command = manifest.command[1:2]
    if manifest.config.get("agent") == "human" or command == ["play"]:
        return "a `play` session"
    if command == ["doctor"]:
        return "a `doctor` run (gold runs checking the tasks)"
    return None
