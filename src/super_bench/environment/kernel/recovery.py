"""Kernel recovery: a new kernel in place of one that died or would not stop, and the note that tells the agent.

Before an action a still-running cell is interrupted, and a kernel that would not stop or had died is
restarted; a kernel that dies during an action is replaced at once, with why it died (its exit status, the
memory limit's records, the last lines of its log). Where no new kernel can be started, whose failure that
is ``failures.classify_failure`` says: before the agent's first action it is the infrastructure's (raised as
``KernelRestartError``), after it the agent's, and the episode ends (``broken``).
"""

from __future__ import annotations

from typing import NamedTuple

from super_bench import messages
from super_bench.environment.failures import classify_failure
from super_bench.environment.kernel.client import NotebookKernel
from super_bench.errors import KernelError, KernelRestartError, SandboxError
from super_bench.sandbox import Sandbox, SandboxConfig
from super_bench.trajectory import StopReason


class Broken(NamedTuple):
    """A kernel the agent's actions left unable to be restarted: the episode ends for this reason."""

    stop_reason: StopReason
    error: str


def limit_note(sandbox: Sandbox, limits: SandboxConfig) -> str:
    """What the agent is told once a limit (of ``limits``) has ended its task (``sandbox.ended``)."""
    if sandbox.expired:
        return messages.wall_time_passed(limits.wall_time_limit)
    return messages.disk_limit_passed(limits.disk_limit)


class KernelRecovery:
    """Keeps one attempt's kernel able to run code, as far as it can be."""

    def __init__(self, kernel: NotebookKernel, sandbox: Sandbox, limits: SandboxConfig) -> None:
        self.kernel = kernel
        self.sandbox = sandbox
        self.limits = limits  # the sandbox's limits, as the episode's settings give them
        self.broken: Broken | None = None  # set when no new kernel could be started after the agent acted

    def settle(self, *, agent_acted: bool) -> str:
        """Before a new action: interrupt a still-running cell, restart a dead kernel; returns a note."""
        kernel = self.kernel
        if kernel.running:
            if kernel.interrupt().state == "died":
                return self.restart(agent_acted=agent_acted) or messages.PREVIOUS_CELL_WOULD_NOT_STOP
            return messages.PREVIOUS_CELL_INTERRUPTED
        if not kernel.alive and not self.sandbox.ended:
            return self.restart(agent_acted=agent_acted) or messages.KERNEL_HAD_DIED
        return ""

    def restart(self, *, agent_acted: bool) -> str:
        """Start a new kernel in place of the old one; returns "" when one runs, else the note that no kernel
        could be started, which ends the episode (``broken``), or raises where that is no failure of the
        agent's (``KernelRestartError``)."""
        try:
            self.kernel.restart()
        except (KernelError, SandboxError) as e:
            error = (
                e if isinstance(e, KernelRestartError) else KernelRestartError(f"no new kernel could be started: {e}")
            )
            failure = classify_failure(error, agent_acted=agent_acted)
            if failure.status == "infra_error":
                raise error from e
            self.broken = Broken(failure.stop_reason, str(error))
            return messages.no_new_kernel(e)
        return ""

    def replace_dead(self, *, agent_acted: bool) -> str:
        """Start a new kernel in place of one that died during an action; returns the note that tells the
        agent why it died (or that a limit ended the task)."""
        if self.sandbox.ended:
            return limit_note(self.sandbox, self.limits)
        kernel, sandbox = self.kernel, self.sandbox
        cause = messages.death_cause(
            kernel.exit_status, out_of_memory=sandbox.out_of_memory(), memory_limit=self.limits.memory_limit
        )
        log = "\n".join(kernel.log_tail().strip().splitlines()[-5:])
        restart_failed = self.restart(agent_acted=agent_acted)
        return messages.kernel_died(cause, restart_failed=restart_failed, log=log)
