"""Failure analysis: why a task that did not fully succeed failed, read from its trajectory alone.

``analyze_failure`` gives one primary cause (``FailureCause``): the first blocker the agent never resolved
on the way to an answer, with the step and the line that show it and a confidence. It is offline and
deterministic; docs/failure-analysis.md describes the classes, with examples. ``judge_failure`` asks a chat
model, optionally, to confirm or correct it.
"""

from __future__ import annotations

from super_bench.analysis._judge import judge_failure
from super_bench.analysis._model import CAUSES, Cause, FailureCause, fully_succeeded
from super_bench.analysis._rules import analyze_failure

__all__ = ["CAUSES", "Cause", "FailureCause", "analyze_failure", "fully_succeeded", "judge_failure"]
