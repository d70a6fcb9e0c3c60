"""The ``local`` sandbox: the kernel as a child process in a per-task directory.

Not isolated: agent code runs as the user, with the user's file permissions and network.
What it does give: a fresh working directory, HOME and TMPDIR per task, its own Python
environment, an environment scrubbed of credentials, and a stop that kills every process
the task started (found by a marker variable they all inherit).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import uuid
from pathlib import Path

from super_bench import demo
from super_bench.errors import SandboxError
from super_bench.sandbox.base import (
    CommandResult,
    KernelProcess,
    PopenKernelProcess,
    Sandbox,
    SandboxConfig,
    git_rewrite_env,
    scrubbed_environ,
)
from super_bench.sandbox.pyenv import BasePython, create_task_env

MARKER = "SUPER_BENCH_SANDBOX"


def short_runtime_dir() -> Path:
    """A private directory with a short path: unix socket paths are limited to about 100 bytes."""
    base = tempfile.gettempdir()
    if len(base) > 40:
        base = "/tmp"
    return Path(tempfile.mkdtemp(prefix="sbk-", dir=base))


def processes_with_marker(marker_value: str) -> list[int]:
    """PIDs of this user's processes whose environment carries ``MARKER=marker_value``."""
    needle = f"{MARKER}={marker_value}".encode()
    found: list[int] = []
    if not os.path.isdir("/proc"):
        return found
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


class LocalSandbox(Sandbox):
    name = "local"

    def __init__(self, config: SandboxConfig, label: str = "task") -> None:
        super().__init__(config, label)
        self.id = uuid.uuid4().hex[:12]
        self._root: Path | None = None
        self._runtime: Path | None = None
        self._env: dict[str, str] = {}
        self._kernels: list[KernelProcess] = []

    # -- layout ------------------------------------------------------------------------------
    @property
    def root(self) -> Path:
        if self._root is None:
            raise SandboxError("the sandbox is not started")
        return self._root

    @property
    def workdir(self) -> str:
        return str(self.root / "content")

    @property
    def runtime_dir(self) -> Path:
        if self._runtime is None:
            raise SandboxError("the sandbox is not started")
        return self._runtime

    def base_python(self) -> BasePython:
        if self.config.task_python is not None:
            return BasePython.from_interpreter(self.config.task_python)
        return BasePython.current()

    def start(self) -> None:
        if self._root is not None:
            return
        parent = self.config.root or Path(tempfile.gettempdir())
        parent.mkdir(parents=True, exist_ok=True)
        self._root = Path(tempfile.mkdtemp(prefix=f"super-bench-{self.label}-", dir=parent))
        self._runtime = short_runtime_dir()
        for sub in ("content", "home", "tmp"):
            (self._root / sub).mkdir()
        bin_dir = create_task_env(self._root / "python", self.base_python())
        self._env = self.agent_environ(bin_dir, home=self._root / "home", tmp=self._root / "tmp")

    def agent_environ(self, bin_dir: Path, home: Path, tmp: Path) -> dict[str, str]:
        """The environment agent code sees: scrubbed host variables plus the task's own settings."""
        env = scrubbed_environ()
        env.update(
            HOME=str(home),
            TMPDIR=str(tmp),
            PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', os.defpath)}",
            VIRTUAL_ENV=str(bin_dir.parent),
            PYTHONNOUSERSITE="1",
            PYTHONUNBUFFERED="1",
            MPLBACKEND="Agg",
            GIT_TERMINAL_PROMPT="0",
            PIP_DISABLE_PIP_VERSION_CHECK="1",
            DEBIAN_FRONTEND="noninteractive",
        )
        env[MARKER] = self.id
        env.update(git_rewrite_env({**demo.git_url_rewrites(), **self.config.git_url_rewrites}))
        env.update(self.config.env)
        return env

    # -- kernel --------------------------------------------------------------------------------
    def kernel_endpoint(self) -> tuple[str, str]:
        return "ipc", str(self.runtime_dir / "k")

    def launch_kernel(self, connection_file: Path, extra_args: list[str]) -> KernelProcess:
        log_path = self.runtime_dir / "kernel.log"
        python = Path(self._env["VIRTUAL_ENV"]) / "bin" / "python"
        argv = [str(python), "-m", "ipykernel_launcher", "-f", str(connection_file), *extra_args]
        with open(log_path, "ab") as log:
            try:
                popen = subprocess.Popen(
                    argv,
                    cwd=self.workdir,
                    env=self._env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            except OSError as e:
                raise SandboxError(f"cannot start the kernel ({argv[0]}): {e}") from e
        kernel = PopenKernelProcess(popen, log_path)
        self._kernels.append(kernel)
        return kernel

    # -- commands and files --------------------------------------------------------------------
    def run(self, command: list[str], timeout: float = 600) -> CommandResult:
        try:
            proc = subprocess.run(
                command,
                cwd=self.workdir,
                env=self._env,
                capture_output=True,
                text=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        except subprocess.TimeoutExpired as e:
            return CommandResult(returncode=-1, stdout=_text(e.stdout), stderr=_text(e.stderr), timed_out=True)
        except OSError as e:
            return CommandResult(returncode=127, stdout="", stderr=str(e))
        return CommandResult(returncode=proc.returncode, stdout=proc.stdout, stderr=proc.stderr)

    def _host_path(self, path: str) -> Path:
        return Path(self.workdir, path)  # an absolute ``path`` replaces the work directory

    def read_file(self, path: str) -> bytes:
        return self._host_path(path).read_bytes()

    def write_file(self, path: str, data: bytes) -> None:
        target = self._host_path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    def stop(self) -> None:
        if self._root is None:
            return
        for kernel in self._kernels:
            kernel.kill()
        self._kernels.clear()
        # Daemons the agent started with setsid/nohup left the kernel's process group but still
        # carry the marker; a few passes catch processes forked while we were killing.
        for _ in range(3):
            pids = processes_with_marker(self.id)
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        if self._runtime is not None:
            shutil.rmtree(self._runtime, ignore_errors=True)
        if not self.config.keep:
            shutil.rmtree(self._root, ignore_errors=True)
        self._root = self._runtime = None


def _text(data: str | bytes | None) -> str:
    if data is None:
        return ""
    return data if isinstance(data, str) else data.decode("utf-8", "replace")
