"""The sandbox interface: where a task's kernel and commands run.

A sandbox owns one task's directories and processes. The notebook kernel is launched
inside it, files are read and written through it, and ``stop`` must leave nothing behind.
Backends: ``local`` (a child process, not isolated), ``bwrap`` and ``docker``.

Defends, for every backend: the harness's credentials and configuration (``scrubbed_environ``: agent code
never gets them), and the wall-time limit, kept by a timer of the harness rather than by any process agent
code could stop; the limits' ``prlimit`` is the system's, by its absolute path (``lifetime.programs``).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from datetime import date, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, Literal, NamedTuple

from pydantic import ConfigDict, Field, ValidationInfo, field_validator

from super_bench._names import DiskEnforcement, MemoryEnforcement, PackageCacheMode
from super_bench._pydantic import Model
from super_bench._sizes import human_size, parse_size
from super_bench.errors import KernelError, SandboxError
from super_bench.sandbox.launch.runtime_dir import KernelFiles, KernelRuntime
from super_bench.sandbox.lifetime import supervisor
from super_bench.sandbox.lifetime.programs import program
from super_bench.sandbox.mirrors.settings import GitMirrorMap, HfCacheDir, OfflineBundleDir, PackagesAsOf, PipIndexUrl

# Environment variables that look like credentials never reach agent code.
# The largest file an edit action reads into the harness. The edit holds the file as bytes, text and a list of
# lines (several times its size in objects), so a file larger than a source file ever is would cost the harness,
# not the task, its memory; larger files are edited with code run in the task.
MAX_EDIT_BYTES = 4 << 20


class FileTooLargeError(OSError):
    """A file the harness would read for an edit holds more than its limit; nothing of it was read."""

    def __init__(self, path: str, size: int, limit: int) -> None:
        super().__init__(f"{path} holds more than {limit:,} bytes, the most an edit reads")
        self.size, self.limit = size, limit


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
# Variables that point agent code at the user's own configuration, caches, tokens and daemons.
_USER_CONFIG = {
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_RUNTIME_DIR",
    "DBUS_SESSION_BUS_ADDRESS",
    "HF_HOME",
    "HF_DATASETS_CACHE",
    "HUGGINGFACE_HUB_CACHE",
    "TRANSFORMERS_CACHE",
    "TORCH_HOME",
    "KAGGLE_CONFIG_DIR",
    "KUBECONFIG",
    "GNUPGHOME",
    "NETRC",
    "PIP_CONFIG_FILE",
    "NPM_CONFIG_USERCONFIG",
    "CONTAINER_HOST",
    # The operator's login shell: IPython runs ``!command`` in $SHELL, else in ``sh``, and the paper's
    # environment set none, so its ``!source`` failed (``/usr/bin/sh: 1: source: not found``).
    "SHELL",
}
_USER_CONFIG_PREFIXES = ("CONDA_", "GIT_CONFIG", "DOCKER_", "AWS_", "AZURE_", "GOOGLE_", "CLOUDSDK_", "PIP_", "UV_")
# The least disk a task directory may have: room for a kernel's files and a small repository.
MIN_DISK_LIMIT = 16 << 20


class SandboxConfig(Model):
    """How task sandboxes are made. One config serves every task of a run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: str = Field("auto", description="auto, local, bwrap or docker")
    root: Path | None = Field(None, description="Parent directory of task directories (default: system temp)")
    keep: bool = Field(False, description="Keep each task directory after the task ends")
    task_python: Path | None = Field(
        None, description="Interpreter the task environment is layered over (default: the harness's own)"
    )
    network: bool = Field(True, description="Agent code may use the network (bwrap and docker can cut it)")
    memory_limit: int | None = Field(
        None, description="Bytes of memory the task may use, shared memory included (see memory_enforcement)"
    )
    memory_enforcement: MemoryEnforcement = Field(
        "auto",
        description="How the memory limit is enforced (local, bwrap): a cgroup of the task's own (auto, where one "
        "can be made) or an address-space limit per process",
    )
    max_processes: int | None = Field(
        1024, gt=0, description="Processes and threads the task may run at once (bwrap, docker)"
    )
    max_file_size: int | None = Field(None, description="Largest file the task may write, in bytes")
    disk_limit: int | None = Field(
        None, description="Bytes of disk the task directory may take (local, bwrap; see disk_enforcement)"
    )
    disk_enforcement: DiskEnforcement = Field(
        "auto",
        description="How the disk limit is enforced: a file system of the task's own (auto, where one can be made: "
        "writes past it fail) or a watch on the task directory (past it the task is stopped)",
    )
    wall_time_limit: float | None = Field(
        None, gt=0, description="Seconds after which everything the task runs is killed and nothing more starts"
    )
    image: str | None = Field(None, description="Image of the docker backend (default: the one sandbox build makes)")
    engine: str | None = Field(None, description="Container engine of the docker backend: docker or podman")
    ca_bundle: Path | None = Field(
        None,
        description="A CA bundle shown read-only to tasks of the docker backend, for pip, requests, OpenSSL and git "
        "(the host's trust store, behind a TLS-intercepting proxy); it replaces the image's",
    )
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment variables for agent code")
    pass_env: tuple[str, ...] = Field(
        (), description="Host environment variables agent code gets as they are (credentials too), by name"
    )
    host_pip_config: bool = Field(
        False,
        description="pip in tasks reads the host's pip configuration (its PIP_* variables and pip.conf files); "
        "by default it knows only what the harness sets",
    )
    # Mirrors and time travel (sandbox/mirrors.py; docs/environment.md).
    git_mirrors: GitMirrorMap = Field(
        default_factory=dict,
        description="Repository URL -> a bare repository, clone or git bundle serving it; or URL prefix -> "
        "a directory of such mirrors",
    )
    pip_index: PipIndexUrl = Field(None, description="The package index (or proxy) pip uses, and no other")
    packages_as_of: PackagesAsOf = Field(
        None, description="pip installs what was uploaded by the end of this day (UTC), or before this moment"
    )
    hf_cache: HfCacheDir = Field(None, description="A Hugging Face cache shown read-only to tasks, used offline")
    offline_bundle: OfflineBundleDir = Field(
        None, description="A directory `super-bench mirror` made: repositories, wheels"
    )
    # The package cache (sandbox/packages.py; docs/sandboxes.md#the-package-cache).
    package_cache: PackageCacheMode = Field(
        "link",
        description="pip inside tasks installs through the harness's caching proxy of the package index (link: "
        "the files of wheels are read-only links to the cache where that is safe; copy: always copies; off: no cache)",
    )
    package_cache_dir: Path | None = Field(
        None, description="Where the package cache is kept (default: packages in super-bench's cache directory)"
    )

    @field_validator("memory_limit", "max_file_size", "disk_limit", mode="before")
    @classmethod
    def _size(cls, value: Any) -> Any:
        return parse_size(value) if isinstance(value, str) else value

    @field_validator("memory_limit", "max_file_size", "disk_limit")
    @classmethod
    def _at_least(cls, value: int | None, info: ValidationInfo) -> int | None:
        # Said in sizes people write, not as pydantic's bound in bytes.
        least = MIN_DISK_LIMIT if info.field_name == "disk_limit" else 1
        if value is not None and value < least:
            raise ValueError(
                f"{human_size(value) if value > 0 else value} is below the least allowed, {human_size(least)} "
                "(write it like 8g or 512m)"
            )
        return value


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


