"""The sandbox interface: where a task's kernel and commands run.

A sandbox owns one task's directories and processes. The notebook kernel is launched
inside it, files are read and written through it, and ``stop`` must leave nothing behind.
Backends: ``local`` (a child process, not isolated), ``bwrap`` and ``docker``.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from abc import ABC, abstractmethod
from pathlib import Path
from types import TracebackType
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

# Environment variables that look like credentials never reach agent code.
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE", re.IGNORECASE)
# ... and neither do values that carry credentials, such as an index URL with user:password@.
_SECRET_VALUE = re.compile(r"://[^/\s:@]+:[^/\s@]+@")
# Variables that would make the kernel use the harness's Python setup instead of the task's own.
_HARNESS_ONLY = {
    "VIRTUAL_ENV",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "CONDA_PREFIX",
    "IPYTHONDIR",
    "JUPYTER_CONFIG_DIR",
    "JUPYTER_DATA_DIR",
    "JUPYTER_RUNTIME_DIR",
    "JPY_PARENT_PID",
    "MPLCONFIGDIR",
}


class SandboxConfig(BaseModel):
    """How task sandboxes are made. One config serves every task of a run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: str = Field("auto", description="auto, local, bwrap or docker")
    root: Path | None = Field(None, description="Parent directory of task directories (default: system temp)")
    keep: bool = Field(False, description="Keep each task directory after the task ends")
    task_python: Path | None = Field(
        None, description="Interpreter the task environment is layered over (default: the harness's own)"
    )
    network: bool = True
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment variables for agent code")
    git_url_rewrites: dict[str, str] = Field(
        default_factory=dict,
        description="URL prefix -> local directory, so offline tasks can `git clone` URLs",
    )


class CommandResult(BaseModel):
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

    def log_tail(self, chars: int = 2000) -> str:
        """The end of what the kernel process wrote to its own stdout/stderr."""
        return ""


class PopenKernelProcess(KernelProcess):
    """A kernel running as a host child process in its own session (process group)."""

    def __init__(self, popen: subprocess.Popen[bytes], log_path: Path) -> None:
        self.popen = popen
        self.log_path = log_path

    def poll(self) -> int | None:
        return self.popen.poll()

    def kill(self) -> None:
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.popen.kill()

    def log_tail(self, chars: int = 2000) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - chars))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""


class Sandbox(ABC):
    """One task's isolated place to run a kernel and commands."""

    name: ClassVar[str]

    def __init__(self, config: SandboxConfig, label: str = "task") -> None:
        self.config = config
        self.label = re.sub(r"[^A-Za-z0-9_.-]+", "-", label)[:40] or "task"

    @property
    @abstractmethod
    def workdir(self) -> str:
        """The kernel's starting directory, as agent code sees it."""

    @property
    @abstractmethod
    def runtime_dir(self) -> Path:
        """Host directory for kernel connection files; visible at the same path inside the sandbox."""

    @abstractmethod
    def start(self) -> None:
        """Create the task's directories and Python environment."""

    @abstractmethod
    def stop(self) -> None:
        """Kill everything the task started and remove its directories (unless ``keep``); idempotent."""

    @abstractmethod
    def kernel_endpoint(self) -> tuple[str, str]:
        """(transport, ip) for the kernel's connection file: ``("ipc", path_prefix)`` or ``("tcp", host)``."""

    @abstractmethod
    def launch_kernel(self, connection_file: Path, extra_args: list[str]) -> KernelProcess:
        """Start ``ipykernel`` with this connection file inside the sandbox."""

    @abstractmethod
    def run(self, command: list[str], timeout: float = 600) -> CommandResult:
        """Run a command inside the sandbox, in the work directory."""

    @abstractmethod
    def read_file(self, path: str) -> bytes:
        """Read a file; relative paths are relative to the work directory."""

    @abstractmethod
    def write_file(self, path: str, data: bytes) -> None:
        """Write a file, creating parent directories; relative paths as in ``read_file``."""

    def __enter__(self) -> Sandbox:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def scrubbed_environ(environ: dict[str, str] | os._Environ[str] | None = None) -> dict[str, str]:
    """The host environment minus credentials and the harness's own Python settings."""
    source = os.environ if environ is None else environ
    return {
        k: v
        for k, v in source.items()
        if not _SECRET_NAME.search(k)
        and not _SECRET_VALUE.search(v)
        and k not in _HARNESS_ONLY
        and not k.startswith("CONDA_")
    }


def git_rewrite_env(rewrites: dict[str, str]) -> dict[str, str]:
    """Environment variables that make ``git`` fetch URL prefixes from local paths (``insteadOf``)."""
    env: dict[str, str] = {}
    for i, (prefix, local) in enumerate(sorted(rewrites.items())):
        env[f"GIT_CONFIG_KEY_{i}"] = f"url.{local}.insteadOf"
        env[f"GIT_CONFIG_VALUE_{i}"] = prefix
    if env:
        env["GIT_CONFIG_COUNT"] = str(len(rewrites))
    return env
