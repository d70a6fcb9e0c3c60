"""super-bench's metrics as Inspect scorers. They read the sample's trajectory, not the model's
messages, so a sample is graded exactly as in a super-bench run (``score_trajectory``).

A scorer gives no score for a task without its metric (no gold answer, no landmarks, no entrypoint).
"""

from __future__ import annotations

import json
from typing import Any

from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import TaskState

from super_bench.integrations.inspect_ext.notebook import sample_task, trajectory_of
from super_bench.scoring import Metrics, ScoreDetails, ScoreMode, score_trajectory, submission_of
from super_bench.tasks.model import Task
from super_bench.trajectory import Trajectory


def _graded(state: TaskState, mode: ScoreMode) -> tuple[Task, Trajectory, Metrics, ScoreDetails]:
    task = sample_task(state)
    trajectory = trajectory_of(state)
    metrics, details = score_trajectory(trajectory, task, mode)
    return task, trajectory, metrics, details


def _score(value: float | None, trajectory: Trajectory, explanation: str, **metadata: Any) -> Score | None:
    if value is None:
        return None
    return Score(
        value=value,
        answer=json.dumps(submission_of(trajectory)),
        explanation=explanation,
        metadata={"stop_reason": trajectory.stop_reason, "steps": len(trajectory.agent_steps), **metadata},
    )


@scorer(metrics=[mean(), stderr()])
def output_match(mode: ScoreMode = "corrected") -> Scorer:
    """The submitted answer against the gold one (numbers within 1e-2), in [0, 1]."""

    async def score(state: TaskState, target: Target) -> Score | None:
        task, trajectory, metrics, _ = _graded(state, mode)
        explanation = f"submitted {json.dumps(submission_of(trajectory))}; gold {json.dumps(task.answer)}"
        return _score(metrics.output_match, trajectory, explanation, mode=mode)

    return score


@scorer(metrics=[mean(), stderr()])
def landmarks() -> Scorer:
    """The fraction of the task's landmarks (milestone regexes) found in the outputs."""

    async def score(state: TaskState, target: Target) -> Score | None:
        task, trajectory, metrics, details = _graded(state, "corrected")
        lines = [
            f"{'found at step ' + str(index) if index is not None else 'not found'}: {pattern}"
            for pattern, index in zip(task.landmarks, details.landmark_steps)
        ]
        return _score(metrics.landmarks, trajectory, "\n".join(lines))

    return score


@scorer(metrics=[mean(), stderr()])
def entrypoint() -> Scorer:
    """1 if the task's script was really run (long enough, no traceback, no usage error), else 0."""

    async def score(state: TaskState, target: Target) -> Score | None:
        task, trajectory, metrics, details = _graded(state, "corrected")
        runs = details.entrypoint_runs
        lines = [f"step {run['step_index']}: {run['reason']}" for run in runs] or [f"{task.entrypoint} was never run"]
        return _score(metrics.entrypoint, trajectory, "\n".join(lines))

    return score
