"""Starting the next task's environment ahead, while every worker is busy, a task waits, and a core is idle.

A task's sandbox and kernel take about a second of one core to start. Where agents wait on a model, the
machine's cores idle while every worker waits, and the next task's start can be done then, so that a freed
worker begins at the agent's first step. Where tasks compute, the cores are busy, and a start made ahead
would only compete with the running tasks for them (started blindly, a pool of them made two workers on two
cores slower): so nothing starts ahead unless a core has been idle, as measured just now (``idle_cores``).

Environments are prepared one at a time, each after a second of an idle core, for the tasks that run next, up
to one per worker (at most ``AHEAD``): workers that wait on a model tend to free together. The worker that takes
such a task gets its environment (``Prestart.take``), waiting for a preparation under way rather than starting a
second one; one that is not taken (the run stops) is discarded: its kernel and sandbox stopped, nothing left.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Generic, Protocol, TypeVar

log = logging.getLogger(__name__)

WINDOW = 0.5  # seconds of each look at the cores
LOOKS = 2  # consecutive looks that must each find an idle core: a second of idleness, not a gap between cells
IDLE = 0.9  # of one core's time idle in a look
AHEAD = 4  # environments prepared at most at a time (each holds a kernel's memory and the room of a task)


def cpu_times(stat: str, cpus: Iterable[int]) -> tuple[int, int]:
    """Idle and total time (in clock ticks) of the CPUs ``cpus``, summed, from the text of ``/proc/stat``.

    Idle is ``idle`` + ``iowait`` (a CPU waiting on a disk runs nothing); total is every state up to
    ``steal`` (``guest`` and ``guest_nice`` are already counted in ``user`` and ``nice``). CPUs the text does
    not list (offline ones) count nothing. A line that is not a CPU's numbers raises ``ValueError``."""
    wanted = {f"cpu{n}" for n in cpus}
    idle = total = 0
    for line in stat.splitlines():
        name, _, rest = line.partition(" ")
        if name not in wanted:
            continue
        fields = [int(x) for x in rest.split()]
        if len(fields) < 4:
            raise ValueError(f"/proc/stat: {name} has {len(fields)} fields, not the 4 or more of a CPU")
        idle += fields[3] + (fields[4] if len(fields) > 4 else 0)
        total += sum(fields[:8])
    return idle, total


def idle_cores(before: tuple[int, int], after: tuple[int, int], cpus: int) -> float:
    """How many of ``cpus`` cores were idle, on average, between two ``cpu_times`` readings (0 where no time
    passed: the counters did not move)."""
    idle, total = after[0] - before[0], after[1] - before[1]
    if total <= 0 or cpus <= 0:
        return 0.0
    return cpus * min(1.0, max(0.0, idle / total))


