"""``super-bench run``."""

from __future__ import annotations

from pathlib import Path

import click

from super_bench.cli._display import RunProgress, console, print_summary
from super_bench.cli._options import ManyValues, as_list, mode_option, sandbox_options
from super_bench.environment import EnvConfig
from super_bench.runner.run import RunConfig, run
from super_bench.sandbox import SandboxConfig, check_backend
from super_bench.tasks.model import TASK_SETS


@click.command("run")
@click.option(
    "--source",
    default="demo",
    show_default=True,
    help="Tasks: demo (bundled, offline), hf (the allenai/super dataset), hf:OWNER/NAME[@REV], "
    "or a .jsonl/.json/.parquet file or directory.",
)
@click.option(
    "--set",
    "task_set",
    type=click.Choice(TASK_SETS),
    default=None,
    help="Task set. [default: expert for demo and hf; every row for files]",
)
@click.option("--task-ids", cls=ManyValues, metavar="ID ...", help="Run only these tasks.")
@click.option("--limit", type=click.IntRange(min=1), help="Run at most this many tasks.")
@click.option("--query", help="Run one ad-hoc task with this query instead of a task set.")
@click.option("--skip-invalid", is_flag=True, help="Skip invalid task rows instead of failing.")
@click.option(
    "--agent",
    default="gold",
    show_default=True,
    help="gold, replay:FILE, or a registered agent (react, react-super, ...).",
)
@click.option("--model", help="Model as provider/name, for agents that use one.")
@click.option("--seed", type=int, help="Seed for agents and models that sample.")
@sandbox_options
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Run directory; rerunning with the same one resumes. [default: runs/<time>-<set>-<agent>]",
)
@click.option(
    "--cell-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=300,
    show_default=True,
    help="Soft timeout of a cell, in seconds.",
)
@click.option("--max-steps", type=click.IntRange(min=1), default=100, show_default=True, help="Agent steps per task.")
@click.option(
    "--max-compute",
    type=click.FloatRange(min=0, min_open=True),
    default=1800,
    show_default=True,
    help="Seconds of execution per task.",
)
@mode_option
def run_command(
    source: str,
    task_set: str | None,
    task_ids: tuple[str, ...],
    limit: int | None,
    query: str | None,
    skip_invalid: bool,
    agent: str,
    model: str | None,
    seed: int | None,
    sandbox: SandboxConfig,
    out: Path | None,
    cell_timeout: float,
    max_steps: int,
    max_compute: float,
    mode: str,
) -> None:
    """Run an agent on tasks and score it.

    With no options: the bundled demo Expert tasks, the gold agent, the safest sandbox available.
    """
    config = RunConfig(
        source=source,
        task_set=task_set,
        task_ids=as_list(task_ids),
        limit=limit,
        query=query,
        skip_invalid=skip_invalid,
        agent=agent,
        model=model,
        seed=seed,
        out=out,
        mode=mode,
        env=EnvConfig(
            cell_timeout=cell_timeout,
            max_steps=max_steps,
            max_compute=max_compute,
            sandbox=sandbox,
        ),
    )
    tasks = config.load()
    if not tasks:
        raise click.UsageError("no tasks selected")
    check_backend(config.env.sandbox)  # before the progress bar, so that a missing sandbox is one clear line
    with RunProgress() as progress:
        outcome = run(config, tasks=tasks, reporter=progress)
    print_summary(outcome.results, outcome.summary, title=f"{agent} on {len(tasks)} task(s)")
    console.print(f"Run directory: {outcome.run_dir.path}")
