"""The ``docker`` sandbox: one container per task, from the image ``super-bench sandbox build
--sandbox docker`` makes (the environment SUPER's tasks were solved in). Docker or Podman.

The container lives as long as the task, so what the agent installs (pip, apt) stays across
kernel restarts and goes with the container. The task directory's parts are mounted as on
Colab (``/content``, ``/root``, ``/tmp``); the kernel is started by the container's first process, its
lifetime guard, which serves the harness over one unix socket (``container_helper``: kernel starts, files,
kills, the container's end, without an engine command each; where it cannot, ``exec`` and ``cp`` as before),
and talks to the harness over unix sockets in the runtime directory, mounted at its host path. Limits are the
engine's: memory (the container's cgroup, plus RLIMIT_DATA per process so that Python gets a
MemoryError first), processes (pids cgroup), file size (RLIMIT_FSIZE), network (``none``),
and wall time (kept by the harness, which kills everything in the container at the limit); the disk
limit is watched (``container_disk``).

pip in the task installs through the harness's package cache, with the network off too: the proxy's unix
socket is bound into the container, and a forwarder started with it (``in_task/socket_forward.py``)
serves it at a loopback port of the container's own. Installs copy: the cache's files are on the host, the
task's packages in the container's own layer, and a link cannot cross from one to the other.
"""

from __future__ import annotations

import contextlib
import logging
import os
import posixpath
import shlex
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from super_bench._sizes import human_size
from super_bench.errors import SandboxError
from super_bench.sandbox.backends.container_disk import (
    DISK_MECHANISM,
    bind_files_dir,
    check_disk_limit,
    writable_layer,
)
from super_bench.sandbox.backends.container_engine import Engine, find_engine, image_exists
from super_bench.sandbox.backends.container_exec import kill_in_container, namespace_pids, run_bounded
from super_bench.sandbox.backends.container_files import copy_in, copy_out
from super_bench.sandbox.backends.container_helper import SOCKET_NAME, GuardHelper, HelperGone
from super_bench.sandbox.backends.container_image import (
    CA_BUNDLE_INSIDE,
    IMAGE_KERNEL_BOOT,
    build_images,
    default_image,
    host_ca_bundle,
    image_environment,
    image_info,
)
from super_bench.sandbox.backends.container_kernel import ContainerKernel, GuardKernel, container_ended, group_in
from super_bench.sandbox.backends.support import (
    await_kernel,
    file_io,
    make_task_dir,
    passed_environ,
)
from super_bench.sandbox.base import (
    MAX_EDIT_BYTES,
    CommandResult,
    KernelLaunch,
    KernelProcess,
    Sandbox,
    SandboxDescription,
    Usage,
)
from super_bench.sandbox.config import BuildReport, BuildRequest, SandboxConfig
from super_bench.sandbox.launch.runtime_dir import KernelFiles, KernelRuntime
from super_bench.sandbox.lifetime import supervisor
from super_bench.sandbox.lifetime.reaper import MARKER, remove_container, remove_tree
from super_bench.sandbox.lifetime.scratch import CONTAINER_LABEL, runtime_tag
from super_bench.sandbox.limits.disk import WATCH, deleted_open_bytes
from super_bench.sandbox.limits.memory import KERNEL_MEMORY, CgroupMemory, cgroup_of, check_kernel_memory
from super_bench.sandbox.mirrors.serving import check_task_pip, git_config_dir, mirror_environ, mirror_paths
from super_bench.sandbox.packages.task_access import (
    FORWARDER,
    PACKAGES_INSIDE,
    PACKAGES_PORT,
    PackageSession,
    cache_applies,
    cache_record,
)
from super_bench.sandbox.pyenv.report import compare_with_paper, paper_differences

log = logging.getLogger(__name__)

