"""Failure analysis: why a task that did not fully succeed failed, read from its trajectory alone.

``analyze_failure`` gives one primary cause (``FailureCause``): the first blocker the agent never resolved
on the way to an answer, with the step and the line that show it and a confidence. It is offline and
deterministic; docs/failure-analysis.md describes the classes, with examples. ``judge_failure`` asks a chat
model, optionally, to confirm or correct it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from super_bench.analysis._mode import scoring_rule_cause
from super_bench.analysis._model import CAUSES, TRAJECTORY_CAUSES, Cause, FailureCause, causes_shown, fully_succeeded
from super_bench.analysis._rules import analyze_failure

if TYPE_CHECKING:
    from super_bench.analysis._judge import judge_failure


def __getattr__(name: str) -> Any:
    # The judge needs the model layer; every scored row needs only the rules, so it is loaded when asked for.
    if name == "judge_failure":
        from super_bench.analysis._judge import judge_failure

        return judge_failure
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CAUSES",
    "TRAJECTORY_CAUSES",
    "Cause",
    "FailureCause",
    "analyze_failure",
    "causes_shown",
    "fully_succeeded",
    "judge_failure",
    "scoring_rule_cause",
]
