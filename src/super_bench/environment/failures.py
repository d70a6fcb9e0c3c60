"""Whose failure is it: the rule that decides whether a task that failed counts against the agent.

The rule (docs/runner.md, "Failure classes"): a task is an infrastructure failure (``infra_error``,
retried, and left out of the means) only when the harness or a service outside the agent's control
failed. Whatever the agent's own actions caused is the agent's failure and is scored as one: it
cannot drop a task it would fail by breaking something.
"""

from __future__ import annotations

from typing import NamedTuple

from super_bench._names import TaskStatus
from super_bench.errors import KernelError, KernelRestartError, ModelUnavailableError, SandboxError
from super_bench.trajectory import StopReason

# Failures of the machinery rather than of the agent: the sandbox, the kernel or the model service.
INFRA_ERRORS = (SandboxError, KernelError, ModelUnavailableError)


class Failure(NamedTuple):
    status: TaskStatus
    stop_reason: StopReason


def classify_failure(error: BaseException, *, agent_acted: bool) -> Failure:
    """The status and stop reason of an episode that ``error`` ended.

    ``agent_acted``: whether the agent had begun its first action (pre-executed cells of Masked tasks
    are the harness's, not the agent's).

    - A kernel that cannot be restarted after the agent acted: ``completed``, ``environment_broken``.
      Kernels start from the harness's own Python, so only what the agent did to its environment
      (deleted its work directory, filled the disk, left processes that hold every slot) can stop a
      new one from starting; it is the agent's failure, scored on what the trajectory holds.
    - The sandbox, the kernel or the model service failing in any other way, and a sandbox or kernel
      that fails before the agent's first action: ``infra_error``, ``infra_error``. The runner retries
      the task; the model service has been retried by its SDK already.
    - Anything else raised while the agent ran (its own code, a request the model service refused):
      ``agent_error``, ``agent_error``.

    A configuration error (``ConfigError``) is no task's failure: callers stop the run before asking.
    Answers that cannot be kept (not JSON, nested too deeply, too long) never get here: the submit
    step is refused with a message to the agent and the episode goes on (see ``actions.parse_answer``).
    """
    if isinstance(error, KernelRestartError) and agent_acted:
        return Failure("completed", "environment_broken")
    if isinstance(error, INFRA_ERRORS):
        return Failure("infra_error", "infra_error")
    return Failure("agent_error", "agent_error")
