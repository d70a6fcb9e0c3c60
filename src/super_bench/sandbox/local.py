"""The ``local`` sandbox: the kernel as a child process in a per-task directory.

Not isolated: agent code runs as the user, with the user's file permissions and network.
What it does give: a fresh working directory, HOME and TMPDIR per task, its own Python
environment, an environment scrubbed of credentials and of the user's configuration, the
memory and file-size limits, and a stop that kills every process the task started (found by
a marker variable they all inherit).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import Any, ClassVar

from super_bench.errors import SandboxError
from super_bench.sandbox.base import (
    CommandResult,
    KernelProcess,
    PopenKernelProcess,
    Sandbox,
    SandboxConfig,
    rlimit_prefix,
    scrubbed_environ,
)
from super_bench.sandbox.mirrors import check_task_pip, mirror_environ
from super_bench.sandbox.pyenv import BasePython, built_base_python, create_task_env

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


def make_task_dirs(config: SandboxConfig, label: str) -> tuple[Path, Path]:
    """A new task directory (with ``content/``, ``home/`` and ``tmp/``) and a runtime directory."""
    parent = config.root or Path(tempfile.gettempdir())
    parent.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix=f"super-bench-{label}-", dir=parent))
    for sub in ("content", "home", "tmp"):
        (root / sub).mkdir()
    return root, short_runtime_dir()


def remove_tree(path: Path) -> None:
    """Remove a directory tree, even one whose directories agent code made unwritable or unreadable."""
    if not path.is_dir() or path.is_symlink():
        return
    path.chmod(0o700)
    # Top-down: each directory is fixed before os.walk lists it.
    for dirpath, dirnames, _ in os.walk(path):
        for name in dirnames:
            child = os.path.join(dirpath, name)
            if not os.path.islink(child):
                os.chmod(child, 0o700)
    shutil.rmtree(path, ignore_errors=True)


class LocalSandbox(Sandbox):
    name = "local"
    # Whether the kernel runs under a wrapper that reports its death by signal N as status 128 + N.
    wrapped_kernel: ClassVar[bool] = False

    @classmethod
    def check(cls, config: SandboxConfig) -> None:
        if not config.network:
            raise SandboxError("the local sandbox cannot cut the network; use --sandbox bwrap or --sandbox docker")

    def __init__(self, config: SandboxConfig, label: str = "task") -> None:
        super().__init__(config, label)
        self.id = uuid.uuid4().hex[:12]
        self._root: Path | None = None
        self._runtime: Path | None = None
        self._env: dict[str, str] = {}
        self._base: BasePython | None = None
        self._kernels: list[KernelProcess] = []

    # -- layout ------------------------------------------------------------------------------
    @property
    def root(self) -> Path:
        if self._root is None:
            raise SandboxError("the sandbox is not started")
        return self._root

    def inside(self, host: Path) -> str:
        """Where agent code sees a path of the task directory (locally: where it is)."""
        return str(host)

    @property
    def workdir(self) -> str:
        return self.inside(self.root / "content")

    @property
    def runtime_dir(self) -> Path:
        if self._runtime is None:
            raise SandboxError("the sandbox is not started")
        return self._runtime

    @property
    def python_dir(self) -> Path:
        """The task's own Python environment (its virtual environment)."""
        return self.root / "python"

    def base_python(self) -> BasePython:
        """``--task-python``, else the base ``sandbox build`` made, else the harness's own Python."""
        python = self.config.task_python or built_base_python()
        return BasePython.current() if python is None else BasePython.from_interpreter(python)

    def start(self) -> None:
        if self._root is not None:
            return
        type(self).check(self.config)
        self._root, self._runtime = make_task_dirs(self.config, self.label)
        self._base = self.base_python()
        create_task_env(self.python_dir, self._base, visible_at=self.inside(self.python_dir))
        if self.config.packages_as_of is not None:
            try:
                _check_pip(self.config, self.python_dir / "bin" / "python")
            except SandboxError:
                self.stop()
                raise
        self._env = self.agent_environ()
        self._start_wall_clock()

    def agent_environ(self) -> dict[str, str]:
        """The environment agent code sees: scrubbed host variables plus the task's own settings."""
        env = scrubbed_environ()
        python = self.inside(self.python_dir)
        env.update(
            HOME=self.inside(self.root / "home"),
            TMPDIR=self.inside(self.root / "tmp"),
            PATH=f"{python}/bin{os.pathsep}{env.get('PATH', os.defpath)}",
            VIRTUAL_ENV=python,
            PYTHONNOUSERSITE="1",
            PYTHONUNBUFFERED="1",
            MPLBACKEND="Agg",
            GIT_TERMINAL_PROMPT="0",
            PIP_DISABLE_PIP_VERSION_CHECK="1",
            DEBIAN_FRONTEND="noninteractive",
        )
        env[MARKER] = self.id
        env.update(mirror_environ(self.config))
        env.update(self.config.env)
        return env

    # -- kernel --------------------------------------------------------------------------------
    def kernel_endpoint(self) -> tuple[str, str]:
        return "ipc", str(self.runtime_dir / "k")

    def _wrap(self, argv: list[str]) -> list[str]:
        """The host command line that runs ``argv`` in the sandbox, in the work directory.

        Locally only the per-process limits apply; the wall-time limit is enforced between steps
        (the environment ends the episode and ``stop`` kills what is left).
        """
        return [*rlimit_prefix(self.config, processes=False), *argv]

    def _spawn_options(self) -> dict[str, Any]:
        """Extra ``subprocess`` options for commands started in the sandbox."""
        return {"cwd": self.root / "content"}

    def launch_kernel(self, connection_file: Path, extra_args: list[str]) -> KernelProcess:
        log_path = self.runtime_dir / "kernel.log"
        python = f"{self.inside(self.python_dir)}/bin/python"
        argv = self._wrap([python, "-m", "ipykernel_launcher", "-f", str(connection_file), *extra_args])
        with open(log_path, "ab") as log:
            try:
                popen = subprocess.Popen(
                    argv,
                    env=self._env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    **self._spawn_options(),
                )
            except OSError as e:
                raise SandboxError(f"cannot start the kernel ({argv[0]}): {e}") from e
        kernel = PopenKernelProcess(popen, log_path, wrapped=self.wrapped_kernel)
        self._kernels.append(kernel)
        return kernel

    # -- commands and files --------------------------------------------------------------------
    def run(self, command: list[str], timeout: float = 600) -> CommandResult:
        try:
            proc = subprocess.run(
                self._wrap(command),
                env=self._env,
                capture_output=True,
                text=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                **self._spawn_options(),
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
            remove_tree(self._runtime)
        if not self.config.keep:
            remove_tree(self._root)
        self._root = self._runtime = None


def _text(data: str | bytes | None) -> str:
    if data is None:
        return ""
    return data if isinstance(data, str) else data.decode("utf-8", "replace")


def _check_pip(config: SandboxConfig, python: Path) -> None:
    """Refuse a task environment whose pip would ignore ``packages_as_of``."""
    try:
        proc = subprocess.run(
            [python, "-m", "pip", "--version"], capture_output=True, text=True, timeout=120, env=scrubbed_environ()
        )
        found = proc.stdout
    except (OSError, subprocess.SubprocessError):
        found = ""
    check_task_pip(config, found, str(python))
