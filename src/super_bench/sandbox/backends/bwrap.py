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
started dies with it, daemons included; bubblewrap dies with the harness. Limits: memory through a
cgroup of the task's own where one can be made (else ``RLIMIT_AS``), ``prlimit`` inside for file
size and processes (counted for the sandbox's own user), and ``timeout`` inside for wall time.
"""

from __future__ import annotations

import functools
import glob
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import ClassVar

from super_bench.errors import SandboxError
from super_bench.sandbox.backends.host import HostSandbox
from super_bench.sandbox.base import SandboxConfig, file_io
from super_bench.sandbox.mirrors.serving import check_readable_by_all, git_config_dir, mirror_paths

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
    """The command prefix that makes agent code run as ``uid`` (when the harness is root)."""
    if os.geteuid() != 0:
        return []
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all", "--"]


@functools.cache
def bwrap_problem() -> str | None:
    """Why bubblewrap cannot isolate tasks here, or None when it can (probed once per process)."""
    exe = shutil.which("bwrap")
    if exe is None:
        return f"bubblewrap (bwrap) is not installed: {INSTALL_HINT}"
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        return "run as root, the bwrap sandbox needs setpriv: install util-linux (apt-get install util-linux)"
    probe = [exe, *_namespaces(False), "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev"]
    try:
        proc = subprocess.run(
            [*probe, "--", *_drop_root(_UID_BASE), "true"], capture_output=True, text=True, timeout=30, cwd="/"
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
    exe = shutil.which("bwrap") or "bwrap"
    return "--size" in subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=30).stdout


class BwrapSandbox(HostSandbox):
    name = "bwrap"
    wrapped_kernel: ClassVar[bool] = True
    sockets_inside: ClassVar[str | None] = SOCKETS_INSIDE

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
        if os.geteuid() == 0:  # agent code then runs as a user of its own, who must be able to read the mirrors
            check_readable_by_all(config)

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
        args = [shutil.which("bwrap") or "bwrap", *_namespaces(config.network), "--die-with-parent", "--new-session"]
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
        mounts[SOCKETS_INSIDE] = ("--bind", str(self.runtime_dir / "sockets"))
        for host, inside in self._shared().items():
            mounts[inside] = ("--ro-bind", host)
        for path in self._read_only_paths():
            mounts.setdefault(path, ("--ro-bind", path))
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

    def _wrap(self, argv: list[str]) -> list[str]:
        # The deadline runs inside, so that bubblewrap is the harness's own child and dies with it.
        self._check_disk()
        left = self._time_left()
        deadline = [] if left is None else ["timeout", "--signal=KILL", f"{left:.2f}"]
        limits = self._limits(processes=True)
        inside = [*_drop_root(self._uid), *deadline, *limits, *argv]
        return self._in_cgroup([*self._bwrap_args, "--", *inside])

    def _spawn_options(self) -> dict[str, str]:
        return {"cwd": "/"}

    def stop(self) -> None:
        if self._root is not None and self.config.keep and os.geteuid() == 0:
            _chown_tree(self._root, 0)  # a kept directory goes back to its owner
        super().stop()

    # -- files, read and written as agent code would: its view, its permissions -----------------
    def read_file(self, path: str) -> bytes:
        return file_io(self._inside(["cat", "--", path]), path)

    def write_file(self, path: str, data: bytes) -> None:
        # A file agent code may not write in place (a package file linked to the cache) is replaced by a copy.
        script = (
            'mkdir -p -- "$(dirname -- "$1")" && { [ ! -e "$1" ] || [ -w "$1" ] || '
            '{ cp -- "$1" "$1.super-bench-edit" && chmod u+w -- "$1.super-bench-edit" && '
            'mv -f -- "$1.super-bench-edit" "$1"; }; } && cat > "$1"'
        )
        file_io(self._inside(["sh", "-c", script, "sh", path], data), path)

    def _inside(self, command: list[str], data: bytes = b"") -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(self._wrap(command), input=data, capture_output=True, env=self._env, timeout=120, cwd="/")


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
