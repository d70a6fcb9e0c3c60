"""``super-bench view`` and ``super-bench import-trajectories``."""

from __future__ import annotations

from pathlib import Path

import click

from super_bench.cli._display import console, err_console, print_summary
from super_bench.cli._options import mode_option
from super_bench.terminal import shown


@click.command("view")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="HTML file [default: RUN_DIR/view.html].")
@click.option("--tasks", "tasks_source", help="Gold tasks to show [default: the run's own tasks.jsonl].")
@click.option("--set", "task_set", type=click.Choice(["expert", "masked", "auto"]), help="Task set of --tasks.")
def view_command(run_dir: Path, out: Path | None, tasks_source: str | None, task_set: str | None) -> None:
    """Write one self-contained HTML page for a run: summary, task table and every trajectory.

    The page needs no server and loads nothing from the network: open it from disk or send it along.
    """
    from rich.filesize import decimal
    from rich.progress import Progress

    from super_bench.report.viewer import build_view
    from super_bench.tasks.loaders import default_set, load_tasks

    tasks = load_tasks(tasks_source, default_set(tasks_source, task_set)) if tasks_source else None
    with Progress(console=err_console, transient=True) as progress:
        bar = progress.add_task("reading trajectories", total=None)
        path = build_view(run_dir, out, lambda done, total: progress.update(bar, completed=done, total=total), tasks)
    console.print(f"Wrote {path} ({decimal(path.stat().st_size)}); open it in a browser.")


@click.command("import-trajectories")
@click.argument("source", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path), help="New run directory.")
@click.option("--tasks", "tasks_source", help="Re-score against these gold tasks (demo, hf, hf:NAME, or a path).")
@click.option(
    "--set",
    "task_set",
    type=click.Choice(["expert", "masked", "auto"]),
    help="Task set [default: from the folder name].",
)
@click.option(
    "--model", help="Model name to record [default: from the folder name, e.g. gpt-4o-2024-08-06_react-super_expert]."
)
@mode_option
def import_command(
    source: Path, out: Path, tasks_source: str | None, task_set: str | None, model: str | None, mode: str
) -> None:
    """Import the SUPER paper's published trajectories (SOURCE/<task_id>/history.ipynb and metrics.json,
    ReAct-SUPER or SWE-agent notebooks) as a run directory.

    Without --tasks, results keep the metrics the original harness recorded; with --tasks, the run is
    re-scored against the gold tasks.
    """
    from super_bench.runner.importer import import_trajectories, source_set
    from super_bench.tasks.loaders import load_tasks

    tasks = load_tasks(tasks_source, task_set or source_set(source)) if tasks_source else None
    outcome = import_trajectories(source, out, tasks=tasks, task_set=task_set, model=model, mode=mode)  # type: ignore[arg-type]
    run = outcome.run
    scoring = f"re-scored against {tasks_source} ({mode})" if tasks_source else "metrics as recorded"
    print_summary(run.results, run.summary, title=f"{out}: {outcome.imported} imported, {scoring}")
    for problem in outcome.failed:
        err_console.print(f"[red]not imported:[/red] {shown(problem)}")
    if outcome.unmatched:
        err_console.print(
            f"[yellow]{len(outcome.unmatched)} task(s) not among the gold tasks kept their recorded metrics:[/yellow] "
            + ", ".join(outcome.unmatched[:10])
            + (" ..." if len(outcome.unmatched) > 10 else "")
        )
    console.print(f"Wrote {out}; look at it with: super-bench view {out}")
