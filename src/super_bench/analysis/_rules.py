"""The offline rules that find a failure's primary cause in a trajectory.

In order (docs/failure-analysis.md tells it with examples):

1. ``agent_format``: most of the agent's actions were invalid.
2. An answer whose values the run printed: ``wrong_result``, or ``no_experiment`` when the task's
   landmarks and entrypoint (those it defines) were all missed, so that what ran was not the experiment.
3. Else the blockers never resolved (see ``_blockers``): ``environment`` before ``resource`` before
   ``compute`` before ``repository_error``, as each can cause the next.
4. Else a budget stop right after a run that went through is ``compute``; anything else ``no_experiment``.
"""

from __future__ import annotations

from super_bench._names import BUDGET_STOPS
from super_bench.analysis._model import QUOTE_CHARS, Cause, FailureCause, fully_succeeded
from super_bench.analysis._resolve import blockers, runs
from super_bench.analysis._signals import last_line, strip_ansi
from super_bench.scoring import Metrics, ProvenanceStatus, answer_provenance
from super_bench.trajectory import Step, Trajectory

_SHOWN = ("observed", "partly_observed", "given")
_PRIORITY: tuple[Cause, ...] = ("environment", "resource", "compute", "repository_error")
_REASONS = {
    "environment": "installing or importing a dependency failed and was never fixed",
    "resource": "a file, dataset or model the run needs was never found",
    "compute": "the hardware or the time limit stopped the run, and it never ran through",
    "repository_error": "the repository's own code raised an error that was never fixed",
}


def analyze_failure(
    trajectory: Trajectory, metrics: Metrics, answer_provenance: ProvenanceStatus | None = None
) -> FailureCause | None:
    """The primary cause of the episode's failure; None when every metric the task defines is 1.0.

    ``answer_provenance`` is the answer's provenance status where the caller has it; else it is traced here.
    """
    if fully_succeeded(metrics) or all(v is None for v in metrics.model_dump().values()):
        return None  # nothing failed, or nothing is graded (an ad-hoc query): no failure to explain
    steps = trajectory.agent_steps
    invalid = [s for s in steps if s.outcome == "invalid"]
    if steps and len(invalid) * 2 > len(steps):
        return _cause(
            "agent_format",
            invalid[0],
            last_line(invalid[0].observation),
            0.8,
            f"{len(invalid)} of {len(steps)} actions were invalid",
        )
    shown = _shown_answer(trajectory, steps, answer_provenance)
    if shown is not None:
        step, line = shown
        process = [v for v in (metrics.landmarks, metrics.entrypoint) if v is not None]
        if process and not any(process):
            return _cause(
                "no_experiment",
                step,
                line,
                0.6,
                "the run printed the answer, but no landmark of the experiment was reached",
            )
        if metrics.output_match is not None and metrics.output_match >= 1.0:
            why = "the run printed the answer and it matches, but the run missed landmarks or the entrypoint asked for"
        else:
            why = "the run printed the values it reported, and they do not match"
        return _cause("wrong_result", step, line, 0.8, why)
    every = runs(steps)
    found = blockers(steps, every)
    if found:
        best = min(found, key=lambda b: (_PRIORITY.index(b.cause), b.first))
        return _cause(best.cause, best.step, best.line, best.confidence, _REASONS[best.cause] + best.note)
    attempts = [r for r in every if r.experiment]
    last = attempts[-1] if attempts else None
    if trajectory.stop_reason in BUDGET_STOPS and last is not None and not last.problems and last.step.outcome == "ok":
        final = steps[-1]
        line = last_line(final.raw_output) or last_line(str(final.action.content or "")) or str(trajectory.stop_reason)
        return _cause(
            "compute",
            final,
            line,
            0.6,
            f"the run went through (step {last.step.index}), then the {trajectory.stop_reason} budget ran out",
        )
    if last is not None and last.problems:
        problem = last.problems[-1]
        return _cause(
            "no_experiment", last.step, problem.line, 0.5, "the run never went through to the reported values"
        )
    valid = [s for s in steps if s.outcome != "invalid"] or steps
    end = valid[-1] if valid else None
    line = last_line(end.raw_output) if end is not None else ""
    return _cause("no_experiment", end, line, 0.4, "no run of the experiment went through")


def _shown_answer(
    trajectory: Trajectory, steps: list[Step], status: ProvenanceStatus | None
) -> tuple[Step | None, str] | None:
    """Where the run printed the submitted values (step, line), if the answer's provenance says it did."""
    if trajectory.submission is None:
        return None
    trace = answer_provenance(trajectory)
    status = status or (trace.status if trace is not None else None)
    if status not in _SHOWN:
        return None
    by_index = {s.index: s for s in trajectory.steps}
    for field in trace.fields if trace is not None else []:
        step = by_index.get(field.step if field.step is not None else -1)
        if step is not None and field.offset is not None:
            text = step.raw_output
            start = text.rfind("\n", 0, field.offset) + 1
            end = text.find("\n", field.offset)
            return step, text[start : end if end >= 0 else len(text)].strip()
    return (steps[-1] if steps else None), ""


def _cause(cause: Cause, step: Step | None, line: str, confidence: float, reason: str) -> FailureCause:
    return FailureCause(
        cause=cause,
        step=step.index if step is not None else None,
        quote=strip_ansi(line).strip()[:QUOTE_CHARS],
        confidence=confidence,
        reason=reason,
    )
