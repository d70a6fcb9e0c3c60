"""The sandbox contract: where a task's kernel and commands run.

A sandbox owns one task's directories and processes. The notebook kernel is launched inside it, files are read
and written through it, and ``stop`` must leave nothing behind. This module is the contract alone (``Sandbox``
and the records its members take and give); its settings are ``config.SandboxConfig``, and the backends
(``local``, ``bwrap``, ``docker``) live in ``backends``.

Defends, for every backend: the wall-time limit, kept by a timer of the harness rather than by any process agent
code could stop (``limits.clock``).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, NamedTuple

from pydantic import ConfigDict, Field

from super_bench._pydantic import Model
from super_bench.errors import SandboxError
from super_bench.sandbox.config import BuildReport, BuildRequest, SandboxConfig
from super_bench.sandbox.limits.clock import LimitClock

# The largest file an edit action reads into the harness. The edit holds the file as bytes, text and a list of
# lines (several times its size in objects), so a file larger than a source file ever is would cost the harness,
# not the task, its memory; larger files are edited with code run in the task.
MAX_EDIT_BYTES = 4 << 20


class FileTooLargeError(OSError):
    """A file the harness would read for an edit holds more than its limit; nothing of it was read."""

    def __init__(self, path: str, size: int, limit: int) -> None:
        super().__init__(f"{path} holds more than {limit:,} bytes, the most an edit reads")
        self.size, self.limit = size, limit


class SandboxDescription(Model):
    """What a run records and says of its sandbox (``run.json``, ``super-bench sandbox check``, the run's
    announcement), told by the backend so that no caller needs to know backends by name."""

    model_config = ConfigDict(frozen=True)

    backend: str
    environment: str = Field(description="One line on the Python environment agent code gets")
    task_environment: dict[str, Any] = Field(
        default_factory=dict, description="The task environment as run.json records it (kind, summary, ...)"
    )
    warning: str | None = Field(None, description="What a run should warn of before it starts, if anything")
    memory_enforcement: str | None = Field(None, description="How the memory limit is enforced (None without one)")
    disk_enforcement: str | None = Field(None, description="How the disk limit is enforced (None without one)")
    package_cache: dict[str, Any] | None = Field(None, description="The package cache tasks install through, if any")
    supply: dict[str, Any] | None = Field(
        None,
        description="Where tasks fetch repositories and packages from, when not from the network as of today: git "
        "mirrors (path, kind, HEAD), offline bundle, package index and date, Hugging Face cache (run.json's record; "
        "``describe_backend`` adds it for every backend)",
    )


class CommandResult(Model):
    """A command run inside a sandbox."""

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool = False


class KernelProcess(ABC):
    """Handle on a launched kernel: enough to see it die and to kill it."""

    @abstractmethod
    def poll(self) -> int | None:
        """The exit status once the kernel has exited, else None."""

    @abstractmethod
    def kill(self) -> None:
        """Kill the kernel and every process it started; never raises."""


class KernelLaunch(NamedTuple):
    """A started kernel: its process, and the connection info for the harness's client."""

    process: KernelProcess
    connection: dict[str, Any]


class Usage(NamedTuple):
    """What a task takes of the machine now, where the sandbox can tell (None where not)."""

    disk: int | None  # bytes the task directory holds
    memory: int | None  # bytes the task's processes use


