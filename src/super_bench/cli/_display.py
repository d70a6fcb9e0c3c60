"""Rich rendering of scores, fitted to the terminal."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from super_bench._names import BUDGET_STOPS, METRICS
from super_bench.analysis import CAUSES
from super_bench.terminal import SafeConsole, shown

if TYPE_CHECKING:
    from super_bench.divergence import Divergence
    from super_bench.runner.results import MetricStats, Summary, TaskResult
    from super_bench.tasks.model import Task

# Every command prints through these: no control character or link it is given reaches the terminal.
console = SafeConsole()
err_console = SafeConsole(stderr=True)
MAX_TASK_ROWS = 60


class Fitted:
    """A table laid out for the width it is printed at (see :func:`fitted`)."""

    def __init__(self, layouts: Sequence[Callable[[], Table]]) -> None:
        self.layouts = layouts

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield fitted(self.layouts, options.max_width)


def whole_words(table: Table) -> Fitted:
    """``table`` with its columns fitted to the width it is printed at, no word cut where it can fit."""
    return Fitted([lambda: table])


def fitted(layouts: Iterable[Callable[[], Table]], width: int) -> Table:
    """The first of ``layouts`` (each more compact than the one before) that fits in ``width`` with every
    column at least as wide as its longest word, and columns made with ``no_wrap`` (task ids) whole. If
    none does, the last one with its other cells folded (cut across lines, never cut short), and if
    even that does not fit, everything folded."""
    table = Table()
    for make in layouts:
        table = make()
        widths = _widths(table, width)
        if widths is not None:
            break
    else:
        for column in table.columns:
            column.overflow = "fold"
        widths = _widths(table, width, fold=True)
        if widths is None:
            for column in table.columns:
                column.no_wrap = False
            return table
    for column, column_width in zip(table.columns, widths):
        column.width = column_width
    return table


def _widths(table: Table, width: int, fold: bool = False) -> list[int] | None:
    """Column widths that fit ``table`` in ``width``, or None. Rich would narrow the widest columns
    first and cut their words; here the columns with the most room to wrap give way first, and none
    below its longest word (below one character with ``fold``; never below its longest line for a
    ``no_wrap`` column)."""
    lows, highs = [], []
    for column in table.columns:
        texts = [_plain(cell) for cell in (column.header, *column.cells)]
        lines = [line for text in texts for line in text.splitlines()] or [""]
        highs.append(max(map(cell_len, lines)))
        words = lines if column.no_wrap else ["."] if fold else [word for line in lines for word in line.split()]
        lows.append(max(map(cell_len, words or [""])))
    measuring = Console(width=10_000)
    borders = Measurement.get(measuring, measuring.options, table).maximum - sum(highs)  # and padding
    if sum(lows) + borders > width:
        return None
    widths, excess = highs[:], sum(highs) + borders - width
    while excess > 0:
        slack = max(range(len(widths)), key=lambda i: widths[i] - lows[i])
        widths[slack] -= 1
        excess -= 1
    return widths


def _plain(cell: object) -> str:
    return cell.plain if isinstance(cell, Text) else Text.from_markup(cell).plain if isinstance(cell, str) else ""


def _compact(table: Table, tight: bool = False) -> Table:
    """The same table with light rules, no outer padding and two spaces between columns (one if
    ``tight``): some three characters a column fewer."""
    table.box, table.show_edge, table.pad_edge, table.collapse_padding = box.SIMPLE_HEAD, False, False, True
    if tight:
        table.padding = (0, 0)
    return table


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


@dataclass(frozen=True)
class _Layout:
    """Which columns of the score table to show; each field gives up a little width."""

    uniform: bool = True  # the status and stop-reason columns where every row has the same value
    time: bool = True
    steps: bool = True
    merged: bool = False  # status and stop reason as one column
    compact: int = 0  # light rules: 1 with two spaces between columns, 2 with one
    intervals: bool = True  # the row of 95% intervals, nine characters a metric
    short: bool = False  # metric headers abbreviated (a note spells them out), for the longest task ids


_LAYOUTS = (
    _Layout(),
    _Layout(uniform=False),
    _Layout(uniform=False, time=False),
    _Layout(uniform=False, time=False, steps=False),
    _Layout(uniform=False, time=False, steps=False, merged=True),
    _Layout(uniform=False, time=False, steps=False, merged=True, compact=1),
    _Layout(uniform=False, time=False, steps=False, merged=True, compact=2),
    _Layout(uniform=False, time=False, steps=False, merged=True, compact=2, intervals=False),
    _Layout(uniform=False, time=False, steps=False, merged=True, compact=2, intervals=False, short=True),
)


def shown_metrics(summary: Summary) -> tuple[list[str], list[str]]:
    """The metrics that apply to the run's tasks, and why each of the others is left out: a metric no
    task defines, and ``submitted`` where no task has an answer to submit (Auto tasks are graded on
    their script alone)."""
    defined: list[str] = [m for m in METRICS if summary.metrics.get(m) is not None]
    shown = [m for m in defined if m != "submitted" or "output_match" in defined]
    # Without answers (Auto), submitted says nothing: it is absent for want of an answer, not of a definition.
    no_answers = "output_match" not in defined
    absent = [m.replace("_", " ") for m in METRICS if m not in defined and not (m == "submitted" and no_answers)]
    notes = [f"{', '.join(absent)}: no task here defines {'it' if len(absent) == 1 else 'them'}"] if absent else []
    if no_answers:
        notes.append("submitted: no task here has an answer to submit")
    if summary.mode == "reference" and "entrypoint" in defined:
        from super_bench.scoring.reference import REFERENCE_MIN_RUNTIME

        notes.append(f"entrypoint as the reference scored it: a script counts once it ran {REFERENCE_MIN_RUNTIME:g} s")
    return shown, notes


def score_table(results: list[TaskResult], summary: Summary, title: str = "Scores") -> Fitted:
    """The per-task scores and their means, laid out for the width they are printed at: the narrower,
    the fewer columns; task ids always whole."""
    return Fitted([partial(_score_table, results, summary, title, layout) for layout in _LAYOUTS])


def _score_table(results: list[TaskResult], summary: Summary, title: str, layout: _Layout) -> Table:
    metrics, notes = shown_metrics(summary)
    rows = sorted(results, key=lambda r: (r.task_id, r.epoch)) if len(results) <= MAX_TASK_ROWS else []
    statuses = {r.status for r in rows}
    stops = {r.stop_reason or "-" for r in rows}
    show_status = layout.uniform or len(statuses) > 1
    show_stop = layout.uniform or len(stops) > 1
    same = [f"status {statuses.pop()}"] if rows and not show_status else []
    same += [f"stop reason {stops.pop()}"] if rows and not show_stop else []
    if same:
        notes.insert(0, ("the task: " if len(rows) == 1 else "every task: ") + ", ".join(same))
    merged = layout.merged and (show_status or show_stop)
    table = Table(title=Text(title), title_justify="left", caption_justify="left")
    table.add_column("task", no_wrap=True)
    columns: list[tuple[str, Callable[[TaskResult], str]]] = []
    if summary.epochs > 1:
        columns.append(("epoch", lambda r: str(r.epoch)))
    if merged:
        columns.append(("outcome", _outcome))
    else:
        if show_status:
            columns.append(("status", lambda r: r.status))
        if show_stop:
            columns.append(("stop reason", lambda r: r.stop_reason or "-"))
    if layout.steps:
        columns.append(("steps", lambda r: str(r.n_steps)))
    metric_of = {(_SHORT[m] if layout.short else m.replace("_", " ")): m for m in metrics}
    columns += [(name, partial(_metric_cell, m)) for name, m in metric_of.items()]
    if layout.short:
        notes.append(", ".join(f"{name} = {m.replace('_', ' ')}" for name, m in metric_of.items()))
    if layout.time:
        columns.append(("time (s)", lambda r: f"{r.wall_time:.1f}"))
    for name, _ in columns:
        table.add_column(name, justify="left" if name in ("status", "stop reason", "outcome") else "right")
    for r in rows:
        style = "red" if r.status != "completed" else None
        table.add_row(Text(r.task_id), *(cell(r) for _, cell in columns), style=style)
    if rows:
        table.add_section()
    names = [name for name, _ in columns]
    footer = {
        "mean": {m: _fmt(summary.metrics.get(m)) for m in metrics},
        "tasks": {m: str(_n(summary.stats.get(m))) for m in metrics},
    }
    if any(s.n > 1 for s in summary.stats.values()):
        if layout.intervals:
            footer["95% CI"] = {m: _interval(summary.stats.get(m)) for m in metrics}
        else:
            notes.append("95% intervals in summary.json")
    for label, values in footer.items():
        cells = [values.get(metric_of.get(name, ""), "") for name in names]
        table.add_row(label, *cells, style="bold" if label == "mean" else None)
    table.caption = "; ".join(part for part in (_counts(summary), *notes) if part) or None
    return _compact(table, tight=layout.compact > 1) if layout.compact else table


_SHORT = {"output_match": "output", "landmarks": "landm.", "entrypoint": "entry.", "submitted": "subm."}


def _metric_cell(metric: str, result: TaskResult) -> str:
    return _fmt(getattr(result.metrics, metric))


def _outcome(result: TaskResult) -> str:
    """Status and stop reason in one, the words spaced so that the column can wrap."""
    what = (result.stop_reason or "-") if result.status == "completed" else result.status
    return what.replace("_", " ")


def _n(stats: MetricStats | None) -> int:
    return 0 if stats is None else stats.n


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


def task_list_table(tasks: list[Task], source: str) -> Fitted:
    """``tasks list``: id, set, repository and what grades each task; narrower, the set moves to the
    title when all tasks share it, and GitHub repositories lose their ``https://github.com/``."""
    sets = {task.task_set for task in tasks}

    def make(level: int) -> Table:
        one_set = level >= 1 and len(sets) == 1
        title = f"{len(tasks)} {next(iter(sets))} task(s)" if one_set else f"{len(tasks)} task(s)"
        table = Table(title=Text(f"{title} from {source}"), title_justify="left")
        table.add_column("task id", no_wrap=True)
        if not one_set:
            table.add_column("set")
        table.add_column("repository")
        table.add_column("graded by")
        for task in tasks:
            graded = [
                name
                for name, present in (
                    ("answer", task.answer is not None),
                    ("landmarks", task.landmarks),
                    ("entrypoint", task.entrypoint),
                )
                if present
            ]
            repository = task.github_repo or "-"
            if level >= 2:
                repository = repository.removeprefix("https://github.com/")
            cells = [task.task_id, *([] if one_set else [task.task_set]), repository, ", ".join(graded) or "-"]
            table.add_row(*map(Text, cells))
        return _compact(table) if level >= 3 else table

    return Fitted([partial(make, level) for level in range(4)])


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
    notes += _provenance_notes(results)
    causes = causes_line(summary)
    if causes:
        notes.append(f"{causes} (super-bench analyze RUN_DIR shows the evidence)")
    notes += [
        f"replay of {shown(r.task_id)} diverged: {shown(diverged(r.replay_divergence))}"
        for r in results
        if r.replay_divergence
    ]
    for note in notes:
        console.print(f"  {note}")


