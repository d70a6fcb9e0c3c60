"""The ``local`` sandbox: the kernel as a plain child process in a per-task directory.

Not isolated: agent code runs as the user, with the user's file permissions and network. What it does
give is the host base's (``host``): a task directory, Python environment and scrubbed environment of its
own, the memory, file-size and disk limits, and a stop that kills every process the task started.
"""

from __future__ import annotations

from super_bench.errors import SandboxError
from super_bench.sandbox.backends.host import HostSandbox
from super_bench.sandbox.config import SandboxConfig


class LocalSandbox(HostSandbox):
    name = "local"

    @classmethod
    def check(cls, config: SandboxConfig) -> None:
        if not config.network:
            raise SandboxError("the local sandbox cannot cut the network; use --sandbox bwrap or --sandbox docker")
        super().check(config)
