"""What the harness does to a container's processes, from the host side, and the bound on what it reads back
from a command it runs in a container.

Agent code is root in its container: any program the harness would run there by ``exec`` (``sh``, ``kill``,
``cat``) can be replaced by one that never ends or streams without end. So the harness kills from the host,
by the processes' host ids, among the processes of the container's own PID namespace only (never its main
process, which keeps the container), and reads at most ``OUTPUT_KEPT`` bytes of anything it runs there.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from pathlib import Path
from typing import IO

# What the harness keeps of a command's standard output and of its error, each.
OUTPUT_KEPT = 1 << 20


def run_bounded(
    args: list[str], *, data: bytes | None = None, timeout: float, kept: int = OUTPUT_KEPT, cwd: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    """``subprocess.run(args, input=data, capture_output=True, timeout=timeout, cwd=cwd)``, keeping only the first
    ``kept`` bytes of each stream (the rest is read and dropped, so the command is not held up by a full pipe)."""
    proc = subprocess.Popen(
        args,
        stdin=subprocess.PIPE if data is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
    )
    outputs: list[bytearray] = [bytearray(), bytearray()]
    drains = [
        threading.Thread(target=_drain, args=(stream, into, kept), daemon=True)
        for stream, into in zip((proc.stdout, proc.stderr), outputs)
    ]
    if data is not None:
        drains.append(threading.Thread(target=_feed, args=(proc.stdin, data), daemon=True))
    for thread in drains:
        thread.start()
    try:
        returncode = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise
    finally:
        for thread in drains:
            thread.join(5)
    return subprocess.CompletedProcess(args, returncode, bytes(outputs[0]), bytes(outputs[1]))


def _drain(stream: IO[bytes] | None, into: bytearray, kept: int) -> None:
    if stream is None:
        return
    with stream, contextlib.suppress(OSError, ValueError):
        while chunk := stream.read(1 << 16):
            if len(into) < kept:
                into += chunk[: kept - len(into)]


def _feed(stream: IO[bytes] | None, data: bytes) -> None:
    if stream is None:
        return
    with contextlib.suppress(OSError, ValueError), stream:
        stream.write(data)


def namespace_pids(main_pid: int) -> list[int]:
    """The host ids of the processes in the PID namespace of the host process ``main_pid`` (a container's main
    process), read from /proc; empty where it is gone."""
    try:
        namespace = os.stat(f"/proc/{main_pid}/ns/pid").st_ino
    except OSError:
        return []
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if os.stat(f"/proc/{entry.name}/ns/pid").st_ino == namespace:
                    found.append(int(entry.name))
    return found


def kill_in_container(main_pid: int, group: int | None = None) -> int:
    """SIGKILL, from the host, the processes of the container whose main process is ``main_pid``: those of
    the process group ``group`` (its id inside the container), or all of them; never the container's own first
    process. Returns how many were signalled."""
    killed = 0
    for pid in namespace_pids(main_pid):
        inner_pid, inner_group = _inner_ids(pid)
        if inner_pid is None or inner_pid == 1 or (group is not None and inner_group != group):
            continue
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
            killed += 1
    return killed


def _inner_ids(pid: int) -> tuple[int | None, int | None]:
    """A process's id and process group as its own (innermost) PID namespace numbers them."""
    inner_pid = inner_group = None
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as f:
            for line in f:
                if line.startswith("NSpid:"):
                    inner_pid = int(line.split()[-1])
                elif line.startswith("NSpgid:"):
                    inner_group = int(line.split()[-1])
    except (OSError, ValueError):
        return None, None
    return inner_pid, inner_group
