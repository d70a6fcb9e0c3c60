"""The ``super-bench`` command line."""

from __future__ import annotations

import logging
import sys
from typing import Any

import click

from super_bench import __version__
from super_bench.errors import SuperBenchError


class _Group(click.Group):
    """Turns super-bench's own errors into one clear line and exit status 2, not a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except SuperBenchError as e:
            click.secho(f"error: {e}", fg="red", err=True)
            sys.exit(2)
        except KeyboardInterrupt:
            click.secho("interrupted; finished tasks are saved, rerun the same command to resume", err=True)
            sys.exit(130)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(__version__, prog_name="super-bench")
@click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")
def main(verbose: int) -> None:
    """super-bench: run LLM agents on SUPER, the benchmark of setting up and executing research
    repositories, and score them.

    Start with `super-bench run`: it runs the bundled demo tasks with the gold agent, offline.
    """
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")


def _register() -> None:
    from super_bench.cli.run_cmd import run_command
    from super_bench.cli.sandbox_cmd import sandbox_group
    from super_bench.cli.score_cmd import score_command
    from super_bench.cli.tasks_cmd import tasks_group

    main.add_command(run_command)
    main.add_command(score_command)
    main.add_command(tasks_group)
    main.add_command(sandbox_group)


_register()
