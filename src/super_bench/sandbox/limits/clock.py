"""The limits every sandbox keeps from outside the task: the wall time (a timer of the harness, which no process
agent code can stop or kill) and the disk limit's end (``watch`` enforcement), as ``Sandbox`` members."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from super_bench._sizes import human_size
from super_bench.errors import SandboxError

if TYPE_CHECKING:
    from super_bench.sandbox.config import LimitSettings


class LimitClock:
    """The wall clock and the disk limit's end of one task; ``Sandbox`` is one (a backend starts the clock in
    ``start``, stops it in ``stop``, and kills what the task runs in ``_wall_time_passed``)."""

    config: LimitSettings

    def __init__(self) -> None:
        self._deadline: float | None = None
        self._disk_passed: int | None = None  # bytes found in the task directory past its disk limit
        self._wall_clock: threading.Timer | None = None
        self._clock_held = False

    def hold_clock(self) -> None:
        """Have ``start`` leave the wall clock stopped until ``start_clock``: a sandbox started ahead of its task
        (the runner's pre-start) spends none of the task's wall time while it waits for the task's agent."""
        self._clock_held = True

    def start_clock(self) -> None:
        """Start the wall clock that ``hold_clock`` held (nothing if none was held)."""
        if self._clock_held:
            self._clock_held = False
            self._start_wall_clock()

    def _start_wall_clock(self) -> None:
        """Start the task's clock; at its limit a timer of the harness calls ``_wall_time_passed``. Enforced
        from outside: no process of the task keeps the time, so none that agent code can stop or kill."""
        if self._clock_held:
            return
        limit = self.config.wall_time_limit
        self._deadline = None if limit is None else time.monotonic() + limit
        if limit is not None:
            self._wall_clock = threading.Timer(limit, self._wall_time_passed)
            self._wall_clock.daemon = True
            self._wall_clock.start()

    def _stop_wall_clock(self) -> None:
        timer, self._wall_clock = self._wall_clock, None
        if timer is not None:
            timer.cancel()

    def _wall_time_passed(self) -> None:  # not abstract: a backend may keep the time itself
        """Called by the wall clock at the limit (from its own thread): stop everything the task runs."""

    @property
    def disk_limit_passed(self) -> bool:
        """The task directory was found holding more than the disk limit: everything the task ran was killed
        and nothing more starts (the ``watch`` enforcement)."""
        return self._disk_passed is not None

    @property
    def ended(self) -> bool:
        """A limit ended the task: the wall time, or the disk limit (``watch``)."""
        return self.expired or self.disk_limit_passed

    def _check_disk(self) -> None:
        """Raise ``SandboxError`` once the task has passed its disk limit."""
        if self._disk_passed is not None:
            limit = self.config.disk_limit or 0
            raise SandboxError(
                f"the task directory held {human_size(self._disk_passed)}, past its disk limit of {human_size(limit)}"
            )

    @property
    def expired(self) -> bool:
        """The wall-time limit has passed: everything the task ran was killed and nothing more starts."""
        return self._deadline is not None and time.monotonic() >= self._deadline

    @property
    def wall_time_left(self) -> float | None:
        """Seconds until the wall-time limit: None without one, 0 once it has passed."""
        if self._deadline is None:
            return None
        return max(0.0, self._deadline - time.monotonic())

    def _time_left(self) -> float | None:
        """Seconds until the wall-time limit (None without one); raises ``SandboxError`` once it has passed."""
        if self._deadline is None:
            return None
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise SandboxError(f"the task's wall-time limit of {self.config.wall_time_limit:g} s has passed")
        return left
