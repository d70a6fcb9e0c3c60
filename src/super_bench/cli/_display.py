"""Rich rendering of scores and progress."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from super_bench._names import BUDGET_STOPS, METRICS

if TYPE_CHECKING:
    from super_bench.runner.results import Summary, TaskResult
    from super_bench.tasks.model import Task

console = Console()
err_console = Console(stderr=True)
MAX_TASK_ROWS = 60


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def score_table(results: list[TaskResult], summary: Summary, title: str = "Scores") -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("task")
    table.add_column("status")
    table.add_column("stop reason")
    table.add_column("steps", justify="right")
    for name in METRICS:
        table.add_column(name.replace("_", " "), justify="right")
    table.add_column("time (s)", justify="right")
    if len(results) <= MAX_TASK_ROWS:
        for r in sorted(results, key=lambda r: r.task_id):
            style = "red" if r.status != "completed" else None
            table.add_row(
                r.task_id,
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
        "",
        "",
        "",
        *(_fmt(summary.metrics.get(m)) for m in METRICS),
        "",
        style="bold",
    )
    return table


def print_summary(results: list[TaskResult], summary: Summary, title: str = "Scores") -> None:
    console.print(score_table(results, summary, title))
    budget = {k: v for k, v in summary.stop_reasons.items() if k in BUDGET_STOPS}
    notes = []
    if budget:
        notes.append("stopped by a budget: " + ", ".join(f"{k} {v}" for k, v in sorted(budget.items())))
    for status in ("infra_error", "agent_error"):
        if summary.status_counts.get(status):
            notes.append(f"{status}: {summary.status_counts[status]}")
    if summary.usage.model_calls:
        cached = f" ({summary.usage.cached_calls} from the cache)" if summary.usage.cached_calls else ""
        notes.append(
            f"model: {summary.usage.model_calls} calls{cached}, {summary.usage.prompt_tokens:,} prompt + "
            f"{summary.usage.completion_tokens:,} completion tokens, ${summary.usage.cost:.4f}"
        )
    for note in notes:
        console.print(f"  {note}")


class RunProgress:
    """A progress bar over a run's tasks (a runner ``Reporter``)."""

    def __init__(self) -> None:
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[current]}"),
            console=err_console,
        )
        self.bar = self.progress.add_task("tasks", total=None, current="")
        self.failures = 0

    def __enter__(self) -> RunProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def begin(self, total: int, done: int) -> None:
        self.progress.update(self.bar, total=total, completed=done)
        if done:
            err_console.print(f"resuming: {done} of {total} tasks already finished")

    def task_started(self, task: Task) -> None:
        self.progress.update(self.bar, current=task.task_id)

    def task_finished(self, result: TaskResult) -> None:
        self.failures += result.status != "completed"
        label = "tasks" + (f" ({self.failures} failed)" if self.failures else "")
        self.progress.update(self.bar, advance=1, description=label, current="")