class Sandbox(LimitClock, ABC):
    """One task's isolated place to run a kernel and commands."""

    name: ClassVar[str]
    config: SandboxConfig  # the clock reads its limits; a backend, all of it

    def __init__(self, config: SandboxConfig, label: str = "task") -> None:
        super().__init__()
        self.config = config
        self.label = re.sub(r"[^A-Za-z0-9_.-]+", "-", label)[:40] or "task"

    # Whether a sandbox may be started ahead of its task with its wall clock held (``hold_clock``): false where
    # something of the sandbox counts the task's time from its start on its own.
    starts_ahead: ClassVar[bool] = True

    # Whether agent code is confined (its own view of the files, its own namespaces): where it is not, code from
    # elsewhere (a run directory's replays) runs only when the user names this backend.
    isolates: ClassVar[bool] = False

    # Whether its tasks run in containers of an engine, labelled with their run's scratch (``CONTAINER_LABEL``):
    # only then does a fresh run ask the engines for a killed attempt's containers.
    runs_containers: ClassVar[bool] = False

    @classmethod
    def check(cls, config: SandboxConfig) -> None:
        """Raise ``SandboxError``, saying what to install or start, if this backend cannot run here."""

    @classmethod
    def agent_is_another_user(cls) -> bool:
        """Whether agent code runs as a user of its own, who reads only what all users may read."""
        return False

    @classmethod
    def describe(cls, config: SandboxConfig, *, packages: bool = False) -> SandboxDescription:
        """What runs of ``config`` record and say of this backend; ``packages``: list the environment's
        packages too (for run.json). ``describe_backend`` adds the ``supply``, the same for every backend.
        Never raises: what cannot be found out is said in the record."""
        summary = f"whatever the {cls.name} sandbox provides"
        return SandboxDescription(
            backend=cls.name, environment=summary, task_environment={"kind": cls.name, "summary": summary}
        )

    @classmethod
    def check_lines(cls, config: SandboxConfig) -> list[str]:
        """Lines ``super-bench sandbox check`` prints of this backend below its table (privileges, engine,
        how limits are enforced); lines several backends give are printed once. Never raises."""
        return []

    # The fields of ``BuildRequest`` this backend's ``build`` takes (``requirements`` is always given).
    build_options: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def build(cls, request: BuildRequest, echo: Callable[[str], None]) -> BuildReport:
        """Build, once, what this backend's tasks run in (``super-bench sandbox build --sandbox NAME``);
        ``echo`` shows progress. Raises ``SandboxError`` where the build cannot be done."""
        raise SandboxError(f"the {cls.name} sandbox has nothing to build: it runs tasks in what it finds")

    @property
    @abstractmethod
    def workdir(self) -> str:
        """The kernel's starting directory, as agent code sees it."""

    @property
    @abstractmethod
    def runtime_dir(self) -> Path:
        """Host directory of the kernels' files (see ``kernel.runtime_dir``); removed by ``stop``."""

    @abstractmethod
    def start(self) -> None:
        """Create the task's directories and Python environment."""

    @abstractmethod
    def stop(self) -> None:
        """Kill everything the task started and remove its directories (unless ``keep``); idempotent."""

    @abstractmethod
    def launch_kernel(self, extra_args: list[str], timeout: float) -> KernelLaunch:
        """Start a kernel inside the sandbox (``extra_args`` for ipykernel) and wait until it has opened its
        sockets; raises ``KernelError`` if it exits first or ``timeout`` seconds pass."""

    @abstractmethod
    def kernel_log_tail(self, chars: int = 2000) -> str:
        """The end of what the sandbox's kernels wrote to their output."""

    def out_of_memory(self) -> bool:
        """Whether the task's memory limit made the kernel of the system kill a process since the last call."""
        return False

    def usage(self) -> Usage:
        """Bytes of disk and of memory the task takes now, where the sandbox can tell (None where not)."""
        return Usage(None, None)

    def disk_full(self) -> bool:
        """Whether the task's own file system (its disk limit) has (nearly) no space left."""
        return False

    @abstractmethod
    def run(self, command: list[str], timeout: float = 600) -> CommandResult:
        """Run a command inside the sandbox, in the work directory."""

    @abstractmethod
    def read_file(self, path: str) -> bytes:
        """Read a file; relative paths are relative to the work directory."""

    @abstractmethod
    def write_file(self, path: str, data: bytes) -> None:
        """Write a file, creating parent directories; relative paths as in ``read_file``."""

    def edit_file(self, path: str, change: Callable[[bytes], bytes], limit: int = MAX_EDIT_BYTES) -> None:
        """Read a file, and write back what ``change`` makes of it; nothing is written if ``change`` raises.
        A file of more than ``limit`` bytes is refused (``FileTooLargeError``) without the harness holding more
        than ``limit`` bytes of it: backends override this to stop reading at the limit (this default, for
        plug-ins, reads the whole file first). Backends where each file operation starts a process do both in one."""
        data = self.read_file(path)
        if len(data) > limit:
            raise FileTooLargeError(path, len(data), limit)
        self.write_file(path, change(data))

    def __enter__(self) -> Sandbox:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
