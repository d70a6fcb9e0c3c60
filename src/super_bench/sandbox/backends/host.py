"""The host sandboxes' shared base: a task run as host processes, in a task directory of its own.

``local`` runs them plainly, ``bwrap`` inside bubblewrap (by overriding where paths appear and how a
command is wrapped). What the base gives: a fresh working directory, HOME and TMPDIR per task, its own
Python environment (with none of the harness's packages), an environment scrubbed of credentials and of
the user's configuration, the memory limit (a cgroup of the task's own where one can be made), the
file-size and disk limits, the package cache, and a stop that kills every process the task started
(found by a marker variable they all inherit), also when the harness itself is killed (the watchdog).

What it defends even so: the limits and the harness's own helpers. Every program the harness starts
around agent code (``sh`` joining the memory cgroup, ``prlimit``, ``env``) is a system program run by its
absolute path with an environment that cannot make it load code (``lifetime.programs``); nothing is looked
up on the task's PATH, whose first directory agent code writes, until agent code itself runs. The wall-time
limit is kept by the harness (at its end everything the task runs is killed), and the kernels' own output
goes to a bounded tail in the harness's memory, never to a file.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from super_bench._sizes import human_size
from super_bench.errors import SandboxError, SuperBenchError
from super_bench.sandbox.backends.support import (
    PopenKernelProcess,
    await_kernel,
    make_task_dir,
    passed_environ,
    rlimit_prefix,
    scrubbed_environ,
)
from super_bench.sandbox.base import (
    MAX_EDIT_BYTES,
    CommandResult,
    FileTooLargeError,
    KernelLaunch,
    Sandbox,
    SandboxDescription,
    Usage,
)
from super_bench.sandbox.config import BuildReport, BuildRequest, SandboxConfig
from super_bench.sandbox.launch.runtime_dir import KernelRuntime
from super_bench.sandbox.lifetime import supervisor
from super_bench.sandbox.lifetime.programs import agent_env_prefix, helper_environ
from super_bench.sandbox.lifetime.reaper import MARKER, kill_marked, processes_with_marker, remove_tree
from super_bench.sandbox.lifetime.scratch import forget_cgroup, note_cgroup, runtime_tag
from super_bench.sandbox.limits.disk import WATCH, TaskFilesystem, deleted_open_bytes, disk_mechanism
from super_bench.sandbox.limits.disk import describe as describe_disk
from super_bench.sandbox.limits.memory import KERNEL_MEMORY, MemoryCgroup, check_kernel_memory, memory_mechanism
from super_bench.sandbox.limits.memory import describe as describe_memory
from super_bench.sandbox.mirrors.serving import check_task_pip, mirror_environ
from super_bench.sandbox.packages.task_access import PACKAGES_PORT, PackageSession, cache_applies, cache_record
from super_bench.sandbox.pyenv.report import describe_task_environment
from super_bench.sandbox.pyenv.super_base import build_base_env, task_base
from super_bench.sandbox.pyenv.task_env import BasePython, create_task_env, packages_of

log = logging.getLogger(__name__)


# Said by `sandbox check`: no kernel is forked from a warm one (docs/performance.md says why).
KERNEL_START = (
    "kernels (local, bwrap): each task's is a new interpreter, started cold in the task's own environment, "
    "variables and limits; none is forked from a warm one"
)


class HostSandbox(Sandbox):
    """A task as host processes in a task directory of its own; subclasses say how they are confined."""

    # Whether the kernel runs under a wrapper that reports its death by signal N as status 128 + N.
    wrapped_kernel: ClassVar[bool] = False
    # Where the kernels' sockets directory appears to agent code (None: at its host path).
    sockets_inside: ClassVar[str | None] = None
    # Whether agent code reaches the package cache with the network off (through its unix socket).
    cache_without_network: ClassVar[bool] = False

    @classmethod
    def check(cls, config: SandboxConfig) -> None:
        if config.memory_limit is not None:
            check_kernel_memory(config.memory_limit, memory_mechanism(config.memory_enforcement), cls.name)
        if config.disk_limit is not None:
            disk_mechanism(config.disk_enforcement)

    @classmethod
    def check_lines(cls, config: SandboxConfig) -> list[str]:
        return [
            f"--memory-limit is enforced by: {describe_memory(memory_mechanism())}; the least a run accepts: "
            f"{human_size(KERNEL_MEMORY[memory_mechanism()])}, what a notebook kernel needs",
            f"--disk-limit is enforced by: {describe_disk(disk_mechanism())}",
            KERNEL_START,
        ]

    # The base environment task environments are layered over, from an interpreter of this machine.
    build_options: ClassVar[frozenset[str]] = frozenset({"python", "pip_args", "packages_as_of", "torch"})

    @classmethod
    def build(cls, request: BuildRequest, echo: Callable[[str], None]) -> BuildReport:
        record = build_base_env(
            request.python,
            request.requirements,
            request.pip_args,
            echo=echo,
            packages_as_of=request.packages_as_of,
            torch=request.torch or "cpu",
        )
        dated = f", packages as of {record.packages_as_of}" if record.packages_as_of else ""
        return BuildReport(
            built=f"SUPER's task environment (Python {record.version}{dated}); task environments now use it.",
            notes=(
                *(("Left out", f"{entry}: {why}") for entry, why in record.skipped.items()),
                *(("Note:", note) for note in record.notes),
            ),
        )

    def __init__(self, config: SandboxConfig, label: str = "task") -> None:
        super().__init__(config, label)
        self.id = uuid.uuid4().hex[:12]
        self._root: Path | None = None
        self._runtime: KernelRuntime | None = None
        self._env: dict[str, str] = {}
        self._base: BasePython | None = None
        self._kernels: list[PopenKernelProcess] = []
        self._cgroup: MemoryCgroup | None = None
        self._announced: Path | None = None  # the cgroup path the watchdog and the scratch note know of
        self._oom_seen = 0
        self._filesystem: TaskFilesystem | None = None
        self._disk_watched: Callable[[], int] | None = None
        self._packages: PackageSession | None = None

    @classmethod
    def describe(cls, config: SandboxConfig, *, packages: bool = False) -> SandboxDescription:
        try:
            info = describe_task_environment(config)
            environment: dict[str, Any] = info.model_dump()
            summary = info.summary
            if packages:
                base = task_base(config.task_python)
                environment["packages"] = packages_of(base.site_dirs)
                environment["kernel_packages"] = packages_of([str(base.kernel_dir / "packages")])
        except SuperBenchError as e:
            environment, summary, info = {"error": str(e)}, f"unavailable: {e}", None
        # Said when tasks will not run in SUPER's environment because it was never built.
        warning = None
        if info is not None and info.kind == "default" and config.task_python is None:
            warning = f"the task environment is {summary}"
        return SandboxDescription(
            backend=cls.name,
            environment=summary,
            task_environment=environment,
            warning=warning,
            memory_enforcement=_mechanism(config.memory_limit, lambda: memory_mechanism(config.memory_enforcement)),
            disk_enforcement=_mechanism(config.disk_limit, lambda: disk_mechanism(config.disk_enforcement)),
            package_cache=cache_record(config, without_network=cls.cache_without_network),
        )

    # -- layout ------------------------------------------------------------------------------
    @property
    def root(self) -> Path:
        if self._root is None:
            raise SandboxError("the sandbox is not started")
        return self._root

    def inside(self, host: Path) -> str:
        """Where agent code sees a path of the task directory (locally: where it is)."""
        return str(host)

    def shown_at(self, host: str) -> str:
        """Where agent code sees a directory the harness shares read-only (kernel, base packages; locally:
        where it is)."""
        return host

    @property
    def workdir(self) -> str:
        return self.inside(self.root / "content")

    @property
    def runtime_dir(self) -> Path:
        if self._runtime is None:
            raise SandboxError("the sandbox is not started")
        return self._runtime.root

    @property
    def sockets_dir(self) -> Path:
        """Where the kernels bind their sockets (agent code's to write: see ``KernelRuntime``)."""
        if self._runtime is None:
            raise SandboxError("the sandbox is not started")
        return self._runtime.sockets

    @property
    def python_dir(self) -> Path:
        """The task's own Python environment (its virtual environment)."""
        return self.root / "python"

    @property
    def base(self) -> BasePython:
        if self._base is None:
            raise SandboxError("the sandbox is not started")
        return self._base

    def _agent_uid(self) -> int | None:
        """The user id agent code runs as, when it is not the harness's own."""
        return None

    def start(self) -> None:
        if self._root is not None:
            return
        type(self).check(self.config)
        # The watchdog learns of each thing before it exists, so a harness killed at any moment leaves nothing.
        supervisor.register("marker", self.id)
        limit = self.config.disk_limit
        own_filesystem = limit is not None and disk_mechanism(self.config.disk_enforcement) == "filesystem"
        try:
            self._root = make_task_dir(self.config, self.label, self._mount if own_filesystem else None)
        except BaseException:
            self.stop()
            raise
        if not self.config.keep:
            supervisor.register("dir", str(self._root))
        try:
            self._prepare()
            if limit is not None and not own_filesystem:
                self._disk_watched = WATCH.watch(
                    self.root,
                    limit,
                    self._agent_uid(),
                    self._disk_passed_limit,
                    held=lambda: deleted_open_bytes(processes_with_marker(self.id)),
                )
            if self.config.packages_as_of is not None and self._packages is None:
                # Without the package cache, the date is pip's own filter, which old pips ignore. Asked inside
                # the sandbox, where the task's Python finds its packages; said of what the user can name: the
                # task environment is made afresh for every task from the base's (whose pip it gets).
                pip = self.run(["python", "-m", "pip", "--version"], timeout=120)
                where = f"the task environment over {self.base.interpreter}"
                check_task_pip(self.config, pip.stdout, where, upgradable=False)
        except BaseException:
            self.stop()  # a start that failed half-way leaves nothing either
            raise
        self._start_wall_clock()

    def _mount(self, root: Path) -> None:
        self._root = root  # so that a stop on the way unmounts it
        self._filesystem = TaskFilesystem(root, self.config.disk_limit or 0)

    def _disk_passed_limit(self, found: int) -> None:
        """Called by the disk watch: stop everything the task runs, and let nothing more start."""
        self._disk_passed = found
        log.warning("task %s: its directory holds %d bytes, past its disk limit: stopping it", self.label, found)
        for kernel in list(self._kernels):
            kernel.kill()
        kill_marked(self.id)

    def usage(self) -> Usage:
        disk = None
        if self._filesystem is not None:
            disk = self._filesystem.used()
        elif self._disk_watched is not None:
            disk = self._disk_watched()
        cgroup = self._cgroup
        return Usage(disk, cgroup.current() if cgroup is not None else None)

    def disk_full(self) -> bool:
        return self._filesystem is not None and self._filesystem.full()

    def _prepare(self) -> None:
        """The runtime directory, the task's Python environment, its variables and its memory cgroup."""
        # Where the kernel binds its sockets, agent code can write: in the task's directory (under its disk limit)
        # where agent code sees that folder at a path of the sandbox's own, short enough for a socket's name.
        sockets_in = self.root if self.sockets_inside is not None else None
        self._runtime = KernelRuntime.create(
            runtime_tag(self.config.root), socket_owner=self._agent_uid(), sockets_in=sockets_in
        )
        supervisor.register("dir", str(self._runtime.root))
        self._base = task_base(self.config.task_python)
        # The kernel's packages come last: what the task lacks of Jupyter's (IPython, matplotlib-inline for the
        # inline backend) is there for its scripts too, as in SUPER's environment, and never shadows its own.
        site_dirs = [self.shown_at(d) for d in (*self._base.site_dirs, str(self._base.kernel_dir / "packages"))]
        create_task_env(self.python_dir, self._base, visible_at=self.inside(self.python_dir), site_dirs=site_dirs)
        if cache_applies(self.config, without_network=self.cache_without_network):
            inside = self.inside(self.python_dir)
            # Without the network, at the forwarder's port of the sandbox's own loopback (bwrap's _wrap).
            address = None if self.config.network else f"http://127.0.0.1:{PACKAGES_PORT}"
            self._packages = PackageSession(self.config, self.python_dir, self._agent_uid(), inside, address)
            self._packages.install_hook(self.python_dir / "lib" / f"python{self._base.version}" / "site-packages")
        self._env = self.agent_environ()
        if self.config.memory_limit is not None and memory_mechanism(self.config.memory_enforcement) != "address-space":
            self._cgroup = MemoryCgroup(self.label, self.config.memory_limit, self._announce_cgroup)

    def _announce_cgroup(self, path: Path) -> None:
        """Before the task's cgroup is made: the watchdog learns of it, and the run's scratch folder notes it for
        a resume, should the watchdog die too. Made only then, it is never left by a harness killed meanwhile."""
        self._announced = path
        supervisor.register("cgroup", str(path))
        note_cgroup(self.config.root, path)

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
            # Figures display in the notebook (as <Figure ...> text and an image kept in the trajectory).
            MPLBACKEND="module://matplotlib_inline.backend_inline",
            GIT_TERMINAL_PROMPT="0",
            PIP_DISABLE_PIP_VERSION_CHECK="1",
            DEBIAN_FRONTEND="noninteractive",
        )
        env[MARKER] = self.id
        env.update(passed_environ(self.config))
        env.update(mirror_environ(self.config, shown_at=self.shown_at))
        if self._packages is not None:
            self._packages.environ(env)
        env.update(self.config.env)
        return env

    # -- kernel --------------------------------------------------------------------------------
    def _limits(self, *, processes: bool) -> list[str]:
        address_space = self.config.memory_limit is not None and self._cgroup is None
        return rlimit_prefix(self.config, processes=processes, address_space=address_space)

    def _wrap(self, argv: list[str]) -> list[str]:
        """The host command line that runs ``argv`` as agent code, in the work directory: helpers by absolute
        paths (the cgroup's ``sh``, ``prlimit``), then ``env`` giving agent code its own PATH back. It is started
        with ``helper_environ(self._env)``."""
        self._check_disk()
        return self._in_cgroup([*self._limits(processes=False), *agent_env_prefix(self._env), *argv])

    def _wall_time_passed(self) -> None:
        log.warning("task %s: its wall-time limit has passed: stopping it", self.label)
        for kernel in list(self._kernels):
            kernel.kill()
        kill_marked(self.id)
        if self._cgroup is not None:
            self._cgroup.kill()

    def _in_cgroup(self, argv: list[str]) -> list[str]:
        return argv if self._cgroup is None else self._cgroup.wrap(argv)

    def _spawn_options(self) -> dict[str, Any]:
        """Extra ``subprocess`` options for commands started in the sandbox."""
        return {"cwd": self.root / "content"}

    def _kernel_argv(self, connection_file: str, extra_args: list[str]) -> list[str]:
        python = f"{self.inside(self.python_dir)}/bin/python"
        boot = f"{self.shown_at(str(self.base.kernel_dir))}/kernel_boot.py"
        # -S: the kernel's machinery is imported before the task's site-packages exist (see kernel_boot).
        return [python, "-S", boot, "-f", connection_file, *extra_args]

    def launch_kernel(self, extra_args: list[str], timeout: float) -> KernelLaunch:
        runtime = self._runtime
        if runtime is None:
            raise SandboxError("the sandbox is not started")
        files = runtime.new_kernel(self.sockets_inside or str(runtime.sockets))
        argv = self._wrap(self._kernel_argv(files.connection_file, extra_args))
        try:
            popen = supervisor.spawn(
                argv,
                env=helper_environ(self._env),
                stdin=subprocess.DEVNULL,
                stdout=files.log_fd,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                **self._spawn_options(),
            )
        except OSError as e:
            raise SandboxError(f"cannot start the kernel ({argv[0]}): {e}") from e
        finally:
            files.release_log()  # the kernel holds the pipe now: its end is the log's end
        kernel = PopenKernelProcess(popen, wrapped=self.wrapped_kernel, on_kill=lambda: runtime.forget(files))
        self._kernels.append(kernel)
        return await_kernel(runtime, files, kernel, timeout)

    def kernel_log_tail(self, chars: int = 2000) -> str:
        return self._runtime.log_tail(chars) if self._runtime is not None else ""

    def out_of_memory(self) -> bool:
        if self._cgroup is None:
            return False
        count = self._cgroup.oom_kills()
        seen, self._oom_seen = self._oom_seen, count
        return count > seen

    # -- commands and files --------------------------------------------------------------------
    def run(self, command: list[str], timeout: float = 600) -> CommandResult:
        left = self._time_left()
        if left is not None:
            timeout = min(timeout, left)
        try:
            proc = subprocess.run(
                self._wrap(command),
                env=helper_environ(self._env),
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
        return self._read_at_most(path, None)

    def edit_file(self, path: str, change: Callable[[bytes], bytes], limit: int = MAX_EDIT_BYTES) -> None:
        self.write_file(path, change(self._read_at_most(path, limit)))

    def _read_at_most(self, path: str, limit: int | None) -> bytes:
        # Opened without waiting for a writer and read only if it is a plain file: agent code chooses what
        # the path is, and a FIFO would otherwise hold the harness forever. With a limit, no more than one
        # byte past it is ever read (the file may grow while it is read).
        fd = os.open(self._host_path(path), os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(f"{path} is not a regular file")
            if limit is None:
                return f.read()
            size = os.fstat(fd).st_size
            if size > limit:
                raise FileTooLargeError(path, size, limit)
            data = f.read(limit + 1)
            if len(data) > limit:
                raise FileTooLargeError(path, len(data), limit)
            return data

    def write_file(self, path: str, data: bytes) -> None:
        target = self._host_path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    def stop(self) -> None:
        if self._root is None:
            return
        self._stop_wall_clock()
        if self._disk_watched is not None:
            WATCH.unwatch(self._root)
            self._disk_watched = None
        for kernel in self._kernels:
            kernel.kill()
        self._kernels.clear()
        # Daemons the agent started with setsid/nohup left the kernel's process group but still carry the marker.
        kill_marked(self.id)
        if self._cgroup is not None:
            self._cgroup.remove()
            self._cgroup = None
        if self._announced is not None:  # also one that failed to be made
            supervisor.unregister("cgroup", str(self._announced))
            forget_cgroup(self.config.root, self._announced)
            self._announced = None
        if self._packages is not None:
            self._packages.close()
            self._packages = None
        if self._runtime is not None:
            self._runtime.close()
            remove_tree(str(self._runtime.root))
            supervisor.unregister("dir", str(self._runtime.root))
        self._finish_task_dir()
        supervisor.unregister("marker", self.id)
        self._root = self._runtime = None

    def _finish_task_dir(self) -> None:
        filesystem, self._filesystem = self._filesystem, None
        if filesystem is not None:
            if self.config.keep:  # kept as a plain directory: the file system goes with the run
                kept = self.root.with_name(self.root.name + ".kept")
                shutil.copytree(self.root, kept, symlinks=True)
                filesystem.unmount()
                self.root.rmdir()
                kept.rename(self.root)
            else:
                filesystem.unmount()
        if not self.config.keep:
            remove_tree(str(self.root))
            supervisor.unregister("dir", str(self.root))


def _mechanism(limit: int | None, mechanism: Callable[[], str]) -> str | None:
    """How a limit is enforced: None without the limit, and why not where it cannot be."""
    if limit is None:
        return None
    try:
        return mechanism()
    except SuperBenchError as e:
        return f"unavailable: {e}"


def _text(data: str | bytes | None) -> str:
    if data is None:
        return ""
    return data if isinstance(data, str) else data.decode("utf-8", "replace")
