"""Per-task results (``results.jsonl``) and the run summary (``summary.json``)."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from super_bench._names import METRICS
from super_bench.scoring import Metrics
from super_bench.trajectory import StopReason, Usage

TaskStatus = Literal["completed", "agent_error", "infra_error"]


class TaskResult(BaseModel):
    """One line of ``results.jsonl``."""

    model_config = ConfigDict(extra="ignore")

    task_id: str
    task_set: str
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
    trajectory: str | None = Field(None, description="Path of trajectory.json, relative to the run directory")
    details: dict[str, Any] = Field(default_factory=dict, description="Scoring details (landmark steps, ...)")


class Summary(BaseModel):
    """``summary.json``: means over scored tasks, and counts of everything else."""

    n_tasks: int
    n_scored: int = Field(description="Tasks in the means: every task but infrastructure failures")
    metrics: dict[str, float | None]
    status_counts: dict[str, int]
    stop_reasons: dict[str, int]
    usage: Usage
    execution_time: float
    mode: str = "corrected"


def summarize(results: list[TaskResult], mode: str = "corrected") -> Summary:
    """Means of each metric over the tasks that define it, leaving out infrastructure failures."""
    scored = [r for r in results if r.status != "infra_error"]
    means: dict[str, float | None] = {}
    for name in METRICS:
        values = [v for r in scored if (v := getattr(r.metrics, name)) is not None]
        means[name] = sum(values) / len(values) if values else None
    usage = Usage()
    for r in results:
        usage.add(r.usage)
    return Summary(
        n_tasks=len(results),
        n_scored=len(scored),
        metrics=means,
        status_counts=dict(Counter(r.status for r in results)),
        stop_reasons=dict(Counter(r.stop_reason or "unknown" for r in results)),
        usage=usage,
        execution_time=sum(r.execution_time for r in results),
        mode=mode,
    )
