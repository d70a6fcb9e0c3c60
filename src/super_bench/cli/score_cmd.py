"""``super-bench score``."""

from __future__ import annotations

from pathlib import Path

import click

from super_bench.cli._options import mode_option


@click.command("score")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@mode_option
@click.option("--tasks", "tasks_source", help="Grade against these tasks instead of the run's own tasks.jsonl.")
@click.option("--set", "task_set", help="Task set of --tasks.")
@click.option("--json", "as_json", is_flag=True, help="Print summary.json instead of a table.")
def score_command(run_dir: Path, mode: str, tasks_source: str | None, task_set: str | None, as_json: bool) -> None:
    """Re-score a saved run offline; rewrites its results.jsonl and summary.json."""
    from super_bench.cli._display import console, print_summary
    from super_bench.runner.rescore import rescore
    from super_bench.tasks.loaders import load_tasks

    tasks = load_tasks(tasks_source, task_set) if tasks_source else None
    outcome = rescore(run_dir, mode, tasks)  # type: ignore[arg-type]
    if as_json:
        click.echo(outcome.summary.model_dump_json(indent=2))
    else:
        print_summary(outcome.results, outcome.summary, title=f"{run_dir} ({mode})")
        console.print(f"Wrote {run_dir / 'summary.json'}")
