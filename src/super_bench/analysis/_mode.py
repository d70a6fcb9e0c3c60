"""A failure that is the scoring mode's, not the run's: the reference harness counted a run of the entrypoint
only if its cell took 10 seconds or more (``scoring.reference``). A gold run whose script finishes faster,
re-scored in reference mode, falls short on that rule alone; ``scoring_rule`` names it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from super_bench.analysis._model import QUOTE_CHARS, FailureCause
from super_bench.scoring import Metrics
from super_bench.scoring.reference import REFERENCE_MIN_RUNTIME


def scoring_rule_cause(mode: str | None, metrics: Metrics, entrypoint_runs: Sequence[Any]) -> FailureCause | None:
    """``scoring_rule`` where a reference-mode score fell short only on the entrypoint, and a run of it failed
    the reference's rule by its time alone (``entrypoint_runs``: the row's ``details.entrypoint_runs``)."""
    if mode != "reference" or metrics.entrypoint is None or metrics.entrypoint >= 1.0:
        return None
    others = [v for v in (metrics.output_match, metrics.landmarks) if v is not None]
    if not all(v >= 1.0 for v in others):
        return None  # something else fell short too: the run's failure, read from its trajectory
    short = [
        r
        for r in entrypoint_runs
        if isinstance(r, dict) and r.get("success") is False and str(r.get("reason", "")).startswith("took ")
    ]
    if not short:
        return None
    run = short[-1]
    step = run.get("step_index")
    return FailureCause(
        cause="scoring_rule",
        step=step if isinstance(step, int) else None,
        quote=str(run.get("reason", ""))[:QUOTE_CHARS],
        confidence=0.9,
        reason=f"the reference's entrypoint rule: the entrypoint ran, but a run counts only if its cell took "
        f"{REFERENCE_MIN_RUNTIME:g} s or more (corrected mode counts it)",
    )
