"""The ``bwrap`` sandbox: each kernel in a bubblewrap container, on the host's own system.

What agent code sees inside is an allowlist, read-only, over an empty root:
- the system: ``/usr``, ``/bin``, ``/sbin``, ``/lib*``, ``/etc`` and ``/sys``;
- the task's interpreter (its prefix and standard library, without its own site-packages unless
  the task's base is made of them), the base's package directories, the kernel's own packages,
  the git bundles and mirrors tasks clone from;
- its own task directory, read-write, laid out as on Colab: the work directory at ``/content``,
  HOME at ``/root``, ``/tmp``, and its Python environment at ``/venv``; the kernel's sockets
  directory at ``/run/super-bench``;
- its own PID, IPC, UTS and cgroup namespaces, a user namespace or an unprivileged user id of its
  own, and with the network off its own network namespace (loopback only: the host's loopback
  services are out of reach).
Nothing else of the host: no home or work directories, no project checkouts, no caches, no
installed task files, none of the harness's packages (where an allowed directory holds any of
these, they are covered by an empty directory).

A kernel is the only child of PID 1 in its PID namespace: when it dies or is killed, everything it
started dies with it, daemons included; bubblewrap dies with the harness.

What it defends, besides the host's files and network above:
- the host's privileges. Run as root, bubblewrap sets up the mounts as root, and the first and only
  thing it starts inside is ``setpriv``, by its absolute path in the host's read-only ``/usr``, with an
  environment that cannot make it load code (``lifetime.programs``): it drops to the task's own user id (no
  capabilities, an empty bounding set, no new privileges) before anything that agent code can write or
  name runs. Every helper after it (``prlimit``, then ``env``, which gives agent code its own PATH and
  variables back) is found the same way. PID 1 of the sandbox is bubblewrap's reaper: root, with no
  capabilities, and out of agent code's reach (another user).
- the limits. Memory: a cgroup of the task's own where one can be made (else ``RLIMIT_AS``); file size
  and processes: ``prlimit`` (counted for the sandbox's own user); wall time: a timer of the harness,
  which kills the sandbox (bubblewrap, outside the task's PID namespace) at the limit: no process that
  agent code can see, stop or kill keeps the time. The kernels' own output goes to a bounded tail in the
  harness's memory (``kernel.runtime_dir``).
- other tasks: their directories are never shown, and ``/sys/fs/cgroup`` is an empty directory (the
  host's shows every task's cgroup, its name and memory).
"""

from __future__ import annotations

import functools
import glob
import os
import secrets
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from super_bench.errors import SandboxError
from super_bench.sandbox.backends.host import HostSandbox
from super_bench.sandbox.backends.support import file_io
from super_bench.sandbox.base import MAX_EDIT_BYTES, FileTooLargeError
from super_bench.sandbox.config import SandboxConfig
from super_bench.sandbox.lifetime.programs import SYSTEM_PATH, agent_env_prefix, find_program, program
from super_bench.sandbox.lifetime.reaper import MARKER
from super_bench.sandbox.mirrors.serving import check_readable_by_all, git_config_dir, mirror_paths
from super_bench.sandbox.packages.task_access import FORWARDER, PACKAGES_INSIDE, PACKAGES_PORT

# The host's system, shown read-only (a top-level symlink, as on merged-/usr systems, stays a symlink).
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys")
# Where the task directory's parts appear inside.
_LAYOUT = {"content": "/content", "home": "/root", "tmp": "/tmp", "python": "/venv"}
# Where the kernels' sockets directory appears inside.
SOCKETS_INSIDE = "/run/super-bench"
# Where the directories the harness shares read-only appear inside: the kernel's packages, the base's.
SHARED_INSIDE = "/opt/super-bench"
# Run as root, agent code gets a user id of its own from this range: root is exempt from the
# process limit (and should not be the agent's user), and a shared id would share the limit.
_UID_BASE, _UID_SPAN = 2_100_000_000, 40_000_000

INSTALL_HINT = (
    "install bubblewrap (apt-get install bubblewrap, dnf install bubblewrap or pacman -S bubblewrap), "
    "or choose another sandbox with --sandbox local or --sandbox docker"
)


def _namespaces(network: bool) -> list[str]:
    if os.geteuid() == 0:
        # bwrap run by root sets up the mounts as root, then agent code drops to its own user id.
        args = ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
        args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        return args if network else [*args, "--unshare-net"]
    return ["--unshare-all", "--share-net"] if network else ["--unshare-all"]


