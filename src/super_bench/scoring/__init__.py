"""Scoring: output match, landmarks, script-executed and submitted, from a trajectory alone; and beside
them the answer's provenance (``provenance``), which changes no metric."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from super_bench._names import METRICS, SCORE_MODES, ScoreMode
from super_bench._pydantic import Model
from super_bench.reading import grammar_of
from super_bench.scoring.answer import compare_answer, score_answer
from super_bench.scoring.entrypoint import entrypoint_runs
from super_bench.scoring.landmarks import find_landmarks, landmark_steps, raw_text
from super_bench.scoring.provenance import (
    PROVENANCE_KEY,
    PROVENANCE_STATUSES,
    AnswerProvenance,
    FieldProvenance,
    ProvenanceStatus,
    trace_answer,
)
from super_bench.scoring.reference import (
    kept_text,
    reference_entrypoint_runs,
    reference_output_match,
    reference_submission,
)
from super_bench.scoring.submission import parse_answer, submission_of
from super_bench.scoring.texts import Chunks, outputs
from super_bench.tasks.model import Task
from super_bench.trajectory import Trajectory


class Metrics(Model):
    """A task's scores; None where the task does not define the metric."""

    output_match: float | None = None
    landmarks: float | None = None
    entrypoint: float | None = None
    submitted: float | None = 0.0  # None where the task has no answer to submit (corrected mode)


class ScoreDetails(Model):
    """Why the metrics are what they are (shown by the viewer)."""

    landmark_steps: list[int | None] = Field(default_factory=list, description="First matching step per landmark")
    entrypoint_runs: list[dict[str, Any]] = Field(default_factory=list)
    format_mismatches: list[str] = Field(
        default_factory=list,
        description="Corrected mode: where a percentage was given for a fraction, or the reverse (scored 0)",
    )
    provenance: AnswerProvenance | None = Field(
        None,
        description="Where each submitted value was first shown in the run's output; null if nothing was submitted",
    )

    @property
    def answer_provenance(self) -> ProvenanceStatus | None:
        return self.provenance.status if self.provenance is not None else None


def answer_provenance(trajectory: Trajectory) -> AnswerProvenance | None:
    """Where each value the episode submitted first appears in its agent's output (None: nothing submitted)."""
    return trace_answer(submission_of(trajectory), trajectory.steps, grammar=grammar_of(trajectory))


def note_provenance(trajectory: Trajectory) -> AnswerProvenance | None:
    """The answer's provenance, also kept in the trajectory's metadata (``answer_provenance``: each value,
    its step and printed text), so that the trajectory tells it without the run's results."""
    provenance = answer_provenance(trajectory)
    if provenance is None:
        trajectory.metadata.pop(PROVENANCE_KEY, None)
    else:
        trajectory.metadata[PROVENANCE_KEY] = provenance.model_dump(mode="json")
    return provenance


def score_trajectory(trajectory: Trajectory, task: Task, mode: ScoreMode = "corrected") -> tuple[Metrics, ScoreDetails]:
    """Score one episode against its task, offline."""
    if mode not in SCORE_MODES:
        raise ValueError(f"unknown scoring mode {mode!r}; use {' or '.join(map(repr, SCORE_MODES))}")
    reference = mode == "reference"
    submission = submission_of(trajectory)
    # The raw outputs joined for search, once for the answer's provenance and the landmarks.
    shown = Chunks(trajectory.steps, outputs)
    # The answer as given, in either mode: where it came from is no question of the scoring rules.
    details = ScoreDetails(provenance=trace_answer(submission, trajectory.steps, shown, grammar_of(trajectory)))
    if reference:
        submission = reference_submission(submission)
    # A task without an answer (Auto) has nothing to submit: the reference counted it all the same.
    metrics = Metrics(submitted=float(submission is not None) if task.answer is not None or reference else None)
    if task.answer is not None:
        if reference:
            metrics.output_match = reference_output_match(submission, task.answer)
        else:
            metrics.output_match, details.format_mismatches = compare_answer(submission, task.answer)
    text = kept_text(trajectory) if reference else raw_text
    if task.landmarks:
        if reference:
            details.landmark_steps = landmark_steps(task.landmarks, trajectory.steps, text)
        else:
            details.landmark_steps = find_landmarks(task.landmarks, shown)
        metrics.landmarks = sum(s is not None for s in details.landmark_steps) / len(task.landmarks)
    if task.entrypoint:
        if reference:
            runs = reference_entrypoint_runs(task.entrypoint, trajectory.steps, text)
        else:
            runs = entrypoint_runs(task.entrypoint, trajectory.steps, task.effective_min_runtime)
        if runs is not None:
            details.entrypoint_runs = [vars(run) for run in runs]
            metrics.entrypoint = float(any(run.success for run in runs))
    return metrics, details


__all__ = [
    "METRICS",
    "PROVENANCE_KEY",
    "PROVENANCE_STATUSES",
    "SCORE_MODES",
    "AnswerProvenance",
    "FieldProvenance",
    "Metrics",
    "ProvenanceStatus",
    "ScoreDetails",
    "ScoreMode",
    "answer_provenance",
    "note_provenance",
    "parse_answer",
    "score_answer",
    "score_trajectory",
    "submission_of",
    "trace_answer",
]
