"""Ctrl-C (or a scheduler's SIGTERM) during a command that does long work (``run``, ``verify``,
``doctor``, ``construct``).

The first one stops the running tasks cleanly (their kernels are killed, their sandboxes removed) and
the command then says what is true for it: what was kept and where, and the exact command that resumes
it (the one typed, with ``--out`` added where the run directory was a timestamped default, since a plain
rerun would start a new one, and without ``--redo``, which would throw the kept tasks away), or that
there is nothing to resume. A second one stops at once: finished tasks are already on disk (each result
line is synced as it is written) and a resume clears what the first left half-done, so the run stays
resumable.
"""

from __future__ import annotations

import os
import shlex
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

import click

ARGV = "super_bench.argv"  # the root context's meta key for the arguments as typed
INTERRUPTED = 130


def resume_command(ctx: click.Context, run_dir: Path | None = None, option: str = "--out") -> str:
    """The command line that resumes this command: the one typed, without ``--redo``, and with
    ``option run_dir`` added when ``run_dir`` is given (a default the typed command does not name)."""
    root = ctx.find_root()
    argv = [a for a in root.meta.get(ARGV, []) if a != "--redo"]
    if run_dir is not None:
        argv += [option, str(run_dir)]
    return f"{root.info_name or 'super-bench'} {shlex.join(argv)}"


def finished_in(run_dir: Path) -> int:
    """How many task results ``run_dir`` holds (0 where it has none, or none readable)."""
    from super_bench.runner.rundir import RunDir

    try:
        return len(RunDir(run_dir).read_results())
    except Exception:  # no run there yet, or an unreadable results file: the resume says what it makes of it
        return 0


def kept_line(run_dir: Path, total: int) -> str:
    return f"interrupted: {finished_in(run_dir)} of {total} task(s) finished, kept in {run_dir}"


@contextmanager
def stop_twice(advice: Callable[[], str], stopping: str = "the running tasks") -> Iterator[None]:
    """Within: the first SIGINT or SIGTERM says it is stopping ``stopping`` and raises ``KeyboardInterrupt``
    (the run stops its tasks); a second prints ``advice`` and ends the process at once. ``KeyboardInterrupt``
    leaving the block (or click's ``Abort``, which a prompt raises for it) prints ``advice`` and exits with
    status 130."""
    count = 0

    def handler(signum: int, frame: FrameType | None) -> None:
        nonlocal count
        count += 1
        if count == 1:
            # os.write, not print: the main thread may be inside a write to stderr right now.
            os.write(2, f"\nstopping {stopping} (Ctrl-C again to stop at once)\n".encode())
            raise KeyboardInterrupt
        os.write(2, f"\nstopped at once\n{advice()}\n".encode())
        os._exit(INTERRUPTED)

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    except (KeyboardInterrupt, click.Abort) as e:
        if isinstance(e, click.Abort) and count == 0:
            raise  # the end of input at a prompt, not a stop asked for
        for s in previous:  # stopped already: one more would only cut the advice short
            signal.signal(s, signal.SIG_IGN)
        click.echo(advice(), err=True)
        sys.exit(INTERRUPTED)
    for s, old in previous.items():
        signal.signal(s, old)
