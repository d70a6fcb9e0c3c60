"""``super-bench tasks list|show|validate``."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import click

from super_bench.cli import WholeHelpGroup
from super_bench.cli._options import Default, git_mirror_option, harness_mirrors, set_option, source_option
from super_bench.terminal import wrapped


@click.group("tasks", cls=WholeHelpGroup)
def tasks_group() -> None:
    """Look at and check task sets."""


@tasks_group.command("list")
@source_option
@set_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
def list_command(source: str, task_set: str | None, as_json: bool) -> None:
    """List tasks."""
    from super_bench.cli._display import console, task_list_table
    from super_bench.tasks.loaders import default_set, load_tasks

    tasks = load_tasks(source, default_set(source, task_set))
    if as_json:
        for task in tasks:
            click.echo(task.model_dump_json())
        return
    console.print(task_list_table(tasks, source))


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
@click.option(
    "--offline",
    "--no-network",
    is_flag=True,
    help="Check only repositories that need no network (local paths and the demo suite's).",
)
@click.option("--no-repos", is_flag=True, help="Do not clone repositories to check commits and entrypoints.")
@git_mirror_option
@click.option(
    "--regex-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=Default("super_bench.tasks.checks:check_tasks.regex_timeout"),
    show_default=True,
    help="Seconds a landmark may take on adversarial input before it counts as catastrophic.",
)
def validate_command(
    path: Path, offline: bool, no_repos: bool, git_mirrors: dict[str, Path], regex_timeout: float
) -> None:
    """Check a task file or directory; lists every problem, exit status 1 if any.

    Besides each row's fields: landmarks that match an empty output or can hang the scorer, masked
    ids without a known category, tasks with nothing to grade, and, in each task's repository, the
    commit and the entrypoint. With --git-mirror, repositories are read from their mirrors, and each mirror
    is checked as a run checks it before its first task (readable by agent code, no objects missing).
    """
    from super_bench.tasks.checks import check_tasks
    from super_bench.tasks.loaders import locate_rows, path_rows

    located, problems = locate_rows(path_rows(path, None))
    mirrors = harness_mirrors(git_mirrors)
    report = check_tasks(
        located, regex_timeout=regex_timeout, repositories=not no_repos, offline=offline, mirrors=mirrors
    )
    problems = sorted(problems + report.problems, key=_row_order)
    for note in report.notes:
        click.echo(wrapped(f"note: {note}", sys.stderr), err=True)
    if problems:
        for problem in problems:
            click.secho(wrapped(problem, sys.stderr), fg="red", err=True)
        click.echo(f"{len(problems)} problem(s) in {path}", err=True)
        sys.exit(1)
    click.echo(f"{len(located)} task(s) valid")


def _row_order(problem: str) -> tuple[str, int]:
    """Problems sorted by file and row (``f.jsonl:12``, ``f.json[3]``, ``f.parquet row 4``)."""
    match = re.match(r"(.*?)(?::|\[| row )(\d+)", problem)
    return (match.group(1), int(match.group(2))) if match else (problem, 0)
