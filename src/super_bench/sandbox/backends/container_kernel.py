"""A docker task's kernels as the harness holds them, and the container's end as the host sees it.

A kernel the container's guard started (``GuardKernel``) has its exit status from the guard; one started by the
engine's ``exec`` (``ContainerKernel``, where the guard cannot serve) is the ``exec`` process on the host, whose
end is not the kernel's, so its process group in the container is killed first.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from super_bench._files import read_regular
from super_bench.sandbox.backends.container_helper import GuardHelper, HelperGone
from super_bench.sandbox.backends.support import PopenKernelProcess
from super_bench.sandbox.base import KernelProcess


class ContainerKernel(PopenKernelProcess):
    """A kernel started with ``exec``: killing the client on the host does not kill the kernel,
    so its process group in the container is killed first."""

    def __init__(
        self, popen: subprocess.Popen[bytes], stop: Callable[[], None], on_kill: Callable[[], None] | None = None
    ) -> None:
        super().__init__(popen, wrapped=True, on_kill=on_kill)
        self._stop = stop

    def kill(self) -> None:
        if self.popen.poll() is None:
            self._stop()
        super().kill()


class GuardKernel(KernelProcess):
    """A kernel the container's guard started: its exit status is the guard's to tell; ``kill`` kills its
    process group (``stop``) and waits, briefly, to see it gone."""

    def __init__(
        self, helper: GuardHelper, pid: int, stop: Callable[[], None], on_kill: Callable[[], None] | None
    ) -> None:
        self._helper, self._pid, self._stop, self._on_kill = helper, pid, stop, on_kill
        self._status: int | None = None
        self._ended = False

    def poll(self) -> int | None:
        if not self._ended:
            try:
                running, status = self._helper.poll(self._pid)
            except (HelperGone, OSError):
                running, status = False, None  # the guard is gone: so is the container, or its service
            if not running:
                self._ended, self._status = True, status if status is not None else -9
        return self._status if self._ended else None

    def kill(self) -> None:
        if self.poll() is None:
            self._stop()
            deadline = time.monotonic() + 10
            while self.poll() is None and time.monotonic() < deadline:
                time.sleep(0.01)
        if self._on_kill is not None:
            on_kill, self._on_kill = self._on_kill, None
            on_kill()


def container_ended(main_pid: int | None, timeout: float = 5.0) -> bool:
    """Whether the container's first process has ended (a zombie, or gone), waiting up to ``timeout``: as the
    first process of its PID namespace, it ends only once every other process there has been killed."""
    if main_pid is None:
        return False
    deadline = time.monotonic() + timeout
    while True:
        try:
            status = Path(f"/proc/{main_pid}/stat").read_text()
        except OSError:
            return True
        if status.rpartition(")")[2].split()[:1] in (["Z"], ["X"]):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)


def group_in(pidfile: Path) -> int | None:
    """The process group a kernel's launcher wrote (agent code may have written anything there)."""
    try:
        text = read_regular(pidfile, limit=32).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
