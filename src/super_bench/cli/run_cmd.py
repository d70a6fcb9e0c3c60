"""``super-bench run``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from super_bench._names import TASK_SETS
from super_bench.cli import NOTHING_SCORED, RUN_DIR_UNWRITABLE
from super_bench.cli._generated import GeneratedCommand, field_option, model_options
from super_bench.cli._options import as_list, budget_options, key_values, sandbox_options

if TYPE_CHECKING:
    from super_bench.runner.config import RunConfig
    from super_bench.sandbox import SandboxConfig


def _generated() -> list[click.Parameter]:
    """The options of RunConfig's own settings, by their flat names (``--agent``, ``--workers``, ``--ray-cpus``)."""
    from super_bench.runner.config import AgentChoice, Execution, RayOptions, RunConfig, TaskChoice

    return [
        *model_options(
            TaskChoice,
            ("source", "task_set", "task_ids", "limit", "query", "skip_invalid"),
            overrides={
                "task_set": {
                    "flags": ["--set"],
                    "type": click.Choice(TASK_SETS),
                    "help": "Task set. [default: expert for demo and hf; every row for files]",
                },
                "task_ids": {"metavar": "ID ..."},
            },
        ),
        field_option(AgentChoice, "name", option="agent"),
        *model_options(AgentChoice, ("model", "seed")),
        *model_options(
            RunConfig, ("out", "mode"), overrides={"out": {"type": click.Path(file_okay=False, path_type=Path)}}
        ),
        *model_options(Execution, ("workers", "prestart", "executor")),
        *model_options(
            RayOptions,
            ("address", "cpus", "memory_gb", "gpus"),
            prefix="ray_",
            overrides={"address": {"metavar": "ADDR"}, "memory_gb": {"flags": ["--ray-memory"]}},
        ),
        *model_options(Execution, ("infra_retries", "epochs", "order")),
        *model_options(RunConfig, ("redo", "adopt")),
    ]


@click.command("run", cls=GeneratedCommand, generate=_generated)
@sandbox_options
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
@click.option("--yes", is_flag=True, help="With --adopt: adopt rows too old to be checked without asking.")
def run_command(
    sandbox: SandboxConfig,
    cell_timeout: float,
    max_steps: int,
    max_compute: float,
    output_limit: int | None,
    max_tokens: int | None,
    max_cost: float | None,
    agent_settings: tuple[str, ...],
    prices: Path | None,
    no_cache: bool,
    yes: bool,
    **settings: Any,
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
    from super_bench.runner.config import RunConfig
    from super_bench.runner.progress import RunProgress
    from super_bench.runner.run import run

    started()
    ray = {name.removeprefix("ray_"): settings.pop(name) for name in list(settings) if name.startswith("ray_")}
    config = RunConfig.model_validate(
        {
            **settings,
            "task_ids": as_list(settings["task_ids"]),
            "ray": ray,
            "agent_settings": key_values(agent_settings, "--agent-setting"),
            "model_options": ModelOptions(prices=prices, **({"cache": None} if no_cache else {})),
            "env": EnvConfig(
                cell_timeout=cell_timeout,
                max_steps=max_steps,
                max_compute=max_compute,
                **({"episode_output_limit": output_limit} if output_limit else {}),
                max_tokens=max_tokens,
                max_cost=max_cost,
                sandbox=sandbox,
            ),
        }
    )
    out, adopt = config.out, config.adopt
    tasks = config.load()
    if not tasks:
        raise click.UsageError("no tasks selected")
    # Named now, so that an interrupted run can say where it is and how to resume it.
    config.out = out or config.default_out()
    run_dir = config.out
    ctx = click.get_current_context()

    def advice() -> str:
        total = len(tasks) * config.execution.epochs
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
    print_summary(outcome.results, outcome.summary, title=f"{config.agent.name} on {len(tasks)} task(s)")
    if config.tasks.query is not None:
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
