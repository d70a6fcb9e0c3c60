"""The ``super-bench`` command line."""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import Callable, Iterable
from typing import Any

import click

from super_bench.errors import SuperBenchError

# Exit statuses: 0 success; 1 an unexpected error; 2 bad input or a super-bench error, in one line;
# 3 a run or re-scoring in which no task could be scored (every task an infrastructure failure, say), or a
# verification in which no answer could be checked; 74 a run directory that could not be written (a full or failing
# disk; sysexits' EX_IOERR); 130 interrupted.
NOTHING_SCORED = 3
RUN_DIR_UNWRITABLE = 74

# Subcommands are imported only when used, so `super-bench --help` stays instant.
_COMMANDS = {
    "run": "super_bench.cli.run_cmd:run_command",
    "play": "super_bench.cli.play_cmd:play_command",
    "score": "super_bench.cli.score_cmd:score_command",
    "verify": "super_bench.cli.verify_cmd:verify_command",
    "analyze": "super_bench.cli.analyze_cmd:analyze_command",
    "sandbox": "super_bench.cli.sandbox_cmd:sandbox_group",
    "serve": "super_bench.cli.serve_cmd:serve_command",
    "mcp": "super_bench.cli.mcp_cmd:mcp_command",
    "tasks": "super_bench.cli.tasks_cmd:tasks_group",
    "view": "super_bench.cli.view_cmd:view_command",
    "import-trajectories": "super_bench.cli.view_cmd:import_command",
    "compare": "super_bench.cli.report_cmd:compare_command",
    "leaderboard": "super_bench.cli.report_cmd:leaderboard_command",
    "plot": "super_bench.cli.report_cmd:plot_command",
    "construct": "super_bench.cli.construct_cmd:construct_group",
    "doctor": "super_bench.cli.doctor_cmd:doctor_command",
    "mirror": "super_bench.cli.mirror_cmd:mirror_command",
}


_HYPHEN = "\u2011"  # a non-breaking hyphen, which text wrapping does not split at


class _HelpFormatter(click.HelpFormatter):
    """click's, but a hyphenated word (``swe-agent``, ``--memory-swap``) is never split at its hyphen: an
    option's name cut in two cannot be copied."""

    def write_text(self, text: str) -> None:
        self._whole(lambda: super(_HelpFormatter, self).write_text(text.replace("-", _HYPHEN)))

    def write_dl(self, rows: Iterable[tuple[str, str]], col_max: int = 30, col_spacing: int = 2) -> None:
        kept = [(first, second.replace("-", _HYPHEN)) for first, second in rows]
        self._whole(lambda: super(_HelpFormatter, self).write_dl(kept, col_max, col_spacing))

    def _whole(self, write: Callable[[], None]) -> None:
        start = len(self.buffer)
        write()
        self.buffer[start:] = [part.replace(_HYPHEN, "-") for part in self.buffer[start:]]


class _HelpContext(click.Context):
    formatter_class = _HelpFormatter


class WholeHelpGroup(click.Group):
    """A group whose ``--help`` lists each command with the first sentence of its help whole, wrapped to
    the terminal, where click cuts it to what fits on one line ("..."); its commands' help, like its own,
    wraps without splitting hyphenated words."""

    context_class = _HelpContext

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        command = super().get_command(ctx, name)
        if command is not None:
            command.context_class = _HelpContext
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=sys.maxsize)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


class _Group(WholeHelpGroup):
    """Loads subcommands lazily, and turns super-bench's own errors into one clear line and exit
    status 2 instead of a traceback."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*_COMMANDS, *super().list_commands(ctx)})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = _COMMANDS.get(name)
        if target is None:
            return super().get_command(ctx, name)
        module, _, attr = target.partition(":")
        command: click.Command = getattr(importlib.import_module(module), attr)
        command.context_class = _HelpContext
        return command

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        from super_bench.cli._interrupt import ARGV

        ctx.meta[ARGV] = list(args)  # as typed, for the command that resumes an interrupted run
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except SuperBenchError as e:
            from super_bench.terminal import wrapped

            click.secho(wrapped(f"error: {e}", sys.stderr), fg="red", err=True)
            sys.exit(2)
        except KeyboardInterrupt:
            # Commands that keep work say what they kept and how to resume it (``_interrupt``); the others
            # have nothing to resume.
            click.secho("interrupted", err=True)
            sys.exit(130)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(package_name="super-bench", prog_name="super-bench")
@click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")
def main(verbose: int) -> None:
    """super-bench: run LLM agents on SUPER, the benchmark of setting up and executing research
    repositories, and score them.

    Start with `super-bench run`: it runs the bundled demo tasks with the gold agent, offline.
    """
    from super_bench.terminal import WrappedFormatter

    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(WrappedFormatter("%(levelname)s %(name)s: %(message)s", sys.stderr))
    logging.basicConfig(level=level, handlers=[handler])


def entry() -> None:
    """The ``super-bench`` command (and ``python -m super_bench``): ``main`` with the process set up around it
    (see ``_process``). Tests call ``main`` itself, in their own process."""
    from super_bench.cli._process import exit_now, keep_byte_code, starting

    keep_byte_code()  # before the command's own modules are imported
    starting()
    try:
        main()
    except SystemExit as e:  # click ends every command this way
        exit_now(e.code)
    exit_now(0)