MEMORY_MECHANISM = (
    "the container's memory cgroup (--memory: all its processes together, shared memory too; /dev/shm half "
    "of it), and RLIMIT_DATA per process"
)
# Where what the harness shares read-only appears in the container.
SHARED_INSIDE = "/opt/super-bench/shared"
# Where the kernels' sockets directory appears in the container.
SOCKETS_INSIDE = "/run/super-bench"
_GUARD = (Path(__file__).resolve().parents[1] / "in_task" / "container_guard.py").read_text()
# Engines and images found, by the settings that name them: (when, engine, image).
_FOUND: dict[tuple[str | None, str | None], tuple[float, Engine, str]] = {}
_FOUND_FOR = 60.0
# Seconds a container's guard may take to listen (it does within a tenth of a second on an idle machine).
_GUARD_WAIT = 10.0
_NO_LINKS = "links cannot cross the container's boundary (the cache is on the host, the task's packages in its layer)"

# Starts the kernel in a process group of its own (so that interrupts and kills reach what it
# runs too) and leaves its PID where the harness can kill that group.
_LAUNCH = """
import os, sys
try:
    os.setpgid(0, 0)
except OSError:
    pass  # a session leader leads its process group already
with open(sys.argv[1], "w") as f:
    f.write(str(os.getpid()))
if sys.argv[2] != "-":
    os.umask(int(sys.argv[2], 8))
os.execvp(sys.argv[3], sys.argv[3:])
"""


