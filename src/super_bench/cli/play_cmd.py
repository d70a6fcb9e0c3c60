"""``super-bench play TASK_ID``: a person plays a task in the terminal; the run is saved and scored."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from super_bench._names import TASK_SETS
from super_bench.cli._options import budget_options, sandbox_options, source_option

if TYPE_CHECKING:
    from super_bench.sandbox import SandboxConfig


@click.command("play")
@click.argument("task_id")
@source_option
@click.option("--set", "task_set", type=click.Choice(TASK_SETS), help="Task set [default: whichever has the task].")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Run directory. [default: runs/<time>-play-<task>]",
)
@sandbox_options
@budget_options
def play_command(
    task_id: str,
    source: str,
    task_set: str | None,
    out: Path | None,
    sandbox: SandboxConfig,
    cell_timeout: float,
    max_steps: int,
    max_compute: float,
    output_limit: int | None,
) -> None:
    """Play a task yourself: type cells, see their output, edit files and submit an answer.

    The episode is saved and scored like any agent's run (use it to record or check a gold solution).
    """
    from super_bench.cli._display import err_console, print_run_dir, print_summary
    from super_bench.environment import EnvConfig
    from super_bench.runner.config import AgentChoice, Execution, RunConfig, TaskChoice
    from super_bench.runner.run import run
    from super_bench.tasks.loaders import find_task

    task = find_task(task_id, source, task_set)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    config = RunConfig(
        tasks=TaskChoice(source=source, task_set=task.task_set, task_ids=[task.task_id]),
        agent=AgentChoice(name="human"),
        execution=Execution(infra_retries=0),  # a failed session is not restarted under the player's hands
        out=out or Path("runs") / f"{stamp}-play-{task.task_id}",
        env=EnvConfig(
            cell_timeout=cell_timeout,
            max_steps=max_steps,
            max_compute=max_compute,
            **({"episode_output_limit": output_limit} if output_limit else {}),
            sandbox=sandbox,
        ),
    )
    try:
        outcome = run(config, tasks=[task], progress=False)  # no bar under the player's prompt
    except KeyboardInterrupt:
        # Outside a cell (while the sandbox starts, say): an episode cannot be resumed, so no resume advice.
        err_console.print(f"interrupted before the episode ended: nothing was scored; {config.out} holds no result")
        sys.exit(130)
    print_summary(outcome.results, outcome.summary, title=f"You on {task.task_id}")
    print_run_dir(outcome.run_dir.path)
    if any(result.stop_reason == "cancelled" for result in outcome.results):
        # Quit by Ctrl-C: the episode is kept and scored, and a script that ran `play` learns it was stopped.
        err_console.print("stopped by Ctrl-C without a submission: the episode above is saved and scored as it was")
        sys.exit(130)
