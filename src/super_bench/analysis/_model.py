"""The record of a failure's primary cause, kept in result rows (``TaskResult.failure``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, get_args

from pydantic import Field

from super_bench._pydantic import Model
from super_bench.scoring import Metrics

Cause = Literal[
    "environment",  # installing, building or importing a dependency failed and was never fixed
    "resource",  # a dataset, model, checkpoint or file could not be obtained or found
    "repository_error",  # the repository's own code raised an error that was never fixed
    "compute",  # time or hardware stopped the work: timeouts, out of memory, CUDA required, budget spent
    "no_experiment",  # submitted or stopped without the run producing the reported values
    "wrong_result",  # the experiment ran and printed results, but the answer does not match
    "agent_format",  # most actions invalid or malformed: nothing meaningful ran
    "scoring_rule",  # a rule of the scoring mode, not the run, kept a metric short (the reference's 10-s entrypoint)
]
CAUSES: tuple[Cause, ...] = get_args(Cause)
# The seven read from a trajectory; ``scoring_rule`` comes from how the run was scored, and tables show it
# only where a row has it (``causes_shown``).
TRAJECTORY_CAUSES: tuple[Cause, ...] = CAUSES[:-1]

QUOTE_CHARS = 300  # the quoted line is cut to this many characters


class FailureCause(Model):
    """The primary cause of one task's failure, and what shows it."""

    cause: Cause
    step: int | None = Field(None, description="Index of the step whose output shows the cause; null if none does")
    quote: str = Field("", max_length=QUOTE_CHARS, description="The line of that step's output or action showing it")
    confidence: float = Field(ge=0.0, le=1.0, description="How sure the analysis is, from 0 to 1")
    reason: str = Field("", description="One sentence: why this cause")
    by: str = Field("rules", description="Who decided: rules (offline, deterministic) or judge:<model>")


def causes_shown(*counts: Mapping[str, int]) -> tuple[Cause, ...]:
    """The classes a table of ``counts`` shows: the seven, and ``scoring_rule`` where some count has it."""
    return CAUSES if any(c.get("scoring_rule") for c in counts) else TRAJECTORY_CAUSES


def fully_succeeded(metrics: Metrics) -> bool:
    """Whether every metric the task defines is at its best (1.0): such a task has no failure to explain."""
    values = [v for v in metrics.model_dump().values() if v is not None]
    return bool(values) and all(v >= 1.0 for v in values)
