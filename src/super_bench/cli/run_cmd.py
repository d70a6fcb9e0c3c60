"""``super-bench run``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from super_bench.cli import NOTHING_SCORED, RUN_DIR_UNWRITABLE
from super_bench.cli._options import (
    RUN,
    Default,
    ManyValues,
    ManyValuesCommand,
    as_list,
    budget_options,
    key_values,
    mode_option,
    sandbox_options,
    set_option,
    source_option,
)

if TYPE_CHECKING:
    from super_bench.runner.config import RunConfig
    from super_bench.sandbox import SandboxConfig

RAY = "super_bench.runner.config:RayOptions."


@click.command("run", cls=ManyValuesCommand)
@source_option
@set_option
@click.option("--task-ids", cls=ManyValues, metavar="ID ...", help="Run only these tasks.")
@click.option("--limit", type=click.IntRange(min=1), help="Run at most this many tasks.")
@click.option(
    "--query",
    help="Run one ad-hoc task with this query instead of a task set; it has no gold solution, so give an --agent "
    "that works on its own.",
)
@click.option("--skip-invalid", is_flag=True, help="Skip invalid task rows instead of failing.")
@click.option(
    "--agent",
    type=str,
    default=Default(RUN + "agent"),
    show_default=True,
    help="gold, replay:FILE, react, react-super, swe-agent, reflexion[:AGENT], human, mcp:COMMAND (an external MCP "
    "client, docs/integrations.md), or a plug-in.",
)
@click.option("--model", help="Model as provider/name, for agents that use one.")
@click.option("--seed", type=int, help="Seed for agents and models that sample.")
@sandbox_options
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Run directory; rerunning with the same one resumes. [default: runs/<time>-<set or query>-<agent>[-<model>]]",
)
@budget_options
@click.option(
    "--max-tokens", type=click.IntRange(min=1), help="Prompt tokens per task. [default: 600k; 400k for masked]"
)
@click.option("--max-cost", type=click.FloatRange(min=0, min_open=True), help="USD of model calls per task.")
@click.option(
    "--agent-setting",
    "agent_settings",
    multiple=True,
    metavar="KEY=VALUE",
    help="An agent setting (repeatable), e.g. temperature=0 or attempts=2; see docs/agents.md.",
)
@click.option(
    "--prices",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="JSON or TOML file of model prices (USD per 1M tokens), added to the built-in table.",
)
@click.option("--no-cache", is_flag=True, help="Do not use or fill the on-disk cache of model replies.")
@mode_option
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    help="Tasks at once, each in its own sandbox. [default: 1; with Ray, as many as the cluster's CPUs fit]",
)
@click.option(
    "--prestart",
    type=click.Choice(["auto", "off"]),
    default=Default(RUN + "prestart"),
    show_default=True,
    help="auto: while every worker is busy and tasks wait, start the next task's sandbox ahead if a core is idle.",
)
@click.option(
    "--executor",
    type=str,
    default=Default(RUN + "executor"),
    show_default=True,
    help="local (this machine) or ray (a Ray cluster, or a local Ray instance); see docs/runner.md.",
)
@click.option("--ray-address", metavar="ADDR", help="Ray cluster to join: auto, HOST:6379 or ray://HOST:10001.")
@click.option(
    "--ray-cpus",
    type=click.FloatRange(min=0, min_open=True),
    default=Default(RAY + "cpus"),
    show_default=True,
    help="CPUs per Ray task.",
)
@click.option("--ray-memory", type=click.FloatRange(min=0, min_open=True), help="GiB of memory per Ray task.")
@click.option(
    "--ray-gpus",
    type=click.FloatRange(min=0),
    default=Default(RAY + "gpus"),
    show_default=True,
    help="GPUs per Ray task.",
)
@click.option(
    "--infra-retries",
    type=click.IntRange(min=0),
    default=Default(RUN + "infra_retries"),
    show_default=True,
    help="Times a task is tried again after an infrastructure failure (sandbox, kernel, model service).",
)
@click.option(
    "--epochs",
    type=click.IntRange(min=1),
    default=Default(RUN + "epochs"),
    show_default=True,
    help="Runs of each task (seeds: --seed, +1, ...); summary.json gets standard errors and intervals.",
)
@click.option(
    "--order",
    type=click.Choice(["longest-first", "given"]),
    default=Default(RUN + "order"),
    show_default=True,
    help="With several workers, the tasks that took longest in earlier runs first (untimed ones first of all), "
    "or the order given.",
)
@click.option("--redo", is_flag=True, help="Replace the run in --out instead of resuming it.")
@click.option(
    "--adopt",
    is_flag=True,
    help="Resume a run whose run.json is lost or unreadable: keep the results these settings match, and "
    "rebuild run.json from them.",
)
@click.option("--yes", is_flag=True, help="With --adopt: adopt rows too old to be checked without asking.")
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
    output_limit: int | None,
    max_tokens: int | None,
    max_cost: float | None,
    agent_settings: tuple[str, ...],
    prices: Path | None,
    no_cache: bool,
    mode: str,
    workers: int | None,
    prestart: str,
    executor: str,
    ray_address: str | None,
    ray_cpus: float,
    ray_memory: float | None,
    ray_gpus: float,
    infra_retries: int,
    epochs: int,
    order: str,
    redo: bool,
    adopt: bool,
    yes: bool,
) -> None:
    """Run an agent on tasks and score it.

    With no options: the bundled demo Expert tasks, the gold agent, the safest sandbox available.
    Exits with status 3 when no task could be scored (every one an infrastructure failure), 74 when the run
    directory could not be written (its disk full or failing: what finished is kept, rerun to resume).
    """
    from super_bench.cli._display import err_console, print_query_answer, print_run_dir, print_summary
    from super_bench.cli._interrupt import kept_line, resume_command, stop_twice
    from super_bench.cli._process import started
    from super_bench.environment import EnvConfig
    from super_bench.errors import IdentityLostError, RunDirWriteError
    from super_bench.models import ModelOptions
    from super_bench.runner.config import RayOptions, RunConfig
    from super_bench.runner.progress import RunProgress
    from super_bench.runner.run import run

    started()
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
        agent_settings=key_values(agent_settings, "--agent-setting"),
        model_options=ModelOptions(prices=prices, **({"cache": None} if no_cache else {})),
        out=out,
        mode=mode,
        executor=executor,
        workers=workers,
        prestart=prestart,
        ray=RayOptions(address=ray_address, cpus=ray_cpus, memory_gb=ray_memory, gpus=ray_gpus),
        infra_retries=infra_retries,
        epochs=epochs,
        order=order,
        redo=redo,
        adopt=adopt,
        env=EnvConfig(
            cell_timeout=cell_timeout,
            max_steps=max_steps,
            max_compute=max_compute,
            **({"episode_output_limit": output_limit} if output_limit else {}),
            max_tokens=max_tokens,
            max_cost=max_cost,
            sandbox=sandbox,
        ),
    )
    tasks = config.load()
    if not tasks:
        raise click.UsageError("no tasks selected")
    # Named now, so that an interrupted run can say where it is and how to resume it.
    config.out = out or config.default_out()
    run_dir = config.out
    ctx = click.get_current_context()

    def advice() -> str:
        total = len(tasks) * epochs
        return f"{kept_line(run_dir, total)}\nresume with: {resume_command(ctx, None if out else run_dir)}"

    if adopt and not yes:
        _confirm_adoption(config)
    try:
        with stop_twice(advice), RunProgress() as progress:
            outcome = run(config, tasks=tasks, reporter=progress)
    except RunDirWriteError as e:
        # Stopped as a Ctrl-C stops: what finished is on disk; say so, and how to go on once there is room.
        click.echo(f"error: {e}\n{advice().replace('interrupted: ', '', 1)}", err=True)
        sys.exit(RUN_DIR_UNWRITABLE)
    except IdentityLostError as e:
        if adopt:
            raise
        raise IdentityLostError(f"{e}; to keep them: {resume_command(ctx, None if out else run_dir)} --adopt") from None
    print_summary(outcome.results, outcome.summary, title=f"{agent} on {len(tasks)} task(s)")
    if query is not None:
        print_query_answer(outcome.results)
    print_run_dir(outcome.run_dir.path)
    if outcome.summary.n_scored == 0:
        # A CI job must not pass on a run that measured nothing (a dead model endpoint, say).
        err_console.print("[red]no task could be scored: every task failed on the infrastructure[/red]")
        sys.exit(NOTHING_SCORED)


def _confirm_adoption(config: RunConfig) -> None:
    """Before adopting rows that cannot be checked (written before rows carried their identity), show the settings
    they will be recorded under and ask; without a terminal to ask at, ``--yes`` is needed."""
    import json

    from super_bench.runner.adopt import unchecked_rows
    from super_bench.runner.manifest import identity
    from super_bench.runner.rundir import RunDir

    assert config.out is not None
    unchecked = unchecked_rows(RunDir(config.out))
    if not unchecked:
        return
    shown = json.dumps(identity(config), indent=2, sort_keys=True)
    click.echo(
        f"{unchecked} result(s) in {config.out} were written before rows recorded their settings, so they cannot be "
        f"checked. They will be kept as run with these settings:\n{shown}",
        err=True,
    )
    if not sys.stdin.isatty():
        raise click.UsageError("--adopt of rows that cannot be checked needs a confirmation: check them, and add --yes")
    if not click.confirm("Adopt them?", err=True):
        raise click.Abort
