"""``super-bench doctor``: do the tasks' gold solutions still reproduce?"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from super_bench.cli._options import (
    ManyValues,
    ManyValuesCommand,
    as_list,
    gold_run_options,
    set_option,
    source_option,
)
from super_bench.terminal import shown

if TYPE_CHECKING:
    from super_bench.sandbox import SandboxConfig


@click.command("doctor", cls=ManyValuesCommand)
@source_option
@set_option
@click.option("--task-ids", cls=ManyValues, metavar="ID ...", help="Check only these tasks.")
@click.option("--limit", type=click.IntRange(min=1), help="Check at most this many tasks.")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Run directory of the gold runs; rerunning with the same one resumes. [default: runs/<time>-doctor]",
)
@gold_run_options
@click.option("--json", "as_json", is_flag=True, help="One JSON object per task on stdout.")
def doctor_command(
    source: str,
    task_set: str | None,
    task_ids: tuple[str, ...],
    limit: int | None,
    out: Path | None,
    sandbox: SandboxConfig,
    cell_timeout: float,
    max_compute: float,
    as_json: bool,
) -> None:
    """Run the tasks' gold solutions and report the ones that no longer reproduce their gold answer,
    landmarks or entrypoint run (task rot), with what differs and the output of the cell that failed.

    Exit status 1 when any task does not reproduce.
    """
    from rich.markup import escape
    from rich.table import Table

    from super_bench.cli._display import console
    from super_bench.cli._interrupt import kept_line, resume_command, stop_twice
    from super_bench.construct.gold import check_gold, gold_env
    from super_bench.runner.progress import RunProgress
    from super_bench.tasks.loaders import default_set, load_tasks

    tasks = load_tasks(source, default_set(source, task_set), task_ids=as_list(task_ids), limit=limit)
    if not tasks:
        raise click.UsageError("no tasks selected")
    run_dir = out or Path("runs") / f"{datetime.now().strftime('%Y%m%d-%H%M%S')}-doctor"
    env = gold_env(sandbox=sandbox, cell_timeout=cell_timeout, max_compute=max_compute)
    ctx = click.get_current_context()

    def advice() -> str:
        total = sum(1 for t in tasks if t.solution)  # the tasks without one are not run
        return f"{kept_line(run_dir, total)}\nresume with: {resume_command(ctx, None if out else run_dir)}"

    with stop_twice(advice), RunProgress() as progress:
        checks = check_gold(tasks, run_dir, env=env, reporter=progress)
    if as_json:
        for check in checks:
            record = {k: v for k, v in vars(check).items() if k != "failed_pre_executed"}
            click.echo(json.dumps(record))
    else:
        table = Table(title=f"Gold solutions of {len(tasks)} task(s)", title_justify="left")
        for column in ("task", "status", "problems"):
            table.add_column(column)
        style = {"reproduces": "green", "rot": "red", "error": "red", "no solution": "yellow"}
        for check in checks:
            table.add_row(shown(check.task_id), f"[{style[check.status]}]{check.status}", str(len(check.problems)))
        console.print(table)
        for check in checks:
            if check.reproduces or check.status == "no solution":
                continue
            console.print(f"\n[bold]{shown(check.task_id)}[/bold] ({check.status})")
            for problem in check.problems:
                console.print(f"  - {escape(problem)}")
            if check.failed_cell:
                console.print("  " + escape(check.failed_cell).replace("\n", "\n    "))
        console.print(f"\nRun directory: {run_dir}")
    if any(c.status in ("rot", "error") for c in checks):
        sys.exit(1)
