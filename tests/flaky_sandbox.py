"""A sandbox backend for tests that fails to start a set number of times per task, then works:
registered under a name, it injects infrastructure failures into real runs."""

from __future__ import annotations

import threading
from collections import Counter
from typing import ClassVar

from super_bench.errors import SandboxError
from super_bench.sandbox.local import LocalSandbox


class FlakySandbox(LocalSandbox):
    name = "flaky"
    # Task id -> how many more starts fail.
    failures: ClassVar[Counter[str]] = Counter()
    starts: ClassVar[Counter[str]] = Counter()
    _lock = threading.Lock()

    def start(self) -> None:
        with self._lock:
            self.starts[self.label] += 1
            fail = self.failures[self.label] > 0
            if fail:
                self.failures[self.label] -= 1
        if fail:
            raise SandboxError(f"injected failure: the sandbox of {self.label} would not start")
        super().start()
