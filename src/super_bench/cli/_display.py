"""Rich rendering of scores and progress."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.progress import Task as ProgressTask
from rich.table import Table
from rich.text import Text

from super_bench._names import BUDGET_STOPS, METRICS
from super_bench.trajectory import Usage

if TYPE_CHECKING:
    from super_bench.runner.results import MetricStats, Summary, TaskResult
    from super_bench.tasks.model import Task

console = Console()
err_console = Console(stderr=True)
MAX_TASK_ROWS = 60


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def score_table(results: list[TaskResult], summary: Summary, title: str = "Scores") -> Table:
    epochs = summary.epochs > 1
    table = Table(title=title, title_justify="left", caption=_counts(summary), caption_justify="left")
    table.add_column("task")
    if epochs:
        table.add_column("epoch", justify="right")
    table.add_column("status")
    table.add_column("stop reason")
    table.add_column("steps", justify="right")
    for name in METRICS:
        table.add_column(name.replace("_", " "), justify="right")
    table.add_column("time (s)", justify="right")
    blank = [""] * (3 + epochs)
    if len(results) <= MAX_TASK_ROWS:
        for r in sorted(results, key=lambda r: (r.task_id, r.epoch)):
            style = "red" if r.status != "completed" else None
            table.add_row(
                r.task_id,
                *([str(r.epoch)] if epochs else []),
                r.status,
                r.stop_reason or "-",
                str(r.n_steps),
                *(_fmt(getattr(r.metrics, m)) for m in METRICS),
                f"{r.wall_time:.1f}",
                style=style,
            )
        table.add_section()
    table.add_row(
        f"mean over {summary.n_scored} of {summary.n_tasks}",
        *blank,
        *(_fmt(summary.metrics.get(m)) for m in METRICS),
        "",
        style="bold",
    )
    if any(s.n > 1 for s in summary.stats.values()):
        table.add_row("95% CI over tasks", *blank, *(_interval(summary.stats.get(m)) for m in METRICS), "")
    return table


def _interval(stats: MetricStats | None) -> str:
    if stats is None or stats.n < 2 or stats.ci_low is None or stats.ci_high is None:
        return "-"
    return f"{stats.ci_low:.2f}-{stats.ci_high:.2f}"


def _counts(summary: Summary) -> str | None:
    """Infrastructure failures and retries, which the means leave out."""
    parts = []
    if summary.infra_errors:
        parts.append(f"{summary.infra_errors} infrastructure failure(s), left out of the means")
    if summary.retries:
        parts.append(f"{summary.retries} attempt(s) retried after an infrastructure failure")
    return "; ".join(parts) or None


def print_summary(results: list[TaskResult], summary: Summary, title: str = "Scores") -> None:
    console.print(score_table(results, summary, title))
    budget = {k: v for k, v in summary.stop_reasons.items() if k in BUDGET_STOPS}
    notes = []
    if budget:
        notes.append("stopped by a budget: " + ", ".join(f"{k} {v}" for k, v in sorted(budget.items())))
    if summary.status_counts.get("agent_error"):
        notes.append(f"agent_error (the agent's own code raised): {summary.status_counts['agent_error']}")
    if summary.usage.model_calls:
        cached = f" ({summary.usage.cached_calls} from the cache)" if summary.usage.cached_calls else ""
        notes.append(
            f"model: {summary.usage.model_calls} calls{cached}, {summary.usage.prompt_tokens:,} prompt + "
            f"{summary.usage.completion_tokens:,} completion tokens, ${summary.usage.cost:.4f}"
        )
    for note in notes:
        console.print(f"  {note}")


class _EtaColumn(ProgressColumn):
    """Time left at the pace of the tasks finished since this run (or resume) began."""

    def render(self, task: ProgressTask) -> Text:
        finished, started = task.fields.get("finished_now", 0), task.fields.get("started_at")
        if not finished or started is None or task.total is None:
            return Text("ETA -:--:--", style="progress.remaining")
        elapsed = time.monotonic() - started
        left = max(0.0, (task.total - task.completed) * elapsed / finished)
        return Text(f"ETA {timedelta(seconds=round(left))}", style="progress.remaining")


class RunProgress:
    """The live display of a run (a runner ``Reporter``): done / running / failed, the time left,
    and the tokens and cost of the finished tasks."""

    def __init__(self) -> None:
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("[bold]tasks"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[counts]}"),
            TimeElapsedColumn(),
            _EtaColumn(),
            TextColumn("{task.fields[usage]}"),
            console=err_console,
        )
        self.bar: TaskID | None = None
        self.running = self.failed = self.infra = self.retried = self.finished_now = 0
        self.usage = Usage()

    def __enter__(self) -> RunProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def begin(self, total: int, finished: list[TaskResult]) -> None:
        for result in finished:
            self._count(result)
        self.bar = self.progress.add_task(
            "tasks", total=total, completed=len(finished), started_at=time.monotonic(), counts="", usage=""
        )
        self._refresh()
        if finished:
            err_console.print(f"resuming: {len(finished)} of {total} tasks already finished")

    def task_started(self, task: Task) -> None:
        self.running += 1
        self._refresh()

    def task_retried(self, result: TaskResult) -> None:
        self.running -= 1
        self.retried += 1
        err_console.print(f"[yellow]{result.task_id}: infrastructure failure, trying again: {result.error}")
        self._refresh()

    def task_finished(self, result: TaskResult) -> None:
        self.running -= 1
        self.finished_now += 1
        self._count(result)
        self._refresh(advance=1)

    def _count(self, result: TaskResult) -> None:
        self.failed += result.status == "agent_error"
        self.infra += result.status == "infra_error"
        self.usage.add(result.usage)

    def _refresh(self, advance: int = 0) -> None:
        if self.bar is None:
            return
        counts = [f"{self.running} running"]
        if self.failed:
            counts.append(f"[red]{self.failed} failed[/]")
        if self.infra:
            counts.append(f"[red]{self.infra} infra errors[/]")
        if self.retried:
            counts.append(f"{self.retried} retried")
        usage = ""
        if self.usage.model_calls:
            usage = f"{self.usage.prompt_tokens + self.usage.completion_tokens:,} tokens ${self.usage.cost:.2f}"
        self.progress.update(
            self.bar, advance=advance, counts=" ".join(counts), usage=usage, finished_now=self.finished_now
        )
