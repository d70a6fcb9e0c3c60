"""``super-bench verify``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from super_bench.cli import NOTHING_SCORED
from super_bench.cli._options import (
    Default,
    ManyValues,
    ManyValuesCommand,
    as_list,
    given_sandbox_settings,
    sandbox_options,
)
from super_bench.terminal import shown

if TYPE_CHECKING:
    from super_bench.runner.verify_records import VerifyEnvironment, VerifyResult
    from super_bench.sandbox import SandboxConfig


@click.command("verify", cls=ManyValuesCommand)
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--task-ids", cls=ManyValues, metavar="ID ...", help="Verify only these tasks.")
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=Default("super_bench.runner.verify:verify.workers"),
    show_default=True,
    help="Replays at once, each in its own sandbox.",
)
@click.option("--redo", is_flag=True, help="Replay every task again instead of resuming the verification.")
@sandbox_options
def verify_command(run_dir: Path, task_ids: tuple[str, ...], workers: int, redo: bool, sandbox: SandboxConfig) -> None:
    """Replay each task's actions (not its submission) in a fresh sandbox set up as the run's, and check
    that the reproduced outputs show the submitted answer again.

    A run directory is data: the replays keep the run's budgets and sandbox limits (run.json), and run where
    the options given here say: by default bwrap with the network off, never the local sandbox unless
    --sandbox local is given. The run's backend, network, mirrors, caches, interpreter and other paths are
    refused and listed; give this machine's with the sandbox options. Writes
    RUN_DIR/verify.jsonl, RUN_DIR/verify-summary.json and the reproduced trajectories under RUN_DIR/verify/;
    rerunning resumes. Exits with status 3 when nothing could be checked.
    """
    from super_bench.cli._display import console, err_console
    from super_bench.cli._interrupt import resume_command, stop_twice
    from super_bench.runner.verify import verify

    given = given_sandbox_settings(sandbox)
    ctx = click.get_current_context()

    def advice() -> str:
        done, total = _replays_kept(run_dir, as_list(task_ids))
        return (
            f"interrupted: {done} of {total} replay(s) finished, kept in {run_dir / 'verify.jsonl'}\n"
            f"resume with: {resume_command(ctx)}"
        )

    err_console.print(f"super-bench: verifying {run_dir}")
    with stop_twice(advice, "the running replays"):
        outcome = verify(
            run_dir,
            task_ids=as_list(task_ids),
            workers=workers,
            redo=redo,
            sandbox=given,
            on_row=_progress(err_console),
            on_environment=_show_environment(err_console),
        )
    console.print(_table(outcome.rows))
    summary = outcome.summary
    checked = summary.reproduced + summary.not_reproduced
    console.print(
        f"reproduced: {summary.reproduced} of {checked} answer(s) checked; {summary.unchecked} not checked. "
        f"Wrote {run_dir / 'verify.jsonl'}"
    )
    if checked == 0:
        err_console.print("[red]nothing could be checked: no replay ran to its end[/red]")
        sys.exit(NOTHING_SCORED)


def _replays_kept(run_dir: Path, task_ids: list[str] | None) -> tuple[int, int]:
    """How many of the chosen tasks' replays are done (a resume keeps them), and how many there are."""
    from super_bench.runner.rundir import RunDir
    from super_bench.runner.verify_records import read_rows

    try:
        chosen = {r.key for r in RunDir(run_dir).read_results() if task_ids is None or r.task_id in task_ids}
        done = {r.key for r in read_rows(RunDir(run_dir)) if r.replayed and r.key in chosen}
    except Exception:  # interrupted before anything was read: the resume says what it makes of the folder
        return 0, 0
    return len(done), len(chosen)


def _show_environment(err_console: Any) -> Any:
    def show(environment: VerifyEnvironment) -> None:
        used = environment.sandbox
        err_console.print(
            f"  replays run in: {used['backend']}, network {'on' if used['network'] else 'off'}"
            + ("" if environment.given else " (the defaults: the sandbox options choose)")
        )
        summary = (environment.task_environment or {}).get("summary")
        if summary:
            err_console.print(f"  task environment: {shown(str(summary))}")
        for line in environment.refused:
            err_console.print(f"  refused from run.json: {shown(line)}")

    return show


def _progress(err_console: Any) -> Any:
    def show(row: VerifyResult) -> None:
        where = f" ({row.divergence.kind.replace('_', ' ')})" if row.divergence else ""
        err_console.print(f"  {shown(row.task_id)}: {_verdict(row)}{where}")

    return show


def _verdict(row: VerifyResult) -> str:
    return {True: "reproduced", False: "not reproduced", None: "not checked"}[row.reproduced]


def _table(rows: list[VerifyResult]) -> Any:
    from rich.table import Table
    from rich.text import Text

    table = Table(title="Verification")
    from super_bench.cli._display import diverged

    for header in ("task", "answer in the run", "reproduced", "why not", "diverged"):
        table.add_column(header, overflow="fold")
    for row in rows:
        name = row.task_id if row.epoch == 1 else f"{row.task_id} @{row.epoch}"
        where = diverged(row.divergence) if row.divergence else ""
        cells = (name, (row.answer_provenance or "-").replace("_", " "), _verdict(row), row.reason or "", where)
        table.add_row(*map(Text, cells))
    return table
