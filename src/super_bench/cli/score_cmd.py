"""``super-bench score``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from super_bench.cli import NOTHING_SCORED
from super_bench.cli._options import mode_option


def default_rescored(run_dir: Path, mode: str) -> Path:
    """``runs/X`` re-scored goes to ``runs-rescored/X-MODE``: beside the set of runs, not among them."""
    folder = run_dir.resolve().parent
    return folder.with_name(f"{folder.name}-rescored") / f"{run_dir.resolve().name}-{mode}"


@click.command("score")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@mode_option
@click.option("--tasks", "tasks_source", help="Grade against these tasks instead of the run's own tasks.jsonl.")
@click.option("--set", "task_set", help="Task set of --tasks.")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory for the re-scored run. [default: SET-rescored/RUN-MODE beside the folder SET that holds RUN_DIR, "
    "so that `leaderboard runs/*` never mixes modes]",
)
@click.option("--in-place", is_flag=True, help="Rewrite RUN_DIR's results.jsonl and summary.json instead.")
@click.option("--json", "as_json", is_flag=True, help="Print summary.json instead of a table.")
def score_command(
    run_dir: Path,
    mode: str,
    tasks_source: str | None,
    task_set: str | None,
    out: Path | None,
    in_place: bool,
    as_json: bool,
) -> None:
    """Re-score a saved run offline, into a new run directory (RUN_DIR left as it is) unless --in-place.

    Exits with status 3 when no task could be scored.
    """
    from super_bench.cli._display import console, err_console, print_summary
    from super_bench.runner.rescore import rescore
    from super_bench.tasks.loaders import load_tasks
    from super_bench.terminal import shown

    if in_place and out is not None:
        raise click.UsageError("--in-place rewrites RUN_DIR itself; it takes no --out")
    target = None if in_place else out or default_rescored(run_dir, mode)
    tasks = load_tasks(tasks_source, task_set) if tasks_source else None
    outcome = rescore(run_dir, mode, tasks, out=target)  # type: ignore[arg-type]
    written = outcome.run_dir.path
    if as_json:
        click.echo(outcome.summary.model_dump_json(indent=2))
    else:
        print_summary(outcome.results, outcome.summary, title=f"{written} ({mode})")
        console.print(f"Wrote {written / 'results.jsonl'} and {written / 'summary.json'}")
    unscored = [r for r in outcome.results if r.unscored]
    for row in unscored:
        err_console.print(
            f"[yellow]not scored, left out of the means:[/yellow] {shown(row.task_id)}: {shown(row.unscored)}"
        )
    if outcome.summary.n_scored == 0:
        err_console.print("[red]no task could be scored[/red]")
        sys.exit(NOTHING_SCORED)
