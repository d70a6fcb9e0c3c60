"""``super-bench compare``, ``super-bench leaderboard`` and ``super-bench plot``: reports over saved runs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.table import Table
from rich.text import Text

from super_bench._names import METRICS
from super_bench.cli._display import console, err_console, whole_words
from super_bench.terminal import shown

if TYPE_CHECKING:
    from super_bench.report.compare import Comparison
    from super_bench.report.runs import RunData

_runs = click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
# `runs/*` may match files and unfinished runs: those are passed over, one line each.
_board_runs = click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
_metric = click.option(
    "--metric", type=click.Choice(METRICS), help="Metric [default: output match; entrypoint for Auto]."
)


_mixed_modes = click.option(
    "--allow-mixed-modes",
    is_flag=True,
    help="Put runs scored in different modes (corrected, reference, recorded) side by side anyway.",
)


def _pct(value: float | None, signed: bool = False) -> str:
    return "-" if value is None else f"{value * 100:+.1f}" if signed else f"{value * 100:.1f}"


@click.command("compare")
@_runs
@_metric
@_mixed_modes
@click.option("--json", "as_json", is_flag=True, help="Print the comparisons as JSON.")
def compare_command(runs: tuple[Path, ...], metric: str | None, allow_mixed_modes: bool, as_json: bool) -> None:
    """Compare runs on their shared tasks: the first run is the baseline for each of the others.

    Shows each metric's difference with a 95% paired bootstrap interval and an exact paired permutation
    test (under 6 paired tasks: "too few paired tasks", and the interval is the whole range), the tasks
    that flipped between solved and unsolved, and, for Masked runs, the difference per category. Runs
    with no scored task in common, or scored in different modes, are refused (exit status 2).
    """
    from super_bench.report.compare import compare_runs
    from super_bench.report.runs import load_run

    if len(runs) < 2:
        raise click.UsageError("give at least two run directories")
    loaded = [load_run(path) for path in runs]
    comparisons = [compare_runs(loaded[0], other, metric, allow_mixed_modes=allow_mixed_modes) for other in loaded[1:]]
    if as_json:
        click.echo("[" + ",\n".join(c.model_dump_json(indent=2) for c in comparisons) + "]")
        return
    for c in comparisons:
        modes = c.base_mode if c.base_mode == c.other_mode else f"modes: {c.other_mode} vs {c.base_mode}"
        table = Table(
            title=f"{c.other} vs {c.base} ({c.n_shared} shared tasks; {modes}; points, other - base)",
            title_justify="left",
        )
        for column in ("metric", "tasks", "base", "other", "difference", "95% interval", "exact test"):
            table.add_column(column, justify="left" if column in ("metric", "exact test") else "right")
        for d in c.metrics:
            table.add_row(
                d.metric.replace("_", " "),
                str(d.n),
                _pct(d.base),
                _pct(d.other),
                _pct(d.diff.mean, True),
                f"[{_pct(d.diff.low, True)}, {_pct(d.diff.high, True)}]",
                d.verdict,
            )
        console.print(whole_words(table))  # no word cut, at any width it can fit
        if c.only_base or c.only_other:
            console.print(
                f"  not shared: {len(c.only_base)} task(s) only in the base, {len(c.only_other)} only in the other"
            )
        name = c.flip_metric.replace("_", " ")
        console.print(
            f"  solved ({name} = 1) by the other only: {len(c.gained)}"
            + (f": {', '.join(map(shown, c.gained))}" if c.gained else "")
        )
        console.print(
            f"  solved by the base only: {len(c.lost)}" + (f": {', '.join(map(shown, c.lost))}" if c.lost else "")
        )
        if c.categories:
            cats = Table(title=f"{name} by Masked category", title_justify="left")
            for column in ("category", "tasks", "base", "other", "difference", "95% interval", "exact test"):
                cats.add_column(column, justify="left" if column in ("category", "exact test") else "right")
            for row in c.categories:
                cats.add_row(
                    row.category,
                    str(row.n),
                    _pct(row.base),
                    _pct(row.other),
                    _pct(row.diff.mean, True),
                    f"[{_pct(row.diff.low, True)}, {_pct(row.diff.high, True)}]",
                    row.verdict,
                )
            console.print(whole_words(cats))
        _print_causes(c)
        spent = Table(title="time without result over the shared tasks (seconds)", title_justify="left")
        for column in ("where", "base", "other"):
            spent.add_column(column, justify="left" if column == "where" else "right")
        for t in c.time:
            spent.add_row(t.kind.replace("_", " "), _seconds(t.base), _seconds(t.other))
        console.print(spent)


MOVED_SHOWN = 20  # tasks listed by name among those whose cause changed; the rest counted


def _print_causes(c: Comparison) -> None:
    """How the shared tasks' primary failure causes shift: a count per class in each run, and the tasks that
    moved between classes."""
    table = Table(title="failure causes over the shared tasks (task-epochs)", title_justify="left")
    for column in ("cause", "base", "other", "change"):
        table.add_column(column, justify="left" if column == "cause" else "right")
    for count in c.causes:
        change = f"{count.other - count.base:+d}" if count.other != count.base else "0"
        table.add_row(count.cause.replace("_", " "), str(count.base), str(count.other), change)
    console.print(whole_words(table))
    moves = [f"{shown(m.task_id)} ({m.base.replace('_', ' ')} -> {m.other.replace('_', ' ')})" for m in c.moved]
    more = f" and {len(moves) - MOVED_SHOWN} more (--json lists them)" if len(moves) > MOVED_SHOWN else ""
    listed = f": {', '.join(moves[:MOVED_SHOWN])}{more}" if moves else ""
    console.print(f"  moved between causes: {len(moves)}{listed}")


def _print_board(runs: list[RunData], causes: bool = False) -> None:
    """The leaderboard as a table of whole words: one row per run where that fits the terminal, else one
    column per run (a row per field), else a table per run."""
    from rich.measure import Measurement

    from super_bench.report.leaderboard import LABELS, leaderboard_cells

    header, rows = leaderboard_cells(runs, causes)

    def fits(table: Table) -> bool:
        natural = Measurement.get(console, console.options.update_width(10_000), table).maximum
        return natural <= console.width

    wide = Table()
    for i, name in enumerate(header):
        wide.add_column(name, no_wrap=True, justify="left" if i < LABELS else "right")
    for cells in rows:
        wide.add_row(*map(Text, cells))
    tall = Table()
    tall.add_column("", no_wrap=True, style="bold")
    for cells in rows:
        tall.add_column(cells[0], no_wrap=True)
    for i, name in enumerate(header[1:], start=1):
        tall.add_row(name, *(Text(cells[i]) for cells in rows))
    if fits(wide) or (not fits(tall) and len(rows) == 1):
        console.print(wide if fits(wide) else tall)
        return
    if fits(tall):
        console.print(tall)
        return
    for cells in rows:
        one = Table(title=Text(cells[0]), title_justify="left", show_header=False)
        one.add_column("", style="bold")
        one.add_column("")
        for name, value in zip(header[1:], cells[1:], strict=True):
            one.add_row(name, Text(value))
        console.print(one)


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def _finished_runs(paths: tuple[Path, ...]) -> list[RunData]:
    """The finished runs among the paths given (``runs/*``), each one passed over said in one line."""
    from super_bench.report.runs import board_runs

    loaded, skipped = board_runs(paths)
    for line in skipped:
        err_console.print(Text(f"skipped {line}"))
    if not loaded:
        raise click.UsageError(f"none of the {len(paths)} path(s) is a finished run")
    err_console.print(f"{len(loaded)} run(s) used" + (f", {len(skipped)} skipped" if skipped else ""))
    return loaded


@click.command("leaderboard")
@_board_runs
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["markdown", "csv"]),
    help="[default: from --out's suffix, else markdown; to a terminal, a table]",
)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Write to this file instead of printing.")
@_mixed_modes
@click.option(
    "--causes",
    is_flag=True,
    help="Add a column per failure cause: the run's failed tasks with that primary cause (super-bench analyze).",
)
def leaderboard_command(
    runs: tuple[Path, ...], fmt: str | None, out: Path | None, allow_mixed_modes: bool, causes: bool
) -> None:
    """A leaderboard over runs, one row per run with its scoring mode and each metric's mean and 95%
    bootstrap interval. Runs scored in different modes are refused (exit status 2)."""
    from super_bench.report.leaderboard import to_csv, to_markdown
    from super_bench.report.runs import check_modes

    # A person at a terminal reads a table; a pipe or a file gets the Markdown to paste.
    rendered = fmt is None and out is None and console.is_terminal
    fmt = fmt or ("csv" if out is not None and out.suffix.lower() == ".csv" else "markdown")
    loaded = _finished_runs(runs)
    if not allow_mixed_modes:
        check_modes(loaded)
    text = to_csv(loaded, causes) if fmt == "csv" else to_markdown(loaded, causes)
    if rendered:
        _print_board(loaded, causes)
    elif out is None:
        click.echo(text, nl=False)
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        console.print(f"Wrote {out}")


@click.command("plot")
@_board_runs
@click.option("--out", "out_dir", default="plots", show_default=True, type=click.Path(file_okay=False, path_type=Path))
@_metric
def plot_command(runs: tuple[Path, ...], out_dir: Path, metric: str | None) -> None:
    """PNG plots over runs: a metric by Masked category (by set for other tasks), and score against cost.

    Needs matplotlib: pip install 'super-bench[plots]'.
    """
    from super_bench.report.plots import plot_metric_by_category, plot_score_vs_cost

    loaded = _finished_runs(runs)
    by_category = plot_metric_by_category(
        loaded, out_dir / "metric_by_category.png", metric or loaded[0].primary_metric
    )
    vs_cost = plot_score_vs_cost(loaded, out_dir / "score_vs_cost.png", metric)
    console.print(f"Wrote {by_category} and {vs_cost}")
