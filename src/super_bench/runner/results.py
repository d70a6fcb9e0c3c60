"""Per-task results (``results.jsonl``) and the run summary (``summary.json``), versioned records
(``records``)."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from datetime import datetime
from typing import Any

from pydantic import ConfigDict, Field, ValidationError, field_validator

from super_bench._names import METRICS, TaskStatus
from super_bench._pydantic import Model
from super_bench.actions import valid_text
from super_bench.analysis import FailureCause, analyze_failure, scoring_rule_cause
from super_bench.divergence import Divergence
from super_bench.runner.records import VersionedRecord
from super_bench.runner.waste import Waste, waste_of
from super_bench.scoring import Metrics, ProvenanceStatus, submission_of
from super_bench.scoring.submission import json_safe
from super_bench.stats import ExactSum, bootstrap_mean
from super_bench.tasks.model import masked_categories
from super_bench.trajectory import StopReason, Trajectory, Usage

RECORDED_MODE = "recorded"  # metrics imported as the original harness recorded them


class TaskResult(VersionedRecord):
    """One line of ``results.jsonl``: one run (epoch) of one task."""

    model_config = ConfigDict(extra="ignore")

    task_id: str
    task_set: str
    epoch: int = Field(1, ge=1, description="Which of the run's repetitions of the task this is")
    seed: int | None = Field(None, description="The seed the agent ran with")
    status: TaskStatus
    stop_reason: StopReason | None = None
    metrics: Metrics = Field(default_factory=Metrics)
    submission: Any = None
    usage: Usage = Field(default_factory=Usage)
    n_steps: int = 0
    execution_time: float = Field(0.0, description="Seconds the agent's steps spent executing")
    wall_time: float = Field(0.0, description="Seconds from sandbox start to the end of scoring")
    started_at: datetime | None = None
    finished_at: datetime | None = None
    error: str | None = None
    attempts: int = Field(1, ge=1, description="Times the task was started: 1 + retries after infrastructure failures")
    retry_errors: list[str] = Field(default_factory=list, description="The infrastructure failures that were retried")
    trajectory: str | None = Field(None, description="Path of trajectory.json, relative to the run directory")
    details: dict[str, Any] = Field(default_factory=dict, description="Scoring details (landmark steps, ...)")
    answer_provenance: ProvenanceStatus | None = Field(
        None,
        description="Whether the run's own output showed the submitted values: observed (all), partly_observed, "
        "given (all shown, some only by given cells), unobserved; null when nothing was submitted "
        "(details.provenance has each value's step)",
    )
    replay_divergence: Divergence | None = Field(
        None,
        description="A replay of a recorded trajectory that did not reproduce it: where it first diverged, and why "
        "(the trajectory's metadata.replay_divergence)",
    )
    mode: str | None = Field(
        None,
        description="How the metrics were scored: corrected, reference, or recorded (imported as the original "
        "harness scored it); null in rows written before rows recorded it (the summary's mode applies)",
    )
    unscored: str | None = Field(
        None, description="Why re-scoring could not score this task; such a row is left out of the means"
    )
    waste: Waste | None = Field(None, description="Seconds spent without result, by cause; null in rows before v3")
    waited: float = Field(
        0.0, description="Seconds the task was held back until its machine had the free disk and memory it needs"
    )
    node: str | None = Field(None, description="The host that ran the task; on Ray, the Ray node's id after a slash")
    identity_sha256: str | None = Field(
        None,
        description="The SHA-256 of the run's identity (run.json's) the row was run with, so that a resume can check "
        "it when run.json is lost (--adopt); null in rows written before v5",
    )
    failure: FailureCause | None = Field(
        None,
        description="Why the task did not fully succeed: its primary cause, with the step and line that show it "
        "(docs/failure-analysis.md); null on a fully successful row, an infrastructure failure, an unscored row, "
        "and rows written before v4",
    )

    @field_validator("error", mode="after")
    @classmethod
    def _text(cls, value: str | None) -> str | None:
        # An error quotes what failed (an agent's traceback may quote a model's reply): kept as text, whatever it holds.
        return None if value is None else valid_text(value)

    @field_validator("retry_errors", mode="after")
    @classmethod
    def _texts(cls, value: list[str]) -> list[str]:
        return [valid_text(v) for v in value]

    @property
    def key(self) -> tuple[str, int]:
        return self.task_id, self.epoch

    @property
    def in_means(self) -> bool:
        """Whether the row counts in the means: not an infrastructure failure, and scored."""
        return self.status != "infra_error" and self.unscored is None

    def diagnosed(self, trajectory: Trajectory) -> TaskResult:
        """This row with the primary cause of its failure read from ``trajectory`` (``analysis``). A row out of
        the means gets none: an infrastructure failure is not the agent's, and an unscored row has no score
        whose shortfall could be explained."""
        if not self.in_means:
            return self.model_copy(update={"failure": None})
        runs = self.details.get("entrypoint_runs", [])
        failure = scoring_rule_cause(self.mode, self.metrics, runs) or analyze_failure(
            trajectory, self.metrics, self.answer_provenance
        )
        return self.model_copy(update={"failure": failure})

    @classmethod
    def from_trajectory(cls, trajectory: Trajectory, task_set: str, /, **fields: Any) -> TaskResult:
        """A result whose figures (stop reason, usage, steps, times, submission) come from the trajectory;
        ``fields`` adds or overrides the rest (status, metrics, paths, ...)."""
        started, finished = trajectory.started_at, trajectory.finished_at or trajectory.started_at
        values: dict[str, Any] = {
            "task_id": trajectory.task_id,
            "task_set": task_set,
            "status": "completed",
            "stop_reason": trajectory.stop_reason,
            "submission": json_safe(submission_of(trajectory)),
            "usage": trajectory.usage,
            "n_steps": len(trajectory.agent_steps),
            "execution_time": trajectory.execution_time,
            "wall_time": (finished - started).total_seconds(),
            "started_at": started,
            "finished_at": finished,
            "waste": waste_of(trajectory),
            "replay_divergence": _divergence_of(trajectory),
        }
        values.update(fields)
        return cls(**values)


def _divergence_of(trajectory: Trajectory) -> Divergence | None:
    found = trajectory.metadata.get("replay_divergence")
    try:
        return None if found is None else Divergence.model_validate(found)
    except ValidationError:
        return None  # not the replay agent's record


class MetricStats(Model):
    """A metric's mean over tasks, its standard error and a bootstrap 95% confidence interval.

    A task run for several epochs counts once, with the mean of its epochs, so that the error
    reflects the sample of tasks rather than the number of repetitions."""

    mean: float | None
    stderr: float | None = Field(description="Standard error of the mean over tasks; null under 2 tasks")
    ci_low: float | None
    ci_high: float | None
    n: int = Field(description="Tasks that define the metric")


class Summary(VersionedRecord):
    """``summary.json``: means over scored tasks, and counts of everything else."""

    n_tasks: int = Field(description="Results: tasks times epochs")
    n_scored: int = Field(description="Results in the means: all but infrastructure failures and unscored rows")
    metrics: dict[str, float | None] = Field(description="Plain means over the scored results")
    status_counts: dict[str, int]
    stop_reasons: dict[str, int]
    usage: Usage
    execution_time: float
    mode: str = Field(
        "corrected", description="corrected, reference or recorded: the rows' scoring mode; mixed when they differ"
    )
    modes: dict[str, int] = Field(default_factory=dict, description="Rows per scoring mode")
    unscored: int = Field(0, description="Rows re-scoring could not score (left out of the means)")
    epochs: int = 1
    infra_errors: int = Field(0, description="Results that failed on the infrastructure, retries included")
    retries: int = Field(0, description="Task attempts repeated after an infrastructure failure")
    stats: dict[str, MetricStats] = Field(default_factory=dict)
    task_environment: str | None = Field(
        None, description="The task environment the run used, and how it differs from the paper's"
    )
    waste: Waste | None = Field(None, description="The rows' waste summed (over the rows that record it)")
    waited: float = Field(0.0, description="Seconds tasks were held back for lack of free disk or memory, summed")
    answer_observed: float | None = Field(
        None, description="Of the scored results with a submitted answer, the fraction whose every value was observed"
    )
    answer_given: float | None = Field(
        None,
        description="Of the same results, the fraction labelled given: every value shown, some only by given "
        "(pre-executed) cells and never by the agent's own output",
    )
    failure_causes: dict[str, int] = Field(
        default_factory=dict, description="Scored results that did not fully succeed, by primary cause (failure)"
    )
    failure_causes_by_category: dict[str, dict[str, int]] = Field(
        default_factory=dict,
        description="The same counts per task category: a Masked task's categories (from its id), others under "
        "their set",
    )


MIXED_MODE = "mixed"


def run_mode(results: list[TaskResult], default: str = "corrected") -> tuple[str, dict[str, int]]:
    """The scoring mode of a run's rows (``default`` for rows that do not say), ``mixed`` where they
    differ, and the rows per mode."""
    return _mode_of(Counter(r.mode or default for r in results), default)


def _mode_of(counts: Counter[str], default: str) -> tuple[str, dict[str, int]]:
    modes = dict(counts)
    if not modes:
        return default, modes
    return (next(iter(modes)) if len(modes) == 1 else MIXED_MODE), modes


def summarize(results: list[TaskResult], mode: str = "corrected") -> Summary:
    """Means of each metric over the results that define it, leaving out infrastructure failures and
    rows that could not be scored. ``mode`` is the mode of rows that do not record theirs."""
    tally = Tally(mode)
    for result in results:
        tally.add(result)
    return tally.summary()


class Tally:
    """A run's summary (``Summary``) from its rows seen one at a time, keeping counts and exact sums, and per task
    the sums of its epochs' metrics, not the rows: a run's memory does not grow by a row's size with each task it
    finishes. Every sum is exact until read (``ExactSum``), so the summary is the same whatever order the rows
    came in; ``order`` (a task's place in the run) orders the tasks the intervals are computed over, else they
    keep the order they came in."""

    def __init__(self, mode: str = "corrected", order: dict[str, int] | None = None) -> None:
        self.mode, self.order = mode, order
        self.n = self.n_scored = self.unscored = self.retries = 0
        self.epochs = 1
        self.statuses: Counter[str] = Counter()
        self.stops: Counter[str] = Counter()
        self.modes: Counter[str] = Counter()
        self.metrics = {name: (ExactSum(), [0]) for name in METRICS}
        # Per metric, per task: the sum and count of its epochs' values, in the order tasks came.
        self.per_task: dict[str, dict[str, tuple[ExactSum, list[int]]]] = {name: {} for name in METRICS}
        self.usage = {name: ExactSum() for name in Usage.model_fields}
        self.execution_time, self.waited = ExactSum(), ExactSum()
        self.waste: dict[str, ExactSum] | None = None
        self.traced: Counter[str] = Counter()
        self.causes: Counter[str] = Counter()
        self.by_category: dict[str, Counter[str]] = defaultdict(Counter)

    def add(self, r: TaskResult) -> None:
        self.n += 1
        self.statuses[r.status] += 1
        self.stops[r.stop_reason or "unknown"] += 1
        self.modes[r.mode or self.mode] += 1
        self.unscored += r.unscored is not None
        self.retries += r.attempts - 1
        self.epochs = max(self.epochs, r.epoch)
        for name, total_ in self.usage.items():
            total_.add(getattr(r.usage, name))
        self.execution_time.add(r.execution_time)
        self.waited.add(r.waited)
        if r.waste is not None:
            self.waste = self.waste or {name: ExactSum() for name in Waste.model_fields}
            for name, total_ in self.waste.items():
                total_.add(getattr(r.waste, name))
        if not r.in_means:
            return
        self.n_scored += 1
        for name in METRICS:
            value = getattr(r.metrics, name)
            if value is not None:
                sum_, count = self.metrics[name]
                sum_.add(value)
                count[0] += 1
                task_sum, task_count = self.per_task[name].setdefault(r.task_id, (ExactSum(), [0]))
                task_sum.add(value)
                task_count[0] += 1
        if r.answer_provenance is not None:
            self.traced[r.answer_provenance] += 1
        if r.failure is not None:
            self.causes[r.failure.cause] += 1
            _count_cause(self.by_category, r)

    def summary(self) -> Summary:
        run_scoring, modes = _mode_of(self.modes, self.mode)
        traced = sum(self.traced.values())
        return Summary(
            n_tasks=self.n,
            n_scored=self.n_scored,
            metrics={name: s.value / n[0] if n[0] else None for name, (s, n) in self.metrics.items()},
            status_counts=dict(self.statuses),
            stop_reasons=dict(self.stops),
            usage=Usage(**{name: s.value for name, s in self.usage.items()}),
            execution_time=self.execution_time.value,
            mode=run_scoring,
            modes=modes,
            unscored=self.unscored,
            epochs=self.epochs,
            infra_errors=self.statuses["infra_error"],
            retries=self.retries,
            stats={name: self._stats(name) for name in METRICS},
            waste=None if self.waste is None else Waste(**{name: s.value for name, s in self.waste.items()}),
            waited=self.waited.value,
            answer_observed=self.traced["observed"] / traced if traced else None,
            answer_given=self.traced["given"] / traced if traced else None,
            failure_causes=dict(self.causes),
            failure_causes_by_category={
                category: dict(self.by_category[category]) for category in sorted(self.by_category)
            },
        )

    def _stats(self, metric: str) -> MetricStats:
        tasks, order = self.per_task[metric], self.order
        ids = list(tasks) if order is None else sorted(tasks, key=lambda task_id: order.get(task_id, len(order)))
        return _metric_stats([tasks[t][0].value / tasks[t][1][0] for t in ids])


def row_categories(row: TaskResult) -> list[str]:
    """The categories a row counts under: a Masked task's (from its id), else its set (``-`` if none)."""
    return masked_categories(row.task_id, row.task_set) or [row.task_set or "-"]


def causes_by_category(results: list[TaskResult]) -> dict[str, dict[str, int]]:
    """Per category (``row_categories``), the results' failures by primary cause; a task of several Masked
    categories counts in each."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for r in results:
        _count_cause(counts, r)
    return {category: dict(counts[category]) for category in sorted(counts)}


def _count_cause(counts: dict[str, Counter[str]], r: TaskResult) -> None:
    if r.failure is not None:
        for category in row_categories(r):
            counts[category][r.failure.cause] += 1


def task_means(results: list[TaskResult], metric: str) -> dict[str, float]:
    """Each task's mean of ``metric`` over its epochs, for the tasks that define it."""
    per_task: dict[str, list[float]] = defaultdict(list)
    for r in results:
        value = getattr(r.metrics, metric)
        if value is not None:
            per_task[r.task_id].append(value)
    return {task_id: sum(values) / len(values) for task_id, values in per_task.items()}


def _metric_stats(values: list[float]) -> MetricStats:
    """The mean of per-task values, its standard error and bootstrap interval."""
    estimate = bootstrap_mean(values)
    stderr = None
    if len(values) > 1:
        mean = sum(values) / len(values)
        variance = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
        stderr = math.sqrt(variance / len(values))
    return MetricStats(mean=estimate.mean, stderr=stderr, ci_low=estimate.low, ci_high=estimate.high, n=estimate.n)


def metric_stats(results: list[TaskResult], metric: str) -> MetricStats:
    """``metric``'s statistics over the tasks of ``results``, each task's epochs averaged first."""
    return _metric_stats(list(task_means(results, metric).values()))
