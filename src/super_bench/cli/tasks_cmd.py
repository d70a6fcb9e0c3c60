"""``super-bench tasks list|show|validate``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from super_bench.cli._options import set_option, source_option


@click.group("tasks")
def tasks_group() -> None:
    """Look at and check task sets."""


@tasks_group.command("list")
@source_option
@set_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
def list_command(source: str, task_set: str | None, as_json: bool) -> None:
    """List tasks."""
    from rich.table import Table

    from super_bench.cli._display import console
    from super_bench.tasks.loaders import default_set, load_tasks

    tasks = load_tasks(source, default_set(source, task_set))
    if as_json:
        for task in tasks:
            click.echo(task.model_dump_json())
        return
    table = Table(title=f"{len(tasks)} task(s) from {source}", title_justify="left")
    for column in ("task id", "set", "repository", "graded by"):
        table.add_column(column)
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
        table.add_row(task.task_id, task.task_set, task.github_repo or "-", ", ".join(graded) or "-")
    console.print(table)


@tasks_group.command("show")
@click.argument("task_id")
@source_option
@set_option
def show_command(task_id: str, source: str, task_set: str | None) -> None:
    """Show one task in full, as JSON."""
    from super_bench.tasks.loaders import default_set, load_tasks

    (task,) = load_tasks(source, default_set(source, task_set), task_ids=[task_id])
    click.echo(json.dumps(task.model_dump(mode="json"), indent=2))


@tasks_group.command("validate")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
def validate_command(path: Path) -> None:
    """Check a task file or directory; lists every problem, exit status 1 if any."""
    from super_bench.tasks.loaders import check_rows, path_rows

    tasks, problems = check_rows(path_rows(path, None))
    if problems:
        for problem in problems:
            click.secho(problem, fg="red", err=True)
        click.echo(f"{len(problems)} problem(s); {len(tasks)} valid task(s)", err=True)
        sys.exit(1)
    click.echo(f"{len(tasks)} task(s) valid")
