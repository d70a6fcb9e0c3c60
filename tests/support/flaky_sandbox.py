"""Sandbox backends for tests that fail on purpose: one fails to start a set number of times per task,
then works; another cannot restart its kernel. Registered under a name, they inject failures into
real runs."""

from __future__ import annotations

import threading
from collections import Counter
from typing import ClassVar

from super_bench.errors import SandboxError
from super_bench.sandbox import KernelLaunch
from super_bench.sandbox.backends.local import LocalSandbox


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


class OneKernelSandbox(LocalSandbox):
    """Starts one kernel and then no other, as a sandbox does once its agent has broken what a kernel
    needs to start (deleted it, filled the disk): every restart fails."""

    name = "one-kernel"

    def launch_kernel(self, extra_args: list[str], timeout: float) -> KernelLaunch:
        if getattr(self, "_launched", False):
            raise SandboxError("injected failure: no new kernel can start in this sandbox")
        self._launched = True
        return super().launch_kernel(extra_args, timeout)
