"""``super-bench run``."""

from __future__ import annotations

from pathlib import Path

import click

from super_bench.cli._options import ManyValues, as_list, budget_options, mode_option, set_option, source_option


@click.command("run")
@source_option
@set_option
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
@click.option("--sandbox", default="auto", show_default=True, help="auto, local, bwrap or docker.")
@click.option(
    "--task-python",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Interpreter the task environments are layered over (needs ipykernel). [default: this one]",
)
@click.option("--keep-workdirs", is_flag=True, help="Keep each task's working directory after it ends.")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Run directory; rerunning with the same one resumes. [default: runs/<time>-<set>-<agent>]",
)
@budget_options
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
    out: Path | None,
    cell_timeout: float,
    max_steps: int,
    max_compute: float,
    mode: str,
) -> None:
    """Run an agent on tasks and score it.

    With no options: the bundled demo Expert tasks, the gold agent, the safest sandbox available.
    """
    from super_bench.cli._display import RunProgress, console, print_summary
    from super_bench.environment import EnvConfig
    from super_bench.runner.run import RunConfig, run
    from super_bench.sandbox import SandboxConfig

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
            sandbox=SandboxConfig(backend=sandbox, keep=keep_workdirs, task_python=task_python),
        ),
    )
    tasks = config.load()
    if not tasks:
        raise click.UsageError("no tasks selected")
    with RunProgress() as progress:
        outcome = run(config, tasks=tasks, reporter=progress)
    print_summary(outcome.results, outcome.summary, title=f"{agent} on {len(tasks)} task(s)")
    console.print(f"Run directory: {outcome.run_dir.path}")
