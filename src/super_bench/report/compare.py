"""Comparing two runs on the tasks they share: per-metric differences with paired bootstrap intervals,
the tasks that flipped between solved and unsolved, and a breakdown by Masked category."""

from __future__ import annotations

from pydantic import BaseModel, Field

from super_bench._names import METRICS

from .runs import RunData
from .stats import Estimate, paired_bootstrap

SOLVED = 1.0 - 1e-9  # full marks: a task counts as solved only when its metric is 1


class MetricDiff(BaseModel):
    metric: str
    n: int = Field(description="Shared tasks where both runs define the metric")
    base: float | None
    other: float | None
    diff: Estimate = Field(description="other - base, with a paired bootstrap interval")


class CategoryDiff(BaseModel):
    category: str
    n: int
    base: float | None
    other: float | None
    diff: Estimate


class Comparison(BaseModel):
    base: str
    other: str
    n_shared: int
    only_base: list[str]
    only_other: list[str]
    metrics: list[MetricDiff]
    flip_metric: str
    gained: list[str] = Field(description="Solved by the other run, not by the base")
    lost: list[str] = Field(description="Solved by the base run, not by the other")
    categories: list[CategoryDiff] = Field(default_factory=list, description="Masked categories, on flip_metric")


def compare_runs(base: RunData, other: RunData, metric: str | None = None) -> Comparison:
    """Compare ``other`` against ``base``; ``metric`` (default: the base's headline metric) drives flips
    and the category breakdown."""
    metric = metric or base.primary_metric
    base_ids = {r.task_id for r in base.scored}
    other_ids = {r.task_id for r in other.scored}
    shared = base_ids & other_ids
    diffs = []
    for name in METRICS:
        a, b = _paired(base, other, name, shared)
        diffs.append(MetricDiff(metric=name, n=len(a), base=_mean(a), other=_mean(b), diff=paired_bootstrap(a, b)))
    a_values, b_values = base.values(metric), other.values(metric)
    paired_ids = sorted(shared & a_values.keys() & b_values.keys())
    gained = [t for t in paired_ids if b_values[t] >= SOLVED > a_values[t]]
    lost = [t for t in paired_ids if a_values[t] >= SOLVED > b_values[t]]
    by_category: dict[str, list[str]] = {}
    for task_id in paired_ids:
        for category in base.categories(task_id):
            by_category.setdefault(category, []).append(task_id)
    categories = []
    for category, ids in sorted(by_category.items()):
        a = [a_values[t] for t in ids]
        b = [b_values[t] for t in ids]
        categories.append(
            CategoryDiff(category=category, n=len(ids), base=_mean(a), other=_mean(b), diff=paired_bootstrap(a, b))
        )
    return Comparison(
        base=str(base.path),
        other=str(other.path),
        n_shared=len(shared),
        only_base=sorted(base_ids - other_ids),
        only_other=sorted(other_ids - base_ids),
        metrics=diffs,
        flip_metric=metric,
        gained=gained,
        lost=lost,
        categories=categories,
    )


def _paired(base: RunData, other: RunData, metric: str, shared: set[str]) -> tuple[list[float], list[float]]:
    a, b = base.values(metric), other.values(metric)
    ids = sorted(shared & a.keys() & b.keys())
    return [a[t] for t in ids], [b[t] for t in ids]


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None
