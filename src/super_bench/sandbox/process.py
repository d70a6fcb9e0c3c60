"""``ProcessSandbox``: the public base of a backend whose kernel and commands are processes of this host."""

from __future__ import annotations

from super_bench.errors import SandboxError
from super_bench.sandbox.backends.host import HostSandbox
from super_bench.sandbox.config import SandboxConfig


class ProcessSandbox(HostSandbox):
    """The base of a sandbox backend that runs a task as processes of this host, for plug-ins to subclass.

    It keeps the whole ``Sandbox`` contract: each task gets a work directory, HOME and TMPDIR of its own, a
    Python environment layered over the harness's base interpreter (with none of the harness's packages), an
    environment scrubbed of the host's credentials, the memory, file-size, disk and wall-time limits of
    ``SandboxConfig``, a Jupyter kernel launched and watched there, and a ``stop`` that kills every process
    the task started (daemons included) and removes its directories. A subclass gives itself a ``name`` (what
    ``SandboxConfig.backend`` and the entry-point group ``super_bench.sandboxes`` call it) and may override
    ``check`` (raise ``SandboxError`` saying why it cannot run here) and ``describe``.

    As it is, it runs commands plainly, as the user: agent code is not confined (``isolates`` is false), the
    network cannot be cut (``check`` refuses ``network=False``) and the process limit is not applied. Run
    ``super-bench sandbox check --conformance NAME`` on a subclass to check it against the contract.
    """

    @classmethod
    def check(cls, config: SandboxConfig) -> None:
        if not config.network:
            raise SandboxError(f"the {cls.name} sandbox cannot cut the network")
        super().check(config)
