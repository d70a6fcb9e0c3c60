"""``super-bench play TASK_ID``: a person plays a task in the terminal; the run is saved and scored."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from super_bench.tasks.model import Task

# Heavy modules are imported in the functions, so that `super-bench --help` stays instant.
TASK_SETS = ("expert", "masked", "auto")


def find_task(source: str, task_set: str | None, task_id: str) -> Task:
    """The task, looked for in every set of the demo suite or the Hub unless a set is given."""
    from super_bench.errors import TaskError
    from super_bench.tasks.loaders import load_tasks

    bundled = source in ("demo", "hf") or source.startswith("hf:")
    sets = [task_set] if task_set or not bundled else list(TASK_SETS)
    first_error: TaskError | None = None
    for name in sets:
        try:
            return load_tasks(source, name, task_ids=[task_id])[0]
        except TaskError as e:
            first_error = first_error or e
    assert first_error is not None
    raise first_error


@click.command("play")
@click.argument("task_id")
@click.option("--source", default="demo", show_default=True, help="demo, hf, hf:OWNER/NAME[@REV], or a path.")
@click.option("--set", "task_set", type=click.Choice(TASK_SETS), help="Task set [default: whichever has the task].")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Run directory. [default: runs/<time>-play-<task>]",
)
@click.option("--sandbox", default="auto", show_default=True, help="auto, local, bwrap or docker.")
@click.option("--keep-workdirs", is_flag=True, help="Keep the task's working directory afterwards.")
@click.option("--cell-timeout", type=click.FloatRange(min=0, min_open=True), default=300, show_default=True)
@click.option("--max-steps", type=click.IntRange(min=1), default=100, show_default=True)
@click.option("--max-compute", type=click.FloatRange(min=0, min_open=True), default=1800, show_default=True)
def play_command(
    task_id: str,
    source: str,
    task_set: str | None,
    out: Path | None,
    sandbox: str,
    keep_workdirs: bool,
    cell_timeout: float,
    max_steps: int,
    max_compute: float,
) -> None:
    """Play a task yourself: type cells, see their output, edit files and submit an answer.

    The episode is saved and scored like any agent's run (use it to record or check a gold solution).
    """
    from super_bench.cli._display import console, print_summary
    from super_bench.environment import EnvConfig
    from super_bench.runner.run import RunConfig, run
    from super_bench.sandbox import SandboxConfig

    task = find_task(source, task_set, task_id)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    config = RunConfig(
        source=source,
        task_set=task.task_set,
        task_ids=[task.task_id],
        agent="human",
        infra_retries=0,  # a failed session is not restarted under the player's hands
        out=out or Path("runs") / f"{stamp}-play-{task.task_id}",
        env=EnvConfig(
            cell_timeout=cell_timeout,
            max_steps=max_steps,
            max_compute=max_compute,
            sandbox=SandboxConfig(backend=sandbox, keep=keep_workdirs),
        ),
    )
    outcome = run(config, tasks=[task])
    print_summary(outcome.results, outcome.summary, title=f"You on {task.task_id}")
    console.print(f"Run directory: {outcome.run_dir.path}")
