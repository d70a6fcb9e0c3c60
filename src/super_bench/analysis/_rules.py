"""The offline rules that find a failure's primary cause in a trajectory."""

from __future__ import annotations

from super_bench.analysis._model import QUOTE_CHARS, FailureCause, fully_succeeded
from super_bench.scoring import Metrics, ProvenanceStatus
from super_bench.trajectory import Trajectory

_BUDGETS = ("max_steps", "max_tokens", "max_cost", "max_compute", "max_wall_time", "max_disk")


def analyze_failure(
    trajectory: Trajectory, metrics: Metrics, answer_provenance: ProvenanceStatus | None = None
) -> FailureCause | None:
    """The primary cause of the episode's failure; None when every metric the task defines is 1.0."""
    if fully_succeeded(metrics):
        return None
    steps = trajectory.agent_steps
    invalid = [s for s in steps if s.outcome == "invalid"]
    if steps and len(invalid) * 2 > len(steps):
        return _cause("agent_format", invalid[0].index, invalid[0].raw_output, 0.8, "most actions were invalid")
    for step in steps:
        if step.outcome == "timeout":
            return _cause("compute", step.index, step.raw_output, 0.6, "a cell ran out of time")
    if trajectory.stop_reason in _BUDGETS:
        last = steps[-1] if steps else None
        return _cause(
            "compute", last.index if last else None, last.raw_output if last else "", 0.5, "a budget ran out mid-work"
        )
    if trajectory.submission is not None and answer_provenance in ("observed", "partly_observed", "given"):
        return _cause("wrong_result", None, "", 0.5, "the run printed the values it reported, and they do not match")
    return _cause("no_experiment", None, "", 0.4, "nothing the run printed shows the reported values")


def _cause(cause: str, step: int | None, text: str, confidence: float, reason: str) -> FailureCause:
    line = next((ln.strip() for ln in reversed(text.splitlines()) if ln.strip()), "")
    return FailureCause.model_validate(
        {"cause": cause, "step": step, "quote": line[:QUOTE_CHARS], "confidence": confidence, "reason": reason}
    )