class BuildRequest(Model):
    """What ``super-bench sandbox build`` asks a backend to build: the package list, and the options of the
    command line that were given (a backend's ``build_options`` names those it takes)."""

    model_config = ConfigDict(frozen=True)

    requirements: Path = Field(description="The package list to install")
    python: str | None = Field(None, description="Interpreter to build from: a path or a command on PATH")
    pip_args: tuple[str, ...] = Field((), description="Extra arguments for pip")
    engine: str | None = Field(None, description="Container engine")
    tag: str | None = Field(None, description="Tag of the image built")
    base_image: str | None = Field(None, description="Image to build over")
    kernel_only: bool = Field(False, description="Build only the kernel's layer")
    ca_bundle: Path | None = Field(None, description="A CA bundle for the build's downloads")
    packages_as_of: date | datetime | None = Field(None, description="Install the packages as they were then")
    torch: Literal["pypi", "cpu"] | None = Field(
        None, description="Where torch comes from (default: cpu, the paper's 2.2.1+cpu where its index answers)"
    )


class BuildReport(Model):
    """What a backend's build made: one line to say so, and what the user should know of it."""

    model_config = ConfigDict(frozen=True)

    built: str = Field(description="What was built, and what now uses it (one line)")
    notes: tuple[tuple[str, str], ...] = Field(
        (), description="(heading, text) pairs: what was left out, or differs from the paper's environment"
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


class PopenKernelProcess(KernelProcess):
    """A kernel running as a host child process in its own session (process group).

    ``wrapped``: the child is a wrapper (bwrap, timeout, ``docker exec``) that reports a kernel
    killed by signal N as exit status 128 + N; ``poll`` turns that back into -N, as for a bare child.
    ``on_kill`` runs once the process is gone (the harness drops its links to the kernel's sockets).
    """

    def __init__(
        self, popen: subprocess.Popen[bytes], *, wrapped: bool = False, on_kill: Callable[[], None] | None = None
    ) -> None:
        self.popen = popen
        self.wrapped = wrapped
        self._on_kill = on_kill
        supervisor.register("pgid", popen.pid)

    def poll(self) -> int | None:
        status = self.popen.poll()
        if self.wrapped and status is not None and 128 < status < 128 + signal.NSIG:
            return 128 - status
        return status

    def kill(self) -> None:
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.popen.kill()
        supervisor.unregister("pgid", self.popen.pid)
        if self._on_kill is not None:
            on_kill, self._on_kill = self._on_kill, None
            on_kill()


class KernelLaunch(NamedTuple):
    """A started kernel: its process, and the connection info for the harness's client."""

    process: KernelProcess
    connection: dict[str, Any]


def await_kernel(runtime: KernelRuntime, files: KernelFiles, process: KernelProcess, timeout: float) -> KernelLaunch:
    """The end of every ``launch_kernel``: wait until the kernel has opened its sockets; a kernel that exits
    first or takes longer than ``timeout`` is killed (``KernelError``)."""
    try:
        connection = runtime.connect_info(files, lambda: process.poll() is None, timeout)
    except KernelError:
        process.kill()
        raise
    return KernelLaunch(process, connection)


class Usage(NamedTuple):
    """What a task takes of the machine now, where the sandbox can tell (None where not)."""

    disk: int | None  # bytes the task directory holds
    memory: int | None  # bytes the task's processes use


class Sandbox(ABC):
    """One task's isolated place to run a kernel and commands."""

    name: ClassVar[str]

    def __init__(self, config: SandboxConfig, label: str = "task") -> None:
        self.config = config
        self.label = re.sub(r"[^A-Za-z0-9_.-]+", "-", label)[:40] or "task"
        self._deadline: float | None = None
        self._disk_passed: int | None = None  # bytes found in the task directory past its disk limit
        self._wall_clock: threading.Timer | None = None
        self._clock_held = False

    # Whether a sandbox may be started ahead of its task with its wall clock held (``hold_clock``): false where
    # something of the sandbox counts the task's time from its start on its own.
    starts_ahead: ClassVar[bool] = True

    # Whether agent code is confined (its own view of the files, its own namespaces): where it is not, code from
    # elsewhere (a run directory's replays) runs only when the user names this backend.
    isolates: ClassVar[bool] = False

    @classmethod  # noqa: B027 (not abstract: most backends can always run)
    def check(cls, config: SandboxConfig) -> None:
        """Raise ``SandboxError``, saying what to install or start, if this backend cannot run here."""

    @classmethod
    def agent_is_another_user(cls) -> bool:
        """Whether agent code runs as a user of its own, who reads only what all users may read."""
        return False

    @classmethod
    def describe(cls, config: SandboxConfig, *, packages: bool = False) -> SandboxDescription:
        """What runs of ``config`` record and say of this backend; ``packages``: list the environment's
        packages too (for run.json). Never raises: what cannot be found out is said in the record."""
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

    # -- the wall-time limit ----------------------------------------------------------------------
    def hold_clock(self) -> None:
        """Have ``start`` leave the wall clock stopped until ``start_clock``: a sandbox started ahead of its task
        (the runner's pre-start) spends none of the task's wall time while it waits for the task's agent."""
        self._clock_held = True

    def start_clock(self) -> None:
        """Start the wall clock that ``hold_clock`` held (nothing if none was held)."""
        if self._clock_held:
            self._clock_held = False
            self._start_wall_clock()

    def _start_wall_clock(self) -> None:
        """Start the task's clock; at its limit a timer of the harness calls ``_wall_time_passed``. Enforced
        from outside: no process of the task keeps the time, so none that agent code can stop or kill."""
        if self._clock_held:
            return
        limit = self.config.wall_time_limit
        self._deadline = None if limit is None else time.monotonic() + limit
        if limit is not None:
            self._wall_clock = threading.Timer(limit, self._wall_time_passed)
            self._wall_clock.daemon = True
            self._wall_clock.start()

    def _stop_wall_clock(self) -> None:
        timer, self._wall_clock = self._wall_clock, None
        if timer is not None:
            timer.cancel()

    def _wall_time_passed(self) -> None:  # noqa: B027 (not abstract: a backend may keep the time itself)
        """Called by the wall clock at the limit (from its own thread): stop everything the task runs."""

    @property
    def disk_limit_passed(self) -> bool:
        """The task directory was found holding more than the disk limit: everything the task ran was killed
        and nothing more starts (the ``watch`` enforcement)."""
        return self._disk_passed is not None

    @property
    def ended(self) -> bool:
        """A limit ended the task: the wall time, or the disk limit (``watch``)."""
        return self.expired or self.disk_limit_passed

    def _check_disk(self) -> None:
        """Raise ``SandboxError`` once the task has passed its disk limit."""
        if self._disk_passed is not None:
            limit = self.config.disk_limit or 0
            raise SandboxError(
                f"the task directory held {human_size(self._disk_passed)}, past its disk limit of {human_size(limit)}"
            )

    @property
    def expired(self) -> bool:
        """The wall-time limit has passed: everything the task ran was killed and nothing more starts."""
        return self._deadline is not None and time.monotonic() >= self._deadline

    @property
    def wall_time_left(self) -> float | None:
        """Seconds until the wall-time limit: None without one, 0 once it has passed."""
        if self._deadline is None:
            return None
        return max(0.0, self._deadline - time.monotonic())

    def _time_left(self) -> float | None:
        """Seconds until the wall-time limit (None without one); raises ``SandboxError`` once it has passed."""
        if self._deadline is None:
            return None
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise SandboxError(f"the task's wall-time limit of {self.config.wall_time_limit:g} s has passed")
        return left

    def __enter__(self) -> Sandbox:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def scrubbed_environ(environ: dict[str, str] | os._Environ[str] | None = None) -> dict[str, str]:
    """The host environment minus credentials, the user's own configuration and the harness's Python settings."""
    source = os.environ if environ is None else environ
    return {
        k: v
        for k, v in source.items()
        if not _SECRET_NAME.search(k)
        and not _SECRET_VALUE.search(v)
        and k not in _HARNESS_ONLY
        and k not in _USER_CONFIG
        and not k.startswith(_USER_CONFIG_PREFIXES)
    }


def passed_environ(config: SandboxConfig, environ: dict[str, str] | os._Environ[str] | None = None) -> dict[str, str]:
    """What agent code gets of the host's environment on purpose, on top of ``scrubbed_environ``: the variables
    ``pass_env`` names; and either the host's pip configuration (``host_pip_config``: its ``PIP_*`` variables,
    credentials left out) or ``PIP_CONFIG_FILE`` set to the null device, which keeps pip from reading any
    ``pip.conf`` (the system's, the user's, ``XDG_CONFIG_DIRS``')."""
    source = os.environ if environ is None else environ
    if config.host_pip_config:
        passed = {k: v for k, v in source.items() if k.startswith("PIP_") and not _SECRET_VALUE.search(v)}
    else:
        passed = {"PIP_CONFIG_FILE": os.devnull}
    passed.update({name: source[name] for name in config.pass_env if name in source})
    return passed


def rlimit_prefix(config: SandboxConfig, *, processes: bool, address_space: bool = False) -> list[str]:
    """A ``prlimit`` command prefix that applies the configured per-process limits.

    Memory is RLIMIT_DATA (what a process may allocate: an allocation past it fails, so Python
    raises MemoryError rather than being killed), and with ``address_space`` also RLIMIT_AS, which
    counts shared mappings too (where no cgroup bounds the task as a whole); file size is
    RLIMIT_FSIZE; processes is RLIMIT_NPROC, which counts every process and thread of the user, so
    it is only meaningful inside a user namespace of its own.
    """
    limits = []
    if config.memory_limit is not None:
        limits.append(f"--data={config.memory_limit}")
        if address_space:
            limits.append(f"--as={config.memory_limit}")
    if config.max_file_size is not None:
        limits.append(f"--fsize={config.max_file_size}")
    if processes and config.max_processes is not None:
        limits.append(f"--nproc={config.max_processes}")
    return [program("prlimit"), *limits, "--"] if limits else []


def file_io(proc: subprocess.CompletedProcess[bytes], path: str) -> bytes:
    """The output of a command that read or wrote ``path`` inside a sandbox, or its failure as an OSError."""
    if proc.returncode == 0:
        return proc.stdout
    message = proc.stderr.decode("utf-8", "replace").strip() or f"exit status {proc.returncode}"
    if "No such file" in message:
        raise FileNotFoundError(2, message, path)
    if "Permission denied" in message or "Read-only" in message:
        raise PermissionError(13, message, path)
    raise OSError(message)


def make_task_dir(config: SandboxConfig, label: str, mount: Callable[[Path], None] | None = None) -> Path:
    """A new task directory with ``content/``, ``home/`` and ``tmp/``; ``mount`` puts a file system on it first."""
    parent = config.root or Path(tempfile.gettempdir())
    parent.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix=f"super-bench-{label}-", dir=parent))
    if mount is not None:
        mount(root)
    for sub in ("content", "home", "tmp"):
        (root / sub).mkdir()
    return root
