"""Comparing two runs on the tasks they share: per-metric differences with paired intervals and an exact
paired test, the tasks that flipped between solved and unsolved, and a breakdown by Masked category.

Runs scored in different modes (or a run whose rows mix modes) are not compared unless asked: their
numbers do not measure the same thing."""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import Field

from super_bench._names import METRICS
from super_bench._pydantic import Model
from super_bench.analysis import CAUSES, fully_succeeded
from super_bench.errors import ReportError
from super_bench.runner.waste import Waste, total
from super_bench.stats import MIN_PAIRED, SIGNIFICANCE, Estimate, paired_bootstrap, paired_permutation_test

from .runs import RunData, check_modes

SOLVED = 1.0 - 1e-9  # full marks: a task counts as solved only when its metric is 1


class PairedDiff(Model):
    """``other - base`` over the tasks where both runs define a metric."""

    n: int = Field(description="Paired tasks")
    base: float | None
    other: float | None
    diff: Estimate = Field(
        description=f"other - base with a paired bootstrap interval; [-1, 1] under {MIN_PAIRED} paired tasks"
    )
    p_value: float | None = Field(
        description=f"Exact paired permutation test (two-sided); null under {MIN_PAIRED} paired tasks"
    )

    @property
    def significant(self) -> bool:
        return self.p_value is not None and self.p_value < SIGNIFICANCE

    @property
    def verdict(self) -> str:
        """What the test says, in words."""
        if self.n == 0:
            return ""
        if self.p_value is None:
            return f"too few paired tasks (under {MIN_PAIRED})"
        return f"significant (p={self.p_value:.3g})" if self.significant else f"p={self.p_value:.2g}"


class MetricDiff(PairedDiff):
    metric: str


class CategoryDiff(PairedDiff):
    category: str


class TimeSpent(Model):
    """Seconds of one kind over the shared tasks, in each run; null where a run's rows do not record it."""

    kind: str = Field(description="A field of the rows' waste, or waited (held back for free disk or memory)")
    base: float | None
    other: float | None


NOT_ANALYSED = "not_analysed"  # a task that did not fully succeed in a row written before causes (see analyze)
SUCCEEDED = "none"  # fully succeeded: no cause


class CauseCount(Model):
    """Results (task-epochs) of the shared tasks whose primary failure cause is ``cause`` in each run: every
    epoch counts, as every epoch counts in the means the flips use."""

    cause: str = Field(description=f"A failure cause, {NOT_ANALYSED} (a row without one), or {SUCCEEDED} (succeeded)")
    base: int
    other: int


class CauseMove(Model):
    """A shared task whose causes differ between the runs: its epochs' causes, in epoch order, joined by
    commas."""

    task_id: str
    base: str
    other: str


class Comparison(Model):
    base: str
    other: str
    base_mode: str
    other_mode: str
    n_shared: int
    only_base: list[str]
    only_other: list[str]
    metrics: list[MetricDiff]
    flip_metric: str
    gained: list[str] = Field(description="Solved by the other run, not by the base")
    lost: list[str] = Field(description="Solved by the base run, not by the other")
    categories: list[CategoryDiff] = Field(default_factory=list, description="Masked categories, on flip_metric")
    time: list[TimeSpent] = Field(default_factory=list, description="Where the shared tasks' time went to waste")
    causes: list[CauseCount] = Field(default_factory=list, description="Shared tasks by primary failure cause")
    moved: list[CauseMove] = Field(default_factory=list, description="Shared tasks whose cause differs")