class DockerSandbox(Sandbox):
    name = "docker"
    isolates: ClassVar[bool] = True
    runs_containers: ClassVar[bool] = True
    # A container started ahead has its guard count its lifetime from the task's start (``start_clock``).
    starts_ahead: ClassVar[bool] = True

    def __init__(self, config: SandboxConfig, label: str = "task") -> None:
        super().__init__(config, label)
        self.id = uuid.uuid4().hex[:12]
        self.container = f"super-bench-{self.label}-{self.id}"
        self._root: Path | None = None
        self._runtime: KernelRuntime | None = None
        self._engine: Engine | None = None
        self._image = ""
        self._host_owns_files = True
        self._kernels: list[KernelProcess] = []
        self._cgroup: CgroupMemory | None = None
        self._main_pid: int | None = None  # the container's main process, by its host id (None: not known)
        self._oom_seen = 0
        self._packages: PackageSession | None = None
        self._disk_watched: Callable[[], int] | None = None
        self._shared_paths: dict[str, str] | None = None
        self._helper: GuardHelper | None = None  # the guard's connection (None: an engine command per operation)

    @classmethod
    def check(cls, config: SandboxConfig) -> None:
        check_kernel_memory(config.memory_limit, "container", cls.name)
        check_disk_limit(config, *cls.engine_for(config))

    @classmethod
    def check_lines(cls, config: SandboxConfig) -> list[str]:
        disk = cls.describe(config.model_copy(update={"disk_limit": 1 << 30})).disk_enforcement
        return [
            f"--sandbox docker uses: {describe_engine(config)}",
            f"--memory-limit in docker: {MEMORY_MECHANISM}; the least a run accepts: "
            f"{human_size(KERNEL_MEMORY['container'])}, what a notebook kernel needs",
            f"--disk-limit in docker: {disk}",
        ]

    # The task image over a Debian-like base image (SUPER's packages), or only its kernel layer.
    # --python, --packages-as-of and --torch as for the other backends' base, so that both are one environment.
    build_options: ClassVar[frozenset[str]] = frozenset(
        {"engine", "tag", "base_image", "kernel_only", "ca_bundle", "python", "packages_as_of", "torch"}
    )

    @classmethod
    def build(cls, request: BuildRequest, echo: Callable[[str], None]) -> BuildReport:
        info = build_images(
            request.base_image or "debian:bookworm-slim",
            engine_name=request.engine,
            tag=request.tag,
            requirements=request.requirements,
            kernel_only=request.kernel_only,
            ca_bundle=request.ca_bundle or host_ca_bundle(),
            python=request.python,
            packages_as_of=request.packages_as_of,
            torch=request.torch or "cpu",
            echo=echo,
        )
        return BuildReport(
            built=f"{info.summary}; run tasks in it with --sandbox docker.",
            notes=tuple(("Differs from the paper's environment:", difference) for difference in info.differences),
        )

    @staticmethod
    def engine_for(config: SandboxConfig) -> tuple[Engine, str]:
        """The engine, configured as it runs here, and the image tasks run in; ``SandboxError`` where either
        is missing. Found once a minute at most for the same settings (each look is an engine command per image,
        and every task of a run asks): an image removed meanwhile fails the container's start, saying so."""
        if config.ca_bundle is not None and not config.ca_bundle.is_file():
            raise SandboxError(f"--ca-bundle {config.ca_bundle}: no such file")
        key = (config.engine, config.image)
        found = _FOUND.get(key)
        if found is not None and time.monotonic() - found[0] < _FOUND_FOR:
            return found[1], found[2]
        engine, image = DockerSandbox._find_engine(config)
        _FOUND[key] = (time.monotonic(), engine, image)
        return engine, image

    @staticmethod
    def _find_engine(config: SandboxConfig) -> tuple[Engine, str]:
        engine = find_engine(config.engine)
        image = config.image or default_image(engine)
        if not image_exists(engine, image):
            raise SandboxError(
                f"the image {image} is not here: "
                + (
                    "pull or build it"
                    if config.image
                    else "for the bundled demo, build the small kernel image with `super-bench sandbox build "
                    "--sandbox docker --kernel-only` (about 700 MB); for SUPER's tasks, the full one without "
                    "--kernel-only (about 8 GB)"
                )
            )
        return find_engine(config.engine, image), image

    @classmethod
    def describe(cls, config: SandboxConfig, *, packages: bool = False) -> SandboxDescription:
        """The image tasks run in (what ``sandbox build`` wrote into it) and the engine with its settings."""
        try:
            engine, image = cls.engine_for(config)
        except SandboxError as e:
            found: dict[str, Any] = {"kind": "docker", "error": str(e), "summary": f"no docker image: {e}"}
        else:
            info = image_info(engine, image)
            found = {"kind": "docker", "image": image, "engine": engine.model_dump()}
            if info is None:
                found["summary"] = f"the image {image} (not made by `super-bench sandbox build`: packages unknown)"
            else:
                found |= {"summary": info.summary, "python": info.python, "layer": info.layer, "base": info.base}
                found |= {"differences": info.differences, "torch": info.torch}
            # The task Python as tasks find it, measured (the label says what the build meant): its version and
            # pip, how they differ from the paper's, and with ``packages`` every package a task's pip lists.
            measured = image_environment(engine, image)
            if measured is not None and info is not None and info.layer == "super":
                # SUPER's image is compared with the paper's as the other backends' base is: what is installed.
                compared = compare_with_paper(
                    "built",
                    measured["python"],
                    "/venv/bin/python",
                    measured["packages"],
                    packages_as_of=info.packages_as_of,
                    torch=info.torch,
                    notes=info.notes,
                    source=f"the image {image}",
                ).model_dump()
                found |= {k: v for k, v in compared.items() if k != "kind"} | {"skipped": info.skipped}
            elif measured is not None:
                kept = [d for d in found.get("differences", []) if not d.startswith("Python ")]
                differences = [*paper_differences(measured["python"], measured["pip"]), *kept]
                found |= {"python": measured["python"], "pip": measured["pip"], "differences": differences}
            if measured is not None and packages:
                found["packages"] = measured["packages"]
        disk = None
        if config.disk_limit is not None:
            try:
                cls.check(config)
                disk = DISK_MECHANISM
            except SandboxError as e:
                disk = f"unavailable: {e}"
        return SandboxDescription(
            backend=cls.name,
            environment=found["summary"],
            task_environment=found,
            memory_enforcement=None if config.memory_limit is None else MEMORY_MECHANISM,
            disk_enforcement=disk,
            package_cache=cache_record(config, without_network=True, copies=_NO_LINKS),
        )

    @property
    def workdir(self) -> str:
        return "/content"

    @property
    def runtime_dir(self) -> Path:
        if self._runtime is None:
            raise SandboxError("the sandbox is not started")
        return self._runtime.root

    def _runtime_sockets(self) -> Path:
        if self._runtime is None:
            raise SandboxError("the sandbox is not started")
        return self._runtime.sockets

    def start(self) -> None:
        if self._root is not None:
            return
        self._engine, self._image = self.engine_for(self.config)
        check_disk_limit(self.config, self._engine, self._image)
        # The watchdog learns of each thing before it exists, so a harness killed at any moment leaves nothing.
        supervisor.register("container", [*self._engine.command, self.container])
        self._root = make_task_dir(self.config, self.label)
        if not self.config.keep:
            supervisor.register("dir", str(self._root))
        # The kernels' sockets in the task directory: what agent code writes there is under the disk watch.
        self._runtime = KernelRuntime.create(runtime_tag(self.config.root), sockets_in=self._root)
        supervisor.register("dir", str(self._runtime.root))
        try:
            if cache_applies(self.config, without_network=True):
                self._packages = PackageSession(self.config, None, None, "", f"http://127.0.0.1:{PACKAGES_PORT}")
            self._start_container()
        except BaseException:
            self.stop()  # a start that failed half-way leaves nothing
            raise
        self._start_wall_clock()
        # The guard's connection tells its host process id too (an engine's inspect is a process of its own).
        self._helper = GuardHelper.connect(self._runtime_sockets(), timeout=_GUARD_WAIT)
        if self._helper is not None:
            self._main_pid = self._helper.peer
        else:
            main = self._inspect("{{.State.Pid}}")
            self._main_pid = int(main) if main.isdigit() and int(main) > 0 else None
        self._cgroup = cgroup_of(self._main_pid) if self._main_pid is not None else None
        self._host_owns_files = self._container_root_is_harness()
        if self.config.packages_as_of is not None and self._packages is None:
            # Without the package cache, the date is pip's own filter, which old pips ignore.
            try:
                pip = self._exec(["python3", "-m", "pip", "--version"]).stdout.decode()
                check_task_pip(self.config, pip, f"python3 of the image {self._image}", upgradable=False)
            except SandboxError:
                self.stop()
                raise

    def _container_root_is_harness(self) -> bool:
        """Whether a file the container's root makes is the harness's own (rootless engines) or the host's root's:
        then the kernel's sockets must be open to the harness, and the files handed back before they are removed.
        Read from the host, as the owner of the container's first process (its root, the image's user), where
        the host sees it; otherwise from a file made in the container."""
        if self._main_pid is not None:
            with contextlib.suppress(OSError, ValueError, IndexError):
                status = Path(f"/proc/{self._main_pid}/status").read_text()
                uids = next(line for line in status.splitlines() if line.startswith("Uid:"))
                return int(uids.split()[2]) == os.getuid()  # the effective id, as files are made with
        made = self.root / "tmp" / ".super-bench-owner"
        if self._exec(["touch", "/tmp/.super-bench-owner"]).returncode == 0:
            owned = made.stat().st_uid == os.getuid()
            made.unlink()
            return owned
        return True

    def start_clock(self) -> None:
        held = self._clock_held
        super().start_clock()
        if held and self._root is not None:
            self._arm_guard()

    def _arm_guard(self) -> None:
        """The guard of a container started ahead counts its lifetime from now, the task's start."""
        if self._helper is not None:
            try:
                self._helper.arm()
                return
            except (HelperGone, OSError):
                pass
        command = [*self.engine.command, "kill", "--signal", "USR1", self.container]
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(command, capture_output=True, timeout=60, cwd=self.root)

    def _start_container(self) -> None:
        """The container (with the package cache's forwarder) and its disk watch."""
        # The engine runs in the task's own directory (not shown to the container): what its monitor writes
        # there (conmon writes an empty `oom` file into its working directory when the container's memory
        # runs out) goes when the task's directory does, not into the directory the harness was started in.
        proc = subprocess.run(self._run_command(), capture_output=True, text=True, timeout=300, cwd=self.root)
        if proc.returncode != 0:
            raise SandboxError(f"cannot start the container: {proc.stderr.strip() or proc.stdout.strip()}")
        limit = self.config.disk_limit
        if limit is not None:
            layer = writable_layer(self.engine, self.container)
            if layer is None:
                raise SandboxError(f"--disk-limit on docker: the layer of {self.container} is not on this host")
            binds = bind_files_dir(self.engine, self.container)
            also = (layer, *([binds] if binds is not None else []))
            self._disk_watched = WATCH.watch(
                self.root, limit, None, self._disk_passed_limit, also=also, held=self._held_open
            )

    def _held_open(self) -> int:
        """What deleted files the container's processes keep open take (seen from the host, by their ids)."""
        return deleted_open_bytes(namespace_pids(self._main_pid)) if self._main_pid is not None else 0

    def _disk_passed_limit(self, found: int) -> None:
        """Called by the disk watch: stop everything the task runs, and let nothing more start."""
        self._disk_passed = found
        log.warning("task %s: it holds %d bytes, past its disk limit: stopping it", self.label, found)
        self._kill_all()

    def _wall_time_passed(self) -> None:
        log.warning("task %s: its wall-time limit has passed: stopping it", self.label)
        self._kill_all()

    def _kill_all(self) -> None:
        """Kill every process in the container but its main one (which keeps the container, and the task's files,
        until ``stop``)."""
        for kernel in list(self._kernels):
            kernel.kill()
        # From the host: a program agent code planted in the container (its `sh`, its `kill`) never stands in for
        # the harness's kill. Only root sees every process of a container from the host (not those of another
        # user id of a rootless engine's), so otherwise a kill inside follows, given a short time.
        if self._main_pid is not None:
            kill_in_container(self._main_pid)
            if os.geteuid() == 0:
                return
        if self._helper is not None:
            try:
                self._helper.kill(-1)  # by the guard, which agent code cannot replace
                return
            except (HelperGone, OSError):
                pass
        try:
            self._exec(["sh", "-c", "kill -KILL -1"], timeout=10)
        except (OSError, subprocess.SubprocessError):
            log.warning("task %s: cannot kill what runs in its container", self.label, exc_info=True)

    def _run_command(self) -> list[str]:
        config, root = self.config, self.root
        mounts = {f"{root}/content": "/content", f"{root}/home": "/root", f"{root}/tmp": "/tmp"}
        mounts[str(self._runtime_sockets())] = SOCKETS_INSIDE
        shared = self._shared()
        env = {
            "HOME": "/root",
            "TMPDIR": "/tmp",
            "PYTHONUNBUFFERED": "1",
            "MPLBACKEND": "module://matplotlib_inline.backend_inline",
            "GIT_TERMINAL_PROMPT": "0",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "DEBIAN_FRONTEND": "noninteractive",
            MARKER: self.id,
            **passed_environ(config),
            **mirror_environ(config, self.shown_at),
            **config.env,
        }
        engine = self.engine
        args = [*engine.command, "run", "-d", "--rm", "--name", self.container, "--label", "super-bench=1"]
        # The run's scratch label: a resumed run removes what a killed one left (``lifetime.scratch``).
        args += ["--label", f"{CONTAINER_LABEL}={runtime_tag(config.root)}"]
        args += ["-w", "/content", *engine.run_args]
        for host, inside in mounts.items():
            args += ["-v", f"{host}:{inside}"]
        for host, inside in sorted(shared.items()):
            args += ["-v", f"{host}:{inside}:ro"]
        if self._packages is not None:
            # The proxy's socket, by its directory (the harness's; agent code connects to the socket, nothing more).
            args += ["-v", f"{self._packages.unix_socket().parent}:{PACKAGES_INSIDE}:ro"]
            self._packages.environ(env)
            env.update(config.env)
        if config.ca_bundle is not None:
            # The trust store the user gave: read-only, and pip, requests and OpenSSL use it.
            args += ["-v", f"{config.ca_bundle.resolve()}:{CA_BUNDLE_INSIDE}:ro"]
            for key in ("PIP_CERT", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE", "GIT_SSL_CAINFO"):
                env.setdefault(key, CA_BUNDLE_INSIDE)
        for key, value in env.items():
            args += ["-e", f"{key}={value}"]
        if not config.network:
            args += ["--network", "none"]
        if config.memory_limit is not None:
            memory = str(config.memory_limit)
            args += ["--memory", memory, "--memory-swap", memory, "--ulimit", f"data={memory}:{memory}"]
            # Half the limit, as bwrap's: what /dev/shm holds counts against the container's memory too.
            args += ["--shm-size", str(config.memory_limit // 2)]
        if config.max_processes is not None:
            args += ["--pids-limit", str(config.max_processes)]
        if config.max_file_size is not None:
            args += ["--ulimit", f"fsize={config.max_file_size}:{config.max_file_size}"]
        # The harness keeps the wall time (``_wall_time_passed``); the main process, the lifetime guard
        # (in_task/container_guard.py) as the container's PID 1 (not under the image's tini, where agent code could
        # stop it), ends the container a minute later, should the harness and its watchdog both be gone by then.
        # Started ahead of its task, it counts from the task's start (``start_clock``). It serves the harness's
        # requests (``container_helper``) on a socket in the kernels' sockets folder, to one connection only.
        lifetime = "infinity" if config.wall_time_limit is None else f"{config.wall_time_limit + 60:g}"
        guard = [lifetime, *(["--held"] if self._clock_held else []), "--serve", f"{SOCKETS_INSIDE}/{SOCKET_NAME}"]
        main = [*args, "--entrypoint", "python3", self._image, "-S", "-c", _GUARD, *guard]
        if self._packages is None:
            return main
        # The package cache's forwarder (in_task/socket_forward.py) beside the guard, from the first moment.
        socket = f"{PACKAGES_INSIDE}/{self._packages.unix_socket().name}"
        return [*main, FORWARDER, socket, str(PACKAGES_PORT)]

    def _inspect(self, template: str) -> str:
        command = [*self.engine.command, "inspect", "--format", template, self.container]
        return subprocess.run(command, capture_output=True, text=True, timeout=60).stdout.strip()

    def out_of_memory(self) -> bool:
        if self._cgroup is None:
            return False
        count = self._cgroup.oom_kills()
        seen, self._oom_seen = self._oom_seen, count
        return count > seen

    def usage(self) -> Usage:
        disk = self._disk_watched() if self._disk_watched is not None else None
        return Usage(disk, self._cgroup.current() if self._cgroup is not None else None)

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            raise SandboxError("the sandbox is not started")
        return self._engine

    def _shared(self) -> dict[str, str]:
        """What the harness shares read-only (git's mirror rules, the demo bundles, mirrors, offline bundles, a
        Hugging Face cache), by host path, and where agent code sees it: neutral places, so that nothing of
        the host's layout (a checkout, a home) shows. Found once per sandbox (``shown_at`` asks for every
        variable of the environment)."""
        if self._shared_paths is None:
            shared = {str(git_config_dir()): f"{SHARED_INSIDE}/git"}
            for i, path in enumerate(mirror_paths(self.config)):
                shared.setdefault(path, f"{SHARED_INSIDE}/mirrors/{i}")
            self._shared_paths = shared
        return self._shared_paths

    def shown_at(self, host: str) -> str:
        """Where agent code sees a host path the harness shares."""
        for directory, inside in self._shared().items():
            if host == directory or host.startswith(directory.rstrip("/") + "/"):
                return inside + host[len(directory) :]
        return host

    @property
    def root(self) -> Path:
        if self._root is None:
            raise SandboxError("the sandbox is not started")
        return self._root

    def _exec(
        self, command: list[str], *, data: bytes | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[bytes]:
        stdin = ["-i"] if data is not None else []
        args = [*self.engine.command, "exec", *stdin, "-w", "/content", self.container, *command]
        # Its program is looked up in the container, where agent code can replace it: what it prints is bounded.
        # Run from the task's directory: the engine's monitor writes an ``oom`` file where it was started.
        return run_bounded(args, data=data, timeout=timeout, cwd=self.root)

    # -- kernel --------------------------------------------------------------------------------
    def launch_kernel(self, extra_args: list[str], timeout: float) -> KernelLaunch:
        self._check_disk()
        self._time_left()  # refuses once the wall-time limit has passed
        runtime = self._runtime
        if runtime is None:
            raise SandboxError("the sandbox is not started")
        files = runtime.new_kernel(SOCKETS_INSIDE)
        kernel = ["python3", "-S", IMAGE_KERNEL_BOOT, "-f", files.connection_file, *extra_args]
        if self._helper is not None:
            try:
                return self._launch_by_guard(self._helper, files, kernel, timeout)
            except HelperGone:
                pass  # as before the guard served: by the engine's exec
        pidfile = f"{SOCKETS_INSIDE}/{files.name}.pid"
        # umask 0 lets a harness that is not the container's root connect to the kernel's sockets.
        umask = "-" if self._host_owns_files else "0"
        exec_ = [*self.engine.command, "exec", "-w", "/content", self.container]
        argv = [*exec_, "python3", "-c", _LAUNCH, pidfile, umask]
        popen = supervisor.spawn(
            [*argv, *kernel],
            stdin=subprocess.DEVNULL,
            stdout=files.log_fd,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=self.root,  # as for the container's start
        )
        host_pidfile = runtime.sockets / f"{files.name}.pid"
        fallback = [*exec_, "sh", "-c", f"kill -KILL -- -$(cat {shlex.quote(pidfile)})"]

        def stop() -> None:
            # The pid file is the agent's to change: the group it names is killed only among the container's own
            # processes, from the host; where those cannot be seen from here, by a kill inside the container.
            group = group_in(host_pidfile)
            if self._main_pid is not None and group is not None and group > 1:
                kill_in_container(self._main_pid, group)
            else:
                with contextlib.suppress(OSError, subprocess.SubprocessError):
                    run_bounded(fallback, timeout=60, cwd=self.root)

        process = ContainerKernel(popen, stop, lambda: runtime.forget(files))
        self._kernels.append(process)
        return await_kernel(runtime, files, process, timeout)

    def _launch_by_guard(
        self, helper: GuardHelper, files: KernelFiles, kernel: list[str], timeout: float
    ) -> KernelLaunch:
        """The kernel started by the container's guard, its output into the harness's log pipe."""
        runtime = self._runtime
        if runtime is None:
            raise SandboxError("the sandbox is not started")
        # umask 0 lets a harness that is not the container's root connect to the kernel's sockets.
        pid = helper.spawn(kernel, "/content", None if self._host_owns_files else 0, files.log_fd)
        files.release_log()  # the kernel holds the pipe now: its end is the log's end
        main = self._main_pid

        def stop() -> None:
            # From the host among the container's own processes, where they are seen; else by the guard.
            if main is not None:
                kill_in_container(main, pid)
                if os.geteuid() == 0:
                    return
            with contextlib.suppress(HelperGone, OSError):
                helper.kill(pid)

        process = GuardKernel(helper, pid, stop, lambda: runtime.forget(files))
        self._kernels.append(process)
        return await_kernel(runtime, files, process, timeout)

    def kernel_log_tail(self, chars: int = 2000) -> str:
        return self._runtime.log_tail(chars) if self._runtime is not None else ""

    # -- commands and files --------------------------------------------------------------------
    def run(self, command: list[str], timeout: float = 600) -> CommandResult:
        self._check_disk()
        left = self._time_left()  # nothing starts once the wall-time limit has passed
        if left is not None:
            timeout = min(timeout, left)
        try:
            proc = self._exec(["timeout", "-s", "KILL", f"{timeout:g}", *command], timeout=timeout + 30)
        except subprocess.TimeoutExpired as e:
            return CommandResult(returncode=-1, stdout="", stderr=str(e), timed_out=True)
        out, err = proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")
        return CommandResult(returncode=proc.returncode, stdout=out, stderr=err, timed_out=proc.returncode == 137)

    # Files are read, and edits written, by the engine's own copy from the host side (``container_files``):
    # nothing agent code can plant in the container runs for them.
    # Through the guard where it serves (no program of the container's but the guard runs for them either).
    def read_file(self, path: str) -> bytes:
        absolute = self._absolute(path)
        if self._helper is not None:
            with contextlib.suppress(HelperGone):
                return self._helper.read(absolute, None)
        return copy_out(self.engine.command, self.container, absolute, None)[1]

    def edit_file(self, path: str, change: Callable[[bytes], bytes], limit: int = MAX_EDIT_BYTES) -> None:
        absolute = self._absolute(path)
        if self._helper is not None:
            try:
                data = self._helper.read(absolute, limit)
                self._helper.write(absolute, change(data), parents=False)
                return
            except HelperGone:
                pass
        header, data = copy_out(self.engine.command, self.container, absolute, limit)
        copy_in(self.engine.command, self.engine.name, self.container, absolute, change(data), header)

    @staticmethod
    def _absolute(path: str) -> str:
        return posixpath.normpath(posixpath.join("/content", path))  # the work directory, as agent code sees it

    def write_file(self, path: str, data: bytes) -> None:
        if self._helper is not None:
            with contextlib.suppress(HelperGone):
                return self._helper.write(self._absolute(path), data, parents=True)
        script = 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"'
        file_io(self._exec(["sh", "-c", script, "sh", path], data=data), path)

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
        if self._packages is not None:
            self._packages.close()
            self._packages = None
        if not self._host_owns_files:
            uid, gid = os.getuid(), os.getgid()
            self._exec(["chown", "-R", f"{uid}:{gid}", "/content", "/root", "/tmp"], timeout=300)
        # The guard's exit ends every process of the container at once, and the engine removes the container
        # (started with --rm) beside what comes next; without it, the engine's rm, waited for.
        helper, self._helper = self._helper, None
        if helper is None or not helper.end_container() or not container_ended(self._main_pid):
            remove_container(self.engine.command, self.container)
        supervisor.unregister("container", [*self.engine.command, self.container])
        if self._runtime is not None:
            self._runtime.close()
            remove_tree(str(self._runtime.root))
            supervisor.unregister("dir", str(self._runtime.root))
        if not self.config.keep:
            remove_tree(str(self._root))
            supervisor.unregister("dir", str(self._root))
        self._root = self._runtime = None


def describe_engine(config: SandboxConfig) -> str:
    """The engine and settings the docker sandbox uses here, and its image; or why it cannot run."""
    try:
        engine, image = DockerSandbox.engine_for(config)
    except SandboxError as e:
        return f"nothing: {e}"
    info = image_info(engine, image)
    return f"{engine.describe()}; {info.summary if info else f'the image {image}'}"
