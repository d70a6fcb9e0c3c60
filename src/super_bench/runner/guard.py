"""Writes of the run directory, guarded: a full or failing disk stops the run cleanly, never a torn row.

When the run directory's file system is full (or fails, or turns read-only), each write raises an
``OSError``. The run then stops as a Ctrl-C stops it (``RunDirWriteError``): the tasks in flight are
stopped, the rows already written stay, and the command says how many were kept and how to resume.
A row is appended whole or not at all (a failed append is cut back to where it began), and a reserve
kept in the directory (``.reserve``) is given up when the disk fills, so that the row of the task that
had just finished still fits. Before the run starts, the room it needs is checked (``check_room``).
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

from super_bench.errors import RunDirWriteError

# The errors of a disk that cannot take more: full, over quota, failing, or remounted read-only.
DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS})

RESERVE_BYTES = 1 << 20  # given up when the disk fills, so that the finishing row still fits
TASK_BYTES = 256 << 10  # a task's row, trajectory.json and notebook, as runs of the demo suite write them, rounded up
RESERVE_NAME = ".reserve"


def disk_error(error: BaseException | None) -> OSError | None:
    """The disk error (``DISK_ERRNOS``) ``error`` is, or was raised from; None if none."""
    seen = 0
    while error is not None and seen < 20:
        if isinstance(error, OSError) and error.errno in DISK_ERRNOS:
            return error
        error, seen = error.__cause__ or error.__context__, seen + 1
    return None


def write_error(where: Path, error: OSError) -> RunDirWriteError:
    reason = os.strerror(error.errno) if error.errno is not None else str(error)
    return RunDirWriteError(f"cannot write the run directory {where}: {reason.lower()}; the run stopped")


def check_room(path: Path, tasks: int) -> None:
    """Refuse, before anything is written, a run whose directory's file system has not the room its ``tasks``
    need (``TASK_BYTES`` each, and the reserve)."""
    need = RESERVE_BYTES + tasks * TASK_BYTES
    try:
        free = shutil.disk_usage(path).free
    except OSError:
        return  # not made yet: its making says what is wrong
    if free < need:
        raise RunDirWriteError(
            f"the run directory {path} has {_size(free)} free; the run needs about {_size(need)} there "
            f"({tasks} task(s) at about {_size(TASK_BYTES)} each, and a reserve of {_size(RESERVE_BYTES)}): "
            "free some space, or give --out a directory on another file system"
        )


def keep_reserve(run_dir: Path) -> None:
    """Set aside the reserve (``RESERVE_BYTES``) in ``run_dir``, where the file system can."""
    path = run_dir / RESERVE_NAME
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError:
        return
    try:
        os.posix_fallocate(fd, 0, RESERVE_BYTES)
    except OSError as e:
        if disk_error(e) is not None:
            raise write_error(run_dir, e) from e
        # A file system without fallocate: no reserve, the write of a finishing row may fail as any other.
    finally:
        os.close(fd)


def give_up_reserve(run_dir: Path) -> bool:
    """Free the reserve; whether there was one to free."""
    try:
        (run_dir / RESERVE_NAME).unlink()
    except OSError:
        return False
    return True


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    value, units = n / 1024, ["KiB", "MiB", "GiB"]
    while value >= 1024 and len(units) > 1:
        value, units = value / 1024, units[1:]
    return f"{value:.1f} {units[0]}"