def _drop_root(uid: int) -> list[str]:
    """The command prefix that makes agent code run as ``uid`` (when the harness is root): its own user and
    group, no supplementary groups, and no capabilities at all, not even in the bounding set."""
    if os.geteuid() != 0:
        return []
    drop = ["--clear-groups", "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all"]
    return [program("setpriv"), f"--reuid={uid}", f"--regid={uid}", *drop, "--"]


def privilege_summary() -> str:
    """Whom agent code runs as in the bwrap sandbox, for ``sandbox check``."""
    if os.geteuid() != 0:
        return (
            f"agent code runs as this user (uid {os.geteuid()}) in a user namespace of its own, with no "
            "capabilities on the host"
        )
    return (
        f"run as root: bwrap sets up the mounts as root, then setpriv drops agent code to a user id of each task's "
        f"own ({_UID_BASE}-{_UID_BASE + _UID_SPAN - 1}), no groups, no capabilities (bounding set empty), "
        "no new privileges, before anything agent code can write or name runs"
    )


@functools.cache
def bwrap_problem() -> str | None:
    """Why bubblewrap cannot isolate tasks here, or None when it can (probed once per process)."""
    exe = find_program("bwrap")
    if exe is None:
        return f"bubblewrap (bwrap) is not installed in a system directory ({SYSTEM_PATH}): {INSTALL_HINT}"
    for name in ("setpriv", "prlimit", "env", "sh", "cat") if os.geteuid() == 0 else ("prlimit", "env", "sh", "cat"):
        if find_program(name) is None:
            return (
                f"the bwrap sandbox needs {name} in a system directory ({SYSTEM_PATH}) owned by root: install "
                "util-linux and coreutils (apt-get install util-linux coreutils)"
            )
    probe = [exe, *_namespaces(False), "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev"]
    try:
        proc = subprocess.run(
            [*probe, "--", *_drop_root(_UID_BASE), program("true")],
            capture_output=True,
            text=True,
            timeout=30,
            cwd="/",
            env={"PATH": SYSTEM_PATH},
        )
    except (OSError, subprocess.SubprocessError) as e:
        return f"bwrap cannot run here ({e}): {INSTALL_HINT}"
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        detail = lines[-1] if lines else f"exit status {proc.returncode}"
        return (
            f"bwrap cannot create its namespaces here ({detail}); allow unprivileged user namespaces "
            "(sysctl kernel.unprivileged_userns_clone=1; on Ubuntu 24.04 also "
            "kernel.apparmor_restrict_unprivileged_userns=0), or choose another sandbox with --sandbox docker"
        )
    return None


@functools.cache
def _can_size_tmpfs() -> bool:
    """Whether this bwrap can cap a tmpfs (``--size``, bubblewrap 0.8)."""
    help_text = subprocess.run([program("bwrap"), "--help"], capture_output=True, text=True, timeout=30, env={})
    return "--size" in help_text.stdout