def cause_name(cause: str) -> str:
    return cause.replace("_", " ")


def causes_line(summary: Summary) -> str | None:
    """``failure causes: compute 2, no experiment 1``, most frequent first; None when no task failed."""
    counts = sorted(summary.failure_causes.items(), key=lambda item: (-item[1], CAUSES.index(item[0])))
    if not counts:
        return None
    return "failure causes: " + ", ".join(f"{cause_name(cause)} {n}" for cause, n in counts)


def diverged(found: Divergence) -> str:
    """A divergence in a line: its kind, the step, and how the recorded and the replayed step ended."""
    if found.step is None:
        return f"{found.kind.replace('_', ' ')} (every step ended as recorded)"
    kind = found.kind.replace("_", " ")
    return f"{kind} at step {found.step}: recorded {found.recorded!r}, replayed {found.replayed!r}"


def _provenance_notes(results: list[TaskResult]) -> list[str]:
    """How many submitted answers the run's own output showed, and which it never did (answer_provenance)."""
    traced = [r for r in results if r.in_means and r.answer_provenance is not None]
    if not traced:
        return []
    observed = sum(r.answer_provenance == "observed" for r in traced)
    notes = [f"answers shown by the run's own output: {observed} of {len(traced)} (answer provenance)"]
    given = [r.task_id for r in traced if r.answer_provenance == "given"]
    if given:
        notes.append(f"answers given (some values shown only by pre-executed cells): {len(given)} of {len(traced)}")
    flagged = [r.task_id for r in traced if r.answer_provenance not in ("observed", "given")]
    if flagged:
        more = f" and {len(flagged) - 10} more" if len(flagged) > 10 else ""
        notes.append("not every value shown (see the viewer): " + ", ".join(map(shown, flagged[:10])) + more)
    return notes


def print_query_answer(results: list[TaskResult]) -> None:
    """An ad-hoc task has no gold answer to score against: what the agent answered is the result."""
    for result in results:
        if result.submission is None:
            console.print(Text(f"No answer was submitted (stop reason: {result.stop_reason or '-'})."))
        else:
            console.print(Text("Answer: " + json.dumps(result.submission, ensure_ascii=False)))


def print_run_dir(path: object) -> None:
    """Where a run is, and the command that shows every step of it (a page in the run directory)."""
    import shlex

    console.print(f"Run directory: {shown(path)}")
    console.print(f"See every step: super-bench view {shown(shlex.quote(str(path)))}")
