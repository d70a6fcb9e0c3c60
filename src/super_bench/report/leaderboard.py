"""A leaderboard over several runs, as Markdown or CSV: one row per run, best headline metric first, with
the mode each run was scored in (the CLI refuses runs of different modes unless told otherwise)."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

from super_bench._names import METRICS
from super_bench.analysis import CAUSES, causes_shown
from super_bench.stats import Estimate

from .runs import RunData

# tasks: distinct tasks; epochs: how many times each ran; scored: results (task-epochs) in the means.
COLUMNS = ("run", "agent", "model", "set", "mode", "tasks", "epochs", "scored")
TAIL_COLUMNS = ("cost_usd", "execution_time_s", "wall_time_s")


def ranked(runs: Sequence[RunData]) -> list[RunData]:
    """Runs grouped by task set, best headline metric first."""

    def key(run: RunData) -> tuple[str, float]:
        mean = run.estimates[run.primary_metric].mean
        return run.task_set, -(mean if mean is not None else -1.0)

    return sorted(runs, key=key)


def leaderboard_rows(runs: Sequence[RunData], causes: bool = False) -> list[dict[str, Any]]:
    """One dict per run, ranked: identity, each metric's mean and 95% interval, cost (None where unknown)
    and time; with ``causes``, its failed tasks per primary cause (``cause_<class>``)."""
    rows = []
    for run in ranked(runs):
        row: dict[str, Any] = {
            "run": run.name,
            "agent": run.agent or "",
            "model": run.model or "",
            "set": run.task_set,
            "mode": run.mode,
            "tasks": n_tasks(run),
            "epochs": run.summary.epochs,
            "scored": run.summary.n_scored,
        }
        for metric in METRICS:
            estimate = run.estimates[metric]
            row[metric] = estimate.mean
            row[f"{metric}_low"] = estimate.low
            row[f"{metric}_high"] = estimate.high
        row["cost_usd"] = run.cost
        row["execution_time_s"] = run.summary.execution_time
        row["wall_time_s"] = run.wall_time
        if causes:
            row.update({f"cause_{c}": run.summary.failure_causes.get(c, 0) for c in CAUSES})
        rows.append(row)
    return rows


def to_csv(runs: Sequence[RunData], causes: bool = False) -> str:
    rows = leaderboard_rows(runs, causes)
    fields = [*COLUMNS, *(f"{m}{s}" for m in METRICS for s in ("", "_low", "_high")), *TAIL_COLUMNS]
    fields += [f"cause_{c}" for c in CAUSES] if causes else []
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if v is None else v for k, v in row.items()})
    return out.getvalue()


LABELS = 6  # the leading columns that name a run; the rest are numbers


def leaderboard_cells(runs: Sequence[RunData], causes: bool = False) -> tuple[list[str], list[list[str]]]:
    """The header and, per run (ranked), its cells as text: metrics as percentages with their 95% bootstrap
    interval, and with ``causes`` the failed tasks per primary cause. Markdown and the terminal's table show
    the same."""
    header = [*COLUMNS[:-1], *(m.replace("_", " ") for m in METRICS), "cost ($)", "time (h)"]
    shown = causes_shown(*(run.summary.failure_causes for run in runs))
    header += [c.replace("_", " ") for c in shown] if causes else []
    rows = []
    for run in ranked(runs):
        cells = [run.name, run.agent or "", run.model or "", run.task_set, run.mode]
        cells += [str(n_tasks(run)), str(run.summary.epochs)]
        cells += [format_estimate(run.estimates[m]) for m in METRICS]
        cells += ["-" if run.cost is None else f"{run.cost:.2f}", f"{run.wall_time / 3600:.2f}"]
        cells += [str(run.summary.failure_causes.get(c, 0)) for c in shown] if causes else []
        rows.append(cells)
    return header, rows


def n_tasks(run: RunData) -> int:
    """The distinct tasks a run holds (its results count each task once per epoch)."""
    return len({r.task_id for r in run.results})


def to_markdown(runs: Sequence[RunData], causes: bool = False) -> str:
    """A Markdown table; metrics as percentages with their 95% bootstrap interval."""
    header, rows = leaderboard_cells(runs, causes)
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---"] * LABELS + ["---:"] * (len(header) - LABELS)) + "|",
    ]
    for cells in rows:
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def format_estimate(estimate: Estimate) -> str:
    """``41.2 [33.0, 49.5]`` (percent), or ``-`` where no task defines the metric."""
    if estimate.mean is None or estimate.low is None or estimate.high is None:
        return "-"
    return f"{estimate.mean * 100:.1f} [{estimate.low * 100:.1f}, {estimate.high * 100:.1f}]"