class BwrapSandbox(HostSandbox):
    name = "bwrap"
    isolates: ClassVar[bool] = True
    wrapped_kernel: ClassVar[bool] = True
    sockets_inside: ClassVar[str | None] = SOCKETS_INSIDE
    cache_without_network: ClassVar[bool] = True

    def __init__(self, config: SandboxConfig, label: str = "task") -> None:
        super().__init__(config, label)
        self._uid = _UID_BASE + secrets.randbelow(_UID_SPAN)
        self._bwrap_args: list[str] = []
        self._shared_paths: dict[str, str] | None = None

    @classmethod
    def check(cls, config: SandboxConfig) -> None:
        problem = bwrap_problem()
        if problem is not None:
            raise SandboxError(problem)
        super().check(config)  # the limits: one a kernel cannot start under, a mechanism that cannot be had
        if cls.agent_is_another_user():  # who must be able to read the mirrors (each one's files: mirrors.preflight)
            check_readable_by_all(config)

    @classmethod
    def check_lines(cls, config: SandboxConfig) -> list[str]:
        return [f"bwrap privileges: {privilege_summary()}", *super().check_lines(config)]

    @classmethod
    def agent_is_another_user(cls) -> bool:
        return os.geteuid() == 0  # run as root, bwrap drops agent code to a user id of its own (_drop_root)

    def inside(self, host: Path) -> str:
        return _LAYOUT[host.name] if host.parent == self.root and host.name in _LAYOUT else str(host)

    def shown_at(self, host: str) -> str:
        for directory, inside in self._shared().items():
            if host == directory or host.startswith(directory.rstrip("/") + "/"):
                return inside + host[len(directory) :]
        return host

    def _shared(self) -> dict[str, str]:
        """The paths the harness shares read-only, by host path, and where agent code sees them: neutral
        places, so that nothing of the host's layout (a checkout, a home) shows."""
        if self._shared_paths is None:
            self._shared_paths = self._find_shared()
        return self._shared_paths

    def _find_shared(self) -> dict[str, str]:
        shared = {str(self.base.kernel_dir): f"{SHARED_INSIDE}/kernel", str(git_config_dir()): f"{SHARED_INSIDE}/git"}
        for i, site_dir in enumerate(self.base.site_dirs):
            shared.setdefault(site_dir, f"{SHARED_INSIDE}/packages/{i}")
        for i, path in enumerate(mirror_paths(self.config)):
            shared.setdefault(path, f"{SHARED_INSIDE}/mirrors/{i}")
        return shared

    def _agent_uid(self) -> int | None:
        return self._uid if os.geteuid() == 0 else None

    def _prepare(self) -> None:
        super()._prepare()
        if os.geteuid() == 0:
            _chown_tree(self.root, self._uid)
        self._bwrap_args = self._container_args()

    # -- the container -------------------------------------------------------------------------
    def _container_args(self) -> list[str]:
        """bwrap's command line: mounts in order (a later mount covers what it lands on), then settings."""
        config = self.config
        args = [program("bwrap"), *_namespaces(config.network), "--die-with-parent", "--new-session"]
        args += ["--proc", "/proc", "--dev", "/dev", *_gpu_devices(), "--perms", "1777"]
        if config.memory_limit is not None and _can_size_tmpfs():
            # Half the limit: what /dev/shm holds counts against the task's memory too.
            args += ["--size", str(config.memory_limit // 2)]
        args += ["--tmpfs", "/dev/shm"]
        # One mount per path, made parents first: a mount covers what lies under it, and what is
        # mounted under it afterwards shows through.
        mounts: dict[str, tuple[str, ...]] = {}
        for path in _SYSTEM:
            if os.path.islink(path):  # merged /usr: /bin -> usr/bin stays a link
                mounts[path] = ("--symlink", os.readlink(path))
            elif os.path.isdir(path):
                mounts[path] = ("--ro-bind", path)
        mounts.update({inside: ("--bind", str(self.root / part)) for part, inside in _LAYOUT.items()})
        mounts[SOCKETS_INSIDE] = ("--bind", str(self.sockets_dir))
        if self._forwarded() is not None:
            # The package cache's socket, by its directory (the harness's; agent code connects to it, nothing more).
            mounts[PACKAGES_INSIDE] = ("--ro-bind", str(self._cache_socket().parent))
        for host, inside in self._shared().items():
            mounts[inside] = ("--ro-bind", host)
        for path in self._read_only_paths():
            mounts.setdefault(path, ("--ro-bind", path))
        if os.path.isdir("/sys/fs/cgroup"):
            mounts["/sys/fs/cgroup"] = ("--tmpfs",)  # the host's names every task's cgroup, with its memory
        if not config.host_pip_config:
            for path in _host_pip_config():  # the system's pip.conf files read as empty, their folders as empty
                mounts.setdefault(path, ("--tmpfs",) if os.path.isdir(path) else ("--ro-bind", _empty_file()))
        for path in sorted(self._hidden_paths()):
            # Covered where an allowed directory would show it, not under the task's own.
            if path not in mounts and _op(_nearest(path, mounts), mounts) == "--ro-bind":
                mounts[path] = ("--tmpfs",)
        made: set[str] = set()
        for path, op in sorted(mounts.items()):
            args += [*self._parent_dirs(path, mounts, made), *op, path]
        return [*args, "--remount-ro", "/", "--chdir", self.workdir]

    def _parent_dirs(self, path: str, mounts: dict[str, tuple[str, ...]], made: set[str]) -> list[str]:
        """Make the parents of a mount point that do not exist in the mount they fall in: on the empty
        root or a tmpfs with ``--dir`` (bwrap would make them readable by root alone); in a task directory
        on the host, as agent code's own, so that it can still write beside them."""
        anchor = _nearest(path, mounts)
        op = _op(anchor, mounts)
        if anchor and op not in ("--tmpfs", "--bind"):
            return []  # a host directory, or a host directory bound where it is: the parents exist
        chain, parent = [], os.path.dirname(path)
        while parent not in (anchor, "/"):
            chain.append(parent)
            parent = os.path.dirname(parent)
        args: list[str] = []
        for directory in reversed(chain):
            if directory in made:
                continue
            made.add(directory)
            if op == "--bind":
                host = Path(mounts[anchor][1] + directory[len(anchor) :])
                host.mkdir(exist_ok=True)
                if os.geteuid() == 0:
                    os.chown(host, self._uid, self._uid)
            else:
                args += ["--perms", "0755", "--dir", directory]
        return args

    def _hidden_paths(self) -> set[str]:
        """Host paths agent code must not see even where an allowed directory holds them: homes,
        temporary and working directories, the harness's own installation (with the bundled tasks and
        their answers), and the site-packages of the interpreter that the base does not use."""
        harness = Path(__file__).resolve().parents[2]
        candidates = [
            Path.home(),
            tempfile.gettempdir(),
            self.config.root,
            Path.cwd(),
            harness,
            sys.prefix if sys.prefix != sys.base_prefix else None,
            *self.base.hidden,
        ]
        return {os.path.realpath(p) for p in candidates if p and os.path.isdir(p)} - {"/"}

    def _read_only_paths(self) -> list[str]:
        """Host paths shown read-only where they are: the interpreter, DNS."""
        paths = list(self.base.paths)
        if self.config.network:
            paths.append(os.path.realpath("/etc/resolv.conf"))
        return [p for p in {os.path.realpath(p) for p in paths} if os.path.exists(p)]

    def _wrap(self, argv: list[str], *, as_agent: bool = True) -> list[str]:
        """The host command line: bwrap, then inside it the drop to the task's user, the limits and (for agent
        code, ``as_agent``) ``env`` giving it its own PATH and variables back. Started with ``helper_environ``."""
        self._check_disk()
        self._time_left()  # nothing starts once the wall-time limit has passed
        restore = agent_env_prefix(self._env) if as_agent else []
        forward = self._forwarded() if as_agent else None
        inside = [*_drop_root(self._uid), *self._limits(processes=True), *restore, *(forward or []), *argv]
        return self._in_cgroup([*self._bwrap_args, "--", *inside])

    def _cache_socket(self) -> Path:
        assert self._packages is not None
        return self._packages.unix_socket()

    def _forwarded(self) -> list[str] | None:
        """With the network off and the package cache in use, the prefix that starts the cache's forwarder
        (``in_task/socket_forward.py``, by the base's read-only interpreter) in the sandbox beside the command,
        as agent code: each bwrap has a network namespace of its own, so each gets its own, and it dies with
        the command, the only child of the sandbox's PID 1. None where tasks reach the cache as it is."""
        if self._packages is None or self.config.network:
            return None
        socket = f"{PACKAGES_INSIDE}/{self._cache_socket().name}"
        start = 'p="$1" c="$2" s="$3" n="$4"; shift 4; "$p" -S -c "$c" "$s" "$n" & exec "$@"'
        return [program("sh"), "-c", start, "sh", self.base.interpreter, FORWARDER, socket, str(PACKAGES_PORT)]

    def _spawn_options(self) -> dict[str, str]:
        return {"cwd": "/"}

    def stop(self) -> None:
        if self._root is not None and self.config.keep and os.geteuid() == 0:
            _chown_tree(self._root, 0)  # a kept directory goes back to its owner
        super().stop()

    # -- files, read and written as agent code would: its view, its permissions -----------------
    def read_file(self, path: str) -> bytes:
        return file_io(self._inside([program("cat"), "--", path]), path)

    def write_file(self, path: str, data: bytes) -> None:
        file_io(self._inside([program("sh"), "-c", _WRITE, "sh", path], data), path)

    def edit_file(self, path: str, change: Callable[[bytes], bytes], limit: int = MAX_EDIT_BYTES) -> None:
        # One process, not one to read and one to write: the file's length and a copy of it as it was read,
        # then a word from the harness (write, or not) and the new text. At most one byte past the limit is
        # copied (in the task's own temporary directory, on its disk) and none past the length is sent: a
        # gigabyte file costs the harness nothing but the refusal.
        script = (
            '[ ! -e "$1" ] || [ -f "$1" ] || { echo "$1 is not a regular file" >&2; exit 1; }; '
            't=$(mktemp) && head -c "$2" -- "$1" > "$t" && wc -c < "$t" && head -c "$2" -- "$t" && rm -f -- "$t" '
            f'|| exit 1; read -r go && [ "$go" = write ] || exit 0; {_WRITE}'
        )
        proc = subprocess.Popen(
            self._harness_argv([program("sh"), "-c", script, "sh", path, str(limit + 1)]),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=self._harness_env(),
            cwd="/",
        )
        assert proc.stdout is not None
        # Agent code decides what the path is (a FIFO never ends): the process has the time a read and a write had.
        deadline = threading.Timer(FILE_TIMEOUT, proc.kill)
        deadline.start()
        verdict, data = b"skip\n", b""
        try:
            size = proc.stdout.readline(32)
            if size.strip().isdigit():
                if int(size) > limit:
                    too_large = FileTooLargeError(path, int(size), limit)
                    proc.kill()
                    raise too_large
                edited = change(proc.stdout.read(int(size)))
                verdict, data = b"write\n", edited
        finally:
            out, err = proc.communicate(verdict + data)
            deadline.cancel()
        file_io(subprocess.CompletedProcess(proc.args, proc.returncode, out, err), path)

    def _harness_argv(self, command: list[str]) -> list[str]:
        """A command of the harness's (a file read or written for an edit) as agent code's user, in its view."""
        return self._wrap(command, as_agent=False)

    def _harness_env(self) -> dict[str, str]:
        """The fixed environment of the harness's own commands inside: only the system's programs on its PATH
        (the script's ``cat``, ``wc``, ``mktemp`` among them), nothing of the task's variables."""
        return {"PATH": SYSTEM_PATH, "LC_ALL": "C", MARKER: self.id}

    def _inside(self, command: list[str], data: bytes = b"") -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            self._harness_argv(command),
            input=data,
            capture_output=True,
            env=self._harness_env(),
            timeout=FILE_TIMEOUT,
            cwd="/",
        )


def _host_pip_config() -> list[str]:
    """The host's system-wide pip configuration that the read-only system would show: ``/etc/pip.conf`` and the
    ``pip`` folder of each ``XDG_CONFIG_DIRS`` entry (``/etc/xdg/pip``, with whatever its files name, such as
    constraints). The user's own (``~/.config/pip``, ``~/.pip``) lies in a home, never shown."""
    folders = [d for d in os.environ.get("XDG_CONFIG_DIRS", "/etc/xdg").split(os.pathsep) if d] or ["/etc/xdg"]
    paths = ["/etc/pip.conf", *(os.path.join(d, "pip") for d in folders)]
    shown = [p for p in _SYSTEM if not os.path.islink(p)]
    found = {os.path.realpath(p) for p in paths if os.path.exists(p)}
    return sorted(p for p in found if any(p.startswith(s + "/") for s in shown))


def _empty_file() -> str:
    """An empty file of the harness's, readable by all, to show in place of a host file (a device such as
    /dev/null cannot be: bwrap's binds of it are not readable by agent code's own user)."""
    path = git_config_dir() / "empty"
    if not path.is_file():
        path.touch(0o644)
    return str(path)


# Seconds a file operation inside the sandbox may take.
FILE_TIMEOUT = 120.0
# Writes "$1" as agent code would; a file it may not write in place (a package file linked to the cache) is
# replaced by a copy.
_WRITE = (
    'mkdir -p -- "$(dirname -- "$1")" && { [ ! -e "$1" ] || [ -w "$1" ] || '
    '{ cp -- "$1" "$1.super-bench-edit" && chmod u+w -- "$1.super-bench-edit" && '
    'mv -f -- "$1.super-bench-edit" "$1"; }; } && cat > "$1"'
)


def _gpu_devices() -> list[str]:
    """The host's NVIDIA devices, for tasks that train on a GPU (bwrap's own /dev has none)."""
    return [arg for dev in sorted(glob.glob("/dev/nvidia*")) for arg in ("--dev-bind", dev, dev)]


def _nearest(path: str, mounts: dict[str, tuple[str, ...]]) -> str:
    """The closest proper ancestor of ``path`` that has a mount of its own ("" for none)."""
    parent = os.path.dirname(path)
    while parent not in mounts and parent != "/":
        parent = os.path.dirname(parent)
    return "" if parent == "/" else parent


def _op(path: str, mounts: dict[str, tuple[str, ...]]) -> str:
    return mounts[path][0] if path else ""


def _chown_tree(root: Path, uid: int) -> None:
    """Give a directory tree to ``uid`` (symlinks themselves, never their targets)."""
    os.chown(root, uid, uid)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            os.chown(os.path.join(dirpath, name), uid, uid, follow_symlinks=False)
