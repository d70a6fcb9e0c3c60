"""The one exception tree of super-bench.

Every error that crosses a public boundary is one of these, so callers can catch
``SuperBenchError`` and users get a message that says what went wrong and how to fix it.
"""

from __future__ import annotations


class SuperBenchError(Exception):
    """Base class of every error super-bench raises on purpose."""


class ConfigError(SuperBenchError):
    """A setting, option or plug-in name is invalid."""


class TaskError(SuperBenchError):
    """Tasks could not be loaded or are invalid."""


class TaskValidationError(TaskError):
    """One or more task rows failed validation; ``problems`` lists each one."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        shown = "\n".join(f"  - {p}" for p in problems[:20])
        more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
        super().__init__(
            f"{len(problems)} invalid task row(s):\n{shown}{more}\n"
            "Fix the rows, or pass --skip-invalid to load the valid ones only."
        )


class TaskSourceError(TaskError):
    """A task source (file, directory, hub dataset) cannot be read."""


class SandboxError(SuperBenchError):
    """A sandbox could not be created, started or used."""


class PackageRequestRefused(SandboxError):
    """The package cache refuses what a task asked of it (``status``: the HTTP status it answers with)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class KernelError(SuperBenchError):
    """The notebook kernel could not be started or talked to."""


class KernelRestartError(KernelError):
    """A kernel that died or was stopped could not be replaced by a new one."""


class EnvironmentClosedError(SuperBenchError):
    """An action was sent to an environment that is closed or finished."""


class ModelError(SuperBenchError):
    """A model provider failed, or refused a request (a prompt longer than its context, say)."""


class ModelUnavailableError(ModelError):
    """The model service could not be used: unreachable, timing out, rate-limited, failing with server
    errors after its retries, or answering with malformed replies. A failure of the infrastructure,
    not of the agent: the runner retries the task."""


class AgentError(SuperBenchError):
    """An agent could not be created or failed in a way that is not the model's fault."""


class ReportError(SuperBenchError):
    """Runs cannot be compared or ranked as asked (no task in common, scores of different modes)."""


class RunDirError(SuperBenchError):
    """A run directory is missing, unreadable or belongs to another run."""


class RunDirWriteError(RunDirError):
    """The run directory could not be written (its disk is full, or failed): the run stops as a Ctrl-C stops it,
    its finished rows kept."""


class IdentityLostError(RunDirError):
    """A run directory holds results but no readable ``run.json``: which settings they were run with is not known
    for sure, and resuming is refused until the user adopts them (``--adopt``) or replaces the run (``--redo``)."""


class TrajectoryImportError(SuperBenchError):
    """A published trajectory (a notebook) cannot be read or understood."""


class UnscorableError(SuperBenchError):
    """A submission or a gold answer that scoring cannot compare (nested deeper than Python can follow):
    its row is left unscored, with this message as the reason, and the run goes on."""
