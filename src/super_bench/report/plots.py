"""PNG plots over runs (the ``plots`` extra): a metric by Masked category, and score against cost."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from super_bench.errors import ConfigError
from super_bench.stats import Estimate, bootstrap_mean

from .runs import RunData

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _figure(width: float, height: float) -> Figure:
    try:
        from matplotlib.figure import Figure
    except ImportError as e:
        raise ConfigError("plots need matplotlib: pip install 'super-bench[plots]'") from e
    # A bare Figure renders with the Agg canvas: no GUI backend, no global pyplot state.
    return Figure(figsize=(width, height), layout="constrained")


def _errors(estimates: Sequence[Estimate]) -> list[list[float]]:
    """Matplotlib's asymmetric error bars (below, above), in percent."""
    below = [((e.mean or 0.0) - (e.low or 0.0)) * 100 for e in estimates]
    above = [((e.high or 0.0) - (e.mean or 0.0)) * 100 for e in estimates]
    return [below, above]


def metric_by_category(runs: Sequence[RunData], metric: str) -> dict[str, dict[str, Estimate]]:
    """Per run, per category, the metric's estimate. Tasks with no Masked category count under their set."""
    table: dict[str, dict[str, Estimate]] = {}
    for run in runs:
        groups: dict[str, list[float]] = {}
        sets = {r.task_id: r.task_set for r in run.results}
        for task_id, value in run.values(metric).items():
            for category in run.categories(task_id) or [sets[task_id]]:
                groups.setdefault(category, []).append(value)
        table[run.name] = {c: bootstrap_mean(v) for c, v in sorted(groups.items())}
    return table


def plot_metric_by_category(runs: Sequence[RunData], out: Path, metric: str = "output_match") -> Path:
    """Grouped bars: one group per category, one bar per run, with 95% bootstrap intervals."""
    table = metric_by_category(runs, metric)
    categories = sorted({c for per_run in table.values() for c in per_run})
    if not categories:
        raise ConfigError(f"no task in these runs defines {metric}; nothing to plot")
    figure = _figure(max(6.0, 1.1 * len(categories) * max(1, len(runs)) ** 0.5 + 2), 4.5)
    axes = figure.subplots()
    width = 0.8 / len(runs)
    for i, run in enumerate(runs):
        present = [c for c in categories if c in table[run.name]]
        estimates = [table[run.name][c] for c in present]
        positions = [categories.index(c) + (i - (len(runs) - 1) / 2) * width for c in present]
        heights = [(e.mean or 0.0) * 100 for e in estimates]
        axes.bar(positions, heights, width, yerr=_errors(estimates), capsize=3, label=run.name)
    axes.set_xticks(range(len(categories)), [f"{c}\n(n={_n(table, c)})" for c in categories])
    axes.set_ylabel(f"{metric.replace('_', ' ')} (%)")
    axes.set_ylim(0, 100)
    axes.set_title(f"{metric.replace('_', ' ')} by category")
    axes.legend(fontsize="small")
    return _save(figure, out)


def plot_score_vs_cost(runs: Sequence[RunData], out: Path, metric: str | None = None) -> Path:
    """One point per run: its headline metric (with 95% interval) against its total model cost; runs
    whose cost is unknown have no point."""
    figure = _figure(6.5, 4.5)
    axes = figure.subplots()
    for run in runs:
        name = metric or run.primary_metric
        estimate, cost = run.estimates[name], run.cost
        if estimate.mean is None or cost is None:
            continue
        axes.errorbar([cost], [estimate.mean * 100], yerr=_errors([estimate]), fmt="o", capsize=4, label=run.name)
        axes.annotate(run.name, (cost, estimate.mean * 100), textcoords="offset points", xytext=(6, 4), fontsize=8)
    axes.set_xlabel("total model cost ($)")
    axes.set_ylabel(f"{(metric or 'headline metric').replace('_', ' ')} (%)")
    axes.set_ylim(0, 100)
    axes.set_title("score against cost")
    if not any(run.cost for run in runs):
        axes.text(0.5, 0.02, "no run recorded a cost", transform=axes.transAxes, ha="center", fontsize=8)
    return _save(figure, out)


def _n(table: dict[str, dict[str, Estimate]], category: str) -> int:
    return max((per_run[category].n for per_run in table.values() if category in per_run), default=0)


def _save(figure: Figure, out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=120)
    return out