def compare_runs(
    base: RunData, other: RunData, metric: str | None = None, *, allow_mixed_modes: bool = False
) -> Comparison:
    """Compare ``other`` against ``base``; ``metric`` (default: the base's headline metric) drives flips
    and the category breakdown. Raises ReportError when the runs share no scored task, or were scored
    in different modes (unless ``allow_mixed_modes``)."""
    if not allow_mixed_modes:
        check_modes([base, other])
    metric = metric or base.primary_metric
    base_ids = {r.task_id for r in base.scored}
    other_ids = {r.task_id for r in other.scored}
    shared = base_ids & other_ids
    if not shared:
        raise ReportError(
            f"{other.path} and {base.path} have no scored task in common ({len(base_ids)} and {len(other_ids)} "
            "scored tasks); compare runs of the same tasks"
        )
    diffs = []
    for name in METRICS:
        a, b = _paired(base, other, name, shared)
        diffs.append(MetricDiff(metric=name, **_paired_diff(a, b)))
    a_values, b_values = base.values(metric), other.values(metric)
    paired_ids = sorted(shared & a_values.keys() & b_values.keys())
    gained = [t for t in paired_ids if b_values[t] >= SOLVED > a_values[t]]
    lost = [t for t in paired_ids if a_values[t] >= SOLVED > b_values[t]]
    by_category: dict[str, list[str]] = {}
    for task_id in paired_ids:
        for category in base.categories(task_id):
            by_category.setdefault(category, []).append(task_id)
    categories = [
        CategoryDiff(category=category, **_paired_diff([a_values[t] for t in ids], [b_values[t] for t in ids]))
        for category, ids in sorted(by_category.items())
    ]
    return Comparison(
        base=str(base.path),
        other=str(other.path),
        base_mode=base.mode,
        other_mode=other.mode,
        n_shared=len(shared),
        only_base=sorted(base_ids - other_ids),
        only_other=sorted(other_ids - base_ids),
        metrics=diffs,
        flip_metric=metric,
        gained=gained,
        lost=lost,
        categories=categories,
        time=_time_spent(base, other, shared),
        **_cause_shift(base, other, shared),
    )


def task_causes(run: RunData, ids: set[str]) -> dict[str, list[str]]:
    """Each of the scored tasks ``ids``' primary failure causes, one per epoch in epoch order: ``none`` where
    it fully succeeded, ``not_analysed`` where its row has no cause though it fell short (``super-bench
    analyze``)."""
    causes: dict[str, list[str]] = {}
    for r in sorted(run.scored, key=lambda r: r.key):
        if r.task_id in ids:
            cause = r.failure.cause if r.failure is not None else None
            causes.setdefault(r.task_id, []).append(
                cause or (SUCCEEDED if fully_succeeded(r.metrics) else NOT_ANALYSED)
            )
    return causes


def _cause_shift(base: RunData, other: RunData, shared: set[str]) -> dict[str, Any]:
    a, b = task_causes(base, shared), task_causes(other, shared)
    count_a = Counter(c for epochs in a.values() for c in epochs)
    count_b = Counter(c for epochs in b.values() for c in epochs)
    order = [*CAUSES, NOT_ANALYSED, SUCCEEDED]
    causes = [
        CauseCount(cause=c, base=count_a[c], other=count_b[c]) for c in order if c in CAUSES or count_a[c] or count_b[c]
    ]
    moved = [
        CauseMove(task_id=t, base=", ".join(a[t]), other=", ".join(b[t]))
        for t in sorted(shared)
        if Counter(a[t]) != Counter(b[t])  # both scored
    ]
    return {"causes": causes, "moved": moved}


def _time_spent(base: RunData, other: RunData, shared: set[str]) -> list[TimeSpent]:
    totals = []
    for run in (base, other):
        rows = [r for r in run.results if r.task_id in shared]
        waste = total(r.waste for r in rows)
        kinds: dict[str, float | None] = dict.fromkeys(Waste.model_fields)
        if waste is not None:
            kinds.update(waste.model_dump())
        kinds["waited"] = sum(r.waited for r in rows)
        totals.append(kinds)
    return [TimeSpent(kind=kind, base=totals[0][kind], other=totals[1][kind]) for kind in totals[0]]


def _paired_diff(a: list[float], b: list[float]) -> dict[str, Any]:
    return {
        "n": len(a),
        "base": _mean(a),
        "other": _mean(b),
        "diff": paired_bootstrap(a, b),
        "p_value": paired_permutation_test(a, b),
    }


def _paired(base: RunData, other: RunData, metric: str, shared: set[str]) -> tuple[list[float], list[float]]:
    a, b = base.values(metric), other.values(metric)
    ids = sorted(shared & a.keys() & b.keys())
    return [a[t] for t in ids], [b[t] for t in ids]


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None
