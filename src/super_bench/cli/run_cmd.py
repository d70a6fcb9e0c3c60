"""``super-bench run``."""

from __future__ import annotations

from pathlib import Path

import click

from super_bench.cli._display import RunProgress, console, print_summary
from super_bench.cli._options import ManyValues, as_list, mode_option, size_option
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
@click.option(
    "--sandbox",
    default="auto",
    show_default=True,
    help="auto (bwrap where it works, else local), local (not isolated), bwrap or docker.",
)
@click.option(
    "--task-python",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Interpreter the task environments are layered over (needs ipykernel). "
    "[default: the base `super-bench sandbox build` made, else this one]",
)
@click.option("--keep-workdirs", is_flag=True, help="Keep each task's working directory after it ends.")
@click.option(
    "--network",
    type=click.Choice(["on", "off"]),
    default="on",
    show_default=True,
    help="Whether agent code may use the network (bwrap and docker can cut it).",
)
@size_option("--memory-limit", help="Memory agent code may allocate, e.g. 8g (per process; docker: in all).")
@click.option(
    "--max-processes",
    type=click.IntRange(min=1),
    default=1024,
    show_default=True,
    help="Processes and threads a task may run at once (bwrap, docker).",
)
@size_option("--max-file-size", help="Largest file agent code may write, e.g. 20g.")
@click.option(
    "--wall-time-limit",
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds after which everything a task runs is killed and its episode ends.",
)
@click.option("--image", help="Image for --sandbox docker. [default: the one `super-bench sandbox build` makes]")
@click.option("--engine", type=click.Choice(["docker", "podman"]), help="Container engine for --sandbox docker.")
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
    sandbox: str,
    task_python: Path | None,
    keep_workdirs: bool,
    network: str,
    memory_limit: int | None,
    max_processes: int,
    max_file_size: int | None,
    wall_time_limit: float | None,
    image: str | None,
    engine: str | None,
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
            sandbox=SandboxConfig(
                backend=sandbox,
                keep=keep_workdirs,
                task_python=task_python,
                network=network == "on",
                memory_limit=memory_limit,
                max_processes=max_processes,
                max_file_size=max_file_size,
                wall_time_limit=wall_time_limit,
                image=image,
                engine=engine,
            ),
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
