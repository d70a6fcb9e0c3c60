"""Failure causes in the terminal: the one line a run closes with, and ``analyze``'s table and evidence."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

from super_bench.analysis import causes_shown
from super_bench.cli._display import Fitted, _compact, cause_name

if TYPE_CHECKING:
    from super_bench.runner.results import Summary, TaskResult

# The narrowest layout's headers (a caption spells them out): seven classes fit 80 columns only so.
_SHORT = {
    "environment": "env.",
    "resource": "res.",
    "repository_error": "repo.",
    "compute": "comp.",
    "no_experiment": "no exp.",
    "wrong_result": "wrong",
    "agent_format": "format",
    "scoring_rule": "rule",
}


def causes_table(summary: Summary, title: str) -> Fitted:
    """Failed tasks per category (rows) and primary cause (columns), and the run's total; fitted to the width
    it is printed at, the class names abbreviated where nothing else fits."""
    return Fitted([partial(_causes_table, summary, title, level) for level in range(4)])


def _causes_table(summary: Summary, title: str, level: int) -> Table:
    short = level >= 3
    table = Table(title=Text(title), title_justify="left", caption_justify="left")
    table.add_column("category", no_wrap=True)
    shown = causes_shown(summary.failure_causes)
    for cause in shown:
        table.add_column(_SHORT[cause] if short else cause_name(cause), justify="right")
    table.add_column("failed", justify="right")
    for category, counts in summary.failure_causes_by_category.items():
        table.add_row(Text(category), *_cells(counts, shown))
    if summary.failure_causes_by_category:
        table.add_section()
    table.add_row("all", *_cells(summary.failure_causes, shown), style="bold")
    notes = ["a task of several Masked categories counts in each"] if _overlap(summary) else []
    if short:
        notes.append(", ".join(f"{_SHORT[c]} = {cause_name(c)}" for c in shown))
    table.caption = "; ".join(notes) or None
    return _compact(table, tight=level > 1) if level else table


def _cells(counts: dict[str, int], shown: tuple[str, ...]) -> list[str]:
    return [str(counts.get(cause, 0) or "-") for cause in shown] + [str(sum(counts.values()))]


def _overlap(summary: Summary) -> bool:
    by_category = sum(sum(counts.values()) for counts in summary.failure_causes_by_category.values())
    return by_category > sum(summary.failure_causes.values())


def evidence_lines(results: list[TaskResult]) -> list[Text]:
    """Per failed task: its cause, confidence, the step that shows it (numbered from 1, as the viewer numbers
    steps) and the quoted line. Plain ``Text``: nothing the agent wrote is read as markup."""
    lines = []
    for r in sorted((r for r in results if r.failure is not None), key=lambda r: r.key):
        failure = r.failure
        assert failure is not None
        epoch = f"@{r.epoch}" if r.epoch > 1 else ""
        where = f"step {failure.step + 1}" if failure.step is not None else "no step"
        line = Text(f"{r.task_id}{epoch}: ", style="bold")
        line.append(f"{cause_name(failure.cause)} ({failure.confidence:.2f}, {failure.by}), {where}")
        if failure.reason:
            line.append(f": {failure.reason}")
        if failure.quote:
            line.append("\n    > ")
            line.append(failure.quote, style="dim")
        lines.append(line)
    return lines