def core_idle(window: float = WINDOW, looks: int = LOOKS, threshold: float = IDLE, stat: str = "/proc/stat") -> bool:
    """Whether a core of this process's CPUs stayed idle for ``looks`` windows of ``window`` seconds in a row.

    Measured from ``/proc/stat``, the kernel's time accounts of each CPU, over the CPUs this process may run on
    (its affinity: what a container or ``taskset`` leaves it): idleness now, whoever else uses the machine. Not
    the load average, which follows the last minute (a run that turned to computing would go on starting
    environments ahead for tens of seconds) and counts processes waiting on disks, nor a count of this run's
    busy workers, which knows nothing of other work on the machine. (A CPU quota of a cgroup is not seen: where
    one is the bound, turn pre-start off.) Where ``/proc/stat`` cannot be read, no core counts as idle."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
        with open(stat) as f:
            before = cpu_times(f.read(), cpus)
        for _ in range(looks):
            time.sleep(window)
            with open(stat) as f:
                after = cpu_times(f.read(), cpus)
            if idle_cores(before, after, len(cpus)) < threshold:
                return False
            before = after
    except (OSError, ValueError, AttributeError):  # no /proc (not Linux), or one it cannot read
        return False
    return True


def _core_idle() -> bool:
    return core_idle()  # looked up at each call, where a test may put a probe of its own


class Discardable(Protocol):
    def discard(self) -> None: ...


Item = TypeVar("Item")
Ready = TypeVar("Ready", bound=Discardable)


class Prestart(Generic[Item, Ready]):
    """Prepares the environments of the items that run next (``prepare``: None when it cannot now), one after
    another on a thread of its own, while all ``workers`` are busy, items wait (``upcoming``) and ``idle`` says
    a core is idle; at most ``ahead`` of them at a time (by default one per worker, and no more than ``AHEAD``)."""

    def __init__(
        self,
        workers: int,
        prepare: Callable[[Item], Ready | None],
        idle: Callable[[], bool] | None = None,
        ahead: int | None = None,
    ) -> None:
        self.workers = workers
        self.ahead = min(workers, AHEAD) if ahead is None else ahead
        self._prepare = prepare
        self._idle = idle or _core_idle
        self._cond = threading.Condition()
        self._next: list[Item] = []
        self._busy = 0
        self._preparing: Item | None = None
        self._ready: list[tuple[Item, Ready]] = []
        self._failed: list[Item] = []  # not tried again: their workers start them as they take them
        self._stopped = False
        self._thread = threading.Thread(target=self._loop, name="super-bench-prestart", daemon=True)
        self._thread.start()

    def upcoming(self, items: Sequence[Item]) -> None:
        """The items that run next, in order, as workers free (none: nothing waits)."""
        with self._cond:
            self._next = list(items[: self.ahead])
            self._cond.notify_all()

    def begin(self) -> None:
        """A worker has begun an item."""
        with self._cond:
            self._busy += 1
            self._cond.notify_all()

    def end(self) -> None:
        """A worker has finished one."""
        with self._cond:
            self._busy -= 1
            self._cond.notify_all()

    def take(self, item: Item) -> Ready | None:
        """What was prepared for ``item`` (after the preparation under way, if it is item's), or None."""
        with self._cond:
            self._next = [other for other in self._next if other is not item]  # it starts now
            while self._preparing is item:
                self._cond.wait()
            for i, (prepared, ready) in enumerate(self._ready):
                if prepared is item:
                    del self._ready[i]
                    log.debug("a worker takes the environment prepared ahead")
                    return ready
            return None

    def close(self) -> None:
        """Prepare nothing more, and discard what was prepared and not taken (after a preparation under way)."""
        with self._cond:
            self._stopped = True
            self._next = []
            self._cond.notify_all()
            while self._preparing is not None:  # its thread discards it: wait until it has
                self._cond.wait()
            left, self._ready = self._ready, []
        for _, ready in left:
            ready.discard()

    def _wanted(self) -> Item | None:
        """The item to prepare now, under the lock: no worker is free, fewer than ``ahead`` are prepared, and
        the first waiting item that is not is not one whose preparation failed."""
        if self._stopped or len(self._ready) >= self.ahead or self._busy < self.workers:
            return None
        done = [item for item, _ in self._ready] + self._failed
        return next((item for item in self._next if not any(item is other for other in done)), None)

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._stopped and self._wanted() is None:
                    self._cond.wait()
                if self._stopped:
                    return
            if not self._idle():  # looks at the cores for a second: the loop's pace while they are busy
                continue
            with self._cond:
                item = self._wanted()
                if item is None:
                    continue
                self._preparing = item
            ready: Ready | None = None
            try:
                ready = self._prepare(item)
            except Exception as e:  # the task's own failures to start are kept in what is prepared: this is else
                log.warning("could not start a task's environment ahead (it starts as a worker takes it): %s", e)
                with self._cond:
                    self._failed = [*self._failed[-100:], item]
            with self._cond:
                if ready is not None and not self._stopped:
                    self._ready.append((item, ready))
                    ready = None
                    log.debug("prepared the environment of a waiting task ahead")
            if ready is not None:  # stopped meanwhile
                ready.discard()
            with self._cond:
                self._preparing = None
                self._cond.notify_all()
