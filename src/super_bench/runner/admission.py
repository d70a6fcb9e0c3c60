"""Holding tasks back until their machine has room for them: the free disk and memory a task needs.

A task needs its limits: ``--disk-limit`` of free disk where its directory goes and ``--memory-limit``
of available memory; without a limit, a floor no task can do without (``MIN_DISK``, ``MIN_MEMORY``).
A task that starts reserves what it needs, and the part of the reservation it has not used yet is
taken off what the machine has free, so that tasks started together do not count the same free space
twice. A task waits, checking again every second, while what is left is less than it needs; one that
could never fit (it needs more than the file system or the memory holds) stops the run at once.

Each process (the harness, or a Ray worker) has one ``ADMISSION`` for its machine; the live display
shows who waits for what, and each result records how long it waited.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from super_bench._sizes import human_size
from super_bench.errors import ConfigError

log = logging.getLogger(__name__)

MIN_DISK = 1 << 30  # a task environment, a kernel, a repository
MIN_MEMORY = 512 << 20  # a kernel and a small script
POLL = 1.0

# How much of its reservation a running task has used so far: (disk, memory) bytes, None where unknown.
Usage = Callable[[], tuple[int | None, int | None]]


@dataclass(frozen=True)
class Need:
    """Bytes of free disk and of available memory a task needs to start."""

    disk: int
    memory: int

    @classmethod
    def of(cls, disk_limit: int | None, memory_limit: int | None) -> Need:
        return cls(disk_limit or MIN_DISK, memory_limit or MIN_MEMORY)


@dataclass(eq=False)
class Slot:
    """A running task's reservation."""

    need: Need
    where: Path
    waited: float = 0.0
    usage: Usage | None = field(default=None, repr=False)

    def outstanding(self) -> tuple[int, int]:
        """What of the reservation the task has not used yet (and so is still counted as free)."""
        disk, memory = self.usage() if self.usage is not None else (None, None)
        return max(0, self.need.disk - (disk or 0)), max(0, self.need.memory - (memory or 0))


def _existing(path: Path) -> Path:
    """``path``, or its nearest parent that exists (the sandboxes' directory may not be made yet)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def free_disk(path: Path) -> tuple[int, int]:
    """Bytes free to unprivileged users on the file system of ``path``, and its size."""
    stats = os.statvfs(_existing(path))
    return stats.f_bavail * stats.f_frsize, stats.f_blocks * stats.f_frsize


def free_memory() -> tuple[int, int]:
    """Bytes of memory available to new work (the kernel's estimate, ``MemAvailable``), and the total."""
    values: dict[str, int] = {}
    with open("/proc/meminfo") as f:
        for line in f:
            key, _, rest = line.partition(":")
            values[key] = int(rest.split()[0]) * 1024
    return values["MemAvailable"], values["MemTotal"]


def _gib(n: int) -> str:
    return human_size(n)


class Admission:
    """Lets tasks start while their machine has room for them (see the module's docstring)."""

    def __init__(self, poll: float = POLL) -> None:
        self.poll = poll
        self._lock = threading.Lock()
        self._running: list[Slot] = []
        self._waiting: dict[int, str] = {}

    def waiting(self) -> list[str]:
        """What each waiting task waits for: ``disk`` or ``memory``."""
        with self._lock:
            return list(self._waiting.values())

    def _lacking(self, need: Need, where: Path) -> str | None:
        """What there is too little of for ``need`` now (a sentence), or None when the task fits."""
        disk, disk_total = free_disk(where)
        memory, memory_total = free_memory()
        if need.disk > disk_total:
            raise ConfigError(
                f"a task needs {_gib(need.disk)} of disk (--disk-limit), more than the file system of {where} "
                f"holds ({_gib(disk_total)}); lower --disk-limit or put the sandboxes elsewhere"
            )
        if need.memory > memory_total:
            raise ConfigError(
                f"a task needs {_gib(need.memory)} of memory (--memory-limit), more than this machine has "
                f"({_gib(memory_total)}); lower --memory-limit"
            )
        device = os.stat(_existing(where)).st_dev
        for slot in self._running:
            held_disk, held_memory = slot.outstanding()
            disk -= held_disk if os.stat(_existing(slot.where)).st_dev == device else 0
            memory -= held_memory
        if disk < need.disk:
            return f"disk: {_gib(max(0, disk))} free at {where} of the {_gib(need.disk)} a task needs"
        if memory < need.memory:
            return f"memory: {_gib(max(0, memory))} available of the {_gib(need.memory)} a task needs"
        return None

    def reserve(self, need: Need, where: Path) -> Slot | None:
        """Hold a reservation for ``need`` now, if the machine has room for it, without waiting; give it
        back with ``release``. For a task's environment started ahead of the task (``runner.prestart``)."""
        slot = Slot(need, where)
        with self._lock:
            if self._lacking(need, where) is not None:
                return None
            self._running.append(slot)
        return slot

    def release(self, slot: Slot) -> None:
        with self._lock:
            self._running.remove(slot)

    @contextmanager
    def room(self, need: Need, where: Path, check: Callable[[], None] = lambda: None) -> Iterator[Slot]:
        """Wait until the machine has room for ``need`` (``check`` is called between looks: it raises to
        give up), then hold the reservation while the block runs."""
        slot = Slot(need, where)
        start = time.monotonic()
        waited = False
        try:
            while True:
                with self._lock:
                    lacking = self._lacking(need, where)
                    if lacking is None:
                        self._running.append(slot)
                        break
                    if id(slot) not in self._waiting:
                        log.info("a task waits for room: %s", lacking)
                    self._waiting[id(slot)] = lacking.partition(":")[0]
                waited = True
                check()
                time.sleep(self.poll)
        finally:
            with self._lock:
                self._waiting.pop(id(slot), None)
        slot.waited = time.monotonic() - start if waited else 0.0
        try:
            yield slot
        finally:
            self.release(slot)


ADMISSION = Admission()
