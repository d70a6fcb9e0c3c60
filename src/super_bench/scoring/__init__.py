"""Scoring: output match, landmarks, script-executed and submitted, from a trajectory alone."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from super_bench._names import METRICS
from super_bench.scoring.answer import ScoreMode, score_answer
from super_bench.scoring.entrypoint import entrypoint_runs
from super_bench.scoring.landmarks import landmark_steps
from super_bench.tasks.model import Task
from super_bench.trajectory import Trajectory


class Metrics(BaseModel):
    """A task's scores; None where the task does not define the metric."""

    output_match: float | None = None
    landmarks: float | None = None
    entrypoint: float | None = None
    submitted: float = 0.0


class ScoreDetails(BaseModel):
    """Why the metrics are what they are (shown by the viewer)."""

    landmark_steps: list[int | None] = Field(default_factory=list, description="First matching step per landmark")
    entrypoint_runs: list[dict[str, Any]] = Field(default_factory=list)


def submission_of(trajectory: Trajectory) -> Any:
    """The answer the agent submitted, or None: the last action must be an accepted submit."""
    if not trajectory.submitted or not trajectory.steps:
        return None
    last = trajectory.steps[-1]
    return trajectory.submission if last.action.type == "submit" and last.outcome != "invalid" else None


def score_trajectory(trajectory: Trajectory, task: Task, mode: ScoreMode = "corrected") -> tuple[Metrics, ScoreDetails]:
    """Score one episode against its task, offline."""
    submission = submission_of(trajectory)
    metrics = Metrics(submitted=float(submission is not None))
    details = ScoreDetails()
    if task.answer is not None:
        metrics.output_match = score_answer(submission, task.answer, mode)
    if task.landmarks:
        details.landmark_steps = landmark_steps(task.landmarks, trajectory.steps)
        metrics.landmarks = sum(s is not None for s in details.landmark_steps) / len(task.landmarks)
    if task.entrypoint:
        runs = entrypoint_runs(task.entrypoint, trajectory.steps, task.effective_min_runtime)
        details.entrypoint_runs = [vars(run) for run in runs]
        metrics.entrypoint = float(any(run.success for run in runs))
    return metrics, details


__all__ = [
    "METRICS",
    "Metrics",
    "ScoreDetails",
    "ScoreMode",
    "score_answer",
    "score_trajectory",
    "submission_of",
]
