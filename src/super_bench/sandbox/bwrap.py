"""The ``bwrap`` sandbox: each kernel in a bubblewrap container, on the host's own system.

What agent code sees inside:
- the host's system, read-only: every top-level directory except those hidden below;
- empty ``/home``, ``/mnt``, ``/media``, ``/run`` and ``/var/tmp``, and nothing of the user's home,
  the system temporary directory, the harness's working directory, the other tasks' directories
  or the bundled demo tasks (what a task's Python needs of these is put back, read-only);
- its own task directory, read-write, laid out as on Colab: the work directory at ``/content``,
  HOME at ``/root``, ``/tmp``, and its Python environment at ``/venv``;
- its own PID, IPC, UTS and cgroup namespaces, a user namespace or an unprivileged user id of its
  own, and with the network off its own network namespace (loopback only: the host's loopback
  services are out of reach).

A kernel is the only child of PID 1 in its PID namespace: when it dies or is killed, everything it
started dies with it, daemons included. Limits come from ``prlimit`` inside (per process: memory,
file size; processes, counted for the sandbox's own user) and ``timeout`` outside (wall time).
"""

from __future__ import annotations

import functools
import os
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import ClassVar

from super_bench import demo
from super_bench.errors import SandboxError
from super_bench.sandbox.base import KernelProcess, SandboxConfig, file_io, rlimit_prefix
from super_bench.sandbox.local import LocalSandbox
from super_bench.sandbox.mirrors import check_readable_by_all, mirror_paths

# Top-level directories agent code never sees: users' files, daemons' sockets, mounted disks.
_HIDDEN_TOP = ("home", "root", "run", "mnt", "media")
# Made afresh inside rather than bound from the host.
_OWN_TOP = ("proc", "dev", "tmp", "lost+found")
# Where the task directory's parts appear inside.
_LAYOUT = {"content": "/content", "home": "/root", "tmp": "/tmp", "python": "/venv"}
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


class BwrapSandbox(LocalSandbox):
    name = "bwrap"
    wrapped_kernel: ClassVar[bool] = True

    @classmethod
    def check(cls, config: SandboxConfig) -> None:
        problem = bwrap_problem()
        if problem is not None:
            raise SandboxError(problem)

    def inside(self, host: Path) -> str:
        return _LAYOUT[host.name] if host.parent == self.root and host.name in _LAYOUT else str(host)

    def start(self) -> None:
        if self._root is not None:
            return
        super().start()
        self._uid = _UID_BASE + secrets.randbelow(_UID_SPAN)
        if os.geteuid() == 0:
            for path in (self.root, self.runtime_dir):
                _chown_tree(path, self._uid)
        self._bwrap_args = self._container_args()

    # -- the container -------------------------------------------------------------------------
    def _container_args(self) -> list[str]:
        """bwrap's command line: mounts in order (a later mount covers what it lands on), then settings."""
        config = self.config
        args = [shutil.which("bwrap") or "bwrap", *_namespaces(config.network), "--die-with-parent", "--new-session"]
        for entry in sorted(os.scandir("/"), key=lambda e: e.name):
            if entry.name in _HIDDEN_TOP or entry.name in _OWN_TOP:
                continue
            kind, source = ("--symlink", os.readlink(entry.path)) if entry.is_symlink() else ("--ro-bind", entry.path)
            args += [kind, source, entry.path]
        args += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777"]
        if config.memory_limit is not None and _can_size_tmpfs():
            args += ["--size", str(config.memory_limit)]
        args += ["--tmpfs", "/dev/shm"]
        # One mount per path, made parents first: a mount covers what lies under it, and what is
        # mounted under it afterwards shows through.
        mounts: dict[str, tuple[str, ...]] = {
            inside: ("--bind", str(self.root / part)) for part, inside in _LAYOUT.items()
        }
        mounts[str(self.runtime_dir)] = ("--bind", str(self.runtime_dir))
        for path in self._read_only_paths():
            mounts.setdefault(path, ("--ro-bind", path))
        for path in sorted(self._hidden_paths()):
            # Hidden where the host's files would show, not under what is hidden already or the task's own.
            if path not in mounts and _op(_nearest(path, mounts), mounts) in ("", "--ro-bind"):
                mounts[path] = ("--tmpfs",)
        made: set[str] = set()
        for path, op in sorted(mounts.items()):
            args += [*_parent_dirs(path, mounts, made), *op, path]
        return [*args, "--remount-ro", "/", "--chdir", self.workdir]

    def _hidden_paths(self) -> set[str]:
        """Host paths agent code must not see: homes, temporary directories, other tasks, the harness's
        working directory (runs, task files), and the bundled demo tasks (they hold their answers)."""
        top = [f"/{name}" for name in _HIDDEN_TOP]
        candidates = [*top, "/var/tmp", Path.home(), tempfile.gettempdir(), self.config.root, Path.cwd(), demo.TASKS]
        return {os.path.realpath(p) for p in candidates if p and os.path.isdir(p)} - {"/"}

    def _read_only_paths(self) -> list[str]:
        """Host paths put back, read-only, over the hidden ones: the Pythons, the mirrors, DNS."""
        assert self._base is not None
        if os.geteuid() == 0:
            check_readable_by_all(self.config)
        paths = [*self._base.paths, *mirror_paths(self.config)]
        if self.config.network:
            paths.append(os.path.realpath("/etc/resolv.conf"))
        return [p for p in {os.path.realpath(p) for p in paths} if os.path.exists(p)]

    def _wrap(self, argv: list[str]) -> list[str]:
        left = self._time_left()
        deadline = [] if left is None else ["timeout", "--signal=KILL", f"{left:.2f}"]
        limits = rlimit_prefix(self.config, processes=True)
        return [*deadline, *self._bwrap_args, "--", *_drop_root(self._uid), *limits, *argv]

    def _spawn_options(self) -> dict[str, str]:
        return {"cwd": "/"}

    def launch_kernel(self, connection_file: Path, extra_args: list[str]) -> KernelProcess:
        if os.geteuid() == 0:
            os.chown(connection_file, self._uid, self._uid)
        return super().launch_kernel(connection_file, extra_args)

    def stop(self) -> None:
        if self._root is not None and self.config.keep and os.geteuid() == 0:
            _chown_tree(self._root, 0)  # a kept directory goes back to its owner
        super().stop()

    # -- files, read and written as agent code would: its view, its permissions -----------------
    def read_file(self, path: str) -> bytes:
        return file_io(self._inside(["cat", "--", path]), path)

    def write_file(self, path: str, data: bytes) -> None:
        script = 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"'
        file_io(self._inside(["sh", "-c", script, "sh", path], data), path)

    def _inside(self, command: list[str], data: bytes = b"") -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(self._wrap(command), input=data, capture_output=True, env=self._env, timeout=120, cwd="/")


def _nearest(path: str, mounts: dict[str, tuple[str, ...]]) -> str:
    """The closest proper ancestor of ``path`` that has a mount of its own ("" for none)."""
    parent = os.path.dirname(path)
    while parent not in mounts and parent != "/":
        parent = os.path.dirname(parent)
    return "" if parent == "/" else parent


def _op(path: str, mounts: dict[str, tuple[str, ...]]) -> str:
    return mounts[path][0] if path else ""


def _parent_dirs(path: str, mounts: dict[str, tuple[str, ...]], made: set[str]) -> list[str]:
    """``--dir`` options for the parents of ``path`` that do not exist in the mount they fall in (a
    tmpfs, a task directory): bwrap would make them readable by root alone."""
    anchor = _nearest(path, mounts)
    if _op(anchor, mounts) not in ("--tmpfs", "--bind"):
        return []  # a host directory, or a host directory bound where it is: the parents exist
    args: list[str] = []
    parent, chain = os.path.dirname(path), []
    while parent != anchor:
        chain.append(parent)
        parent = os.path.dirname(parent)
    for directory in reversed(chain):
        if directory not in made:
            made.add(directory)
            args += ["--perms", "0755", "--dir", directory]
    return args


def _chown_tree(root: Path, uid: int) -> None:
    """Give a directory tree to ``uid`` (symlinks themselves, never their targets)."""
    os.chown(root, uid, uid)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            os.chown(os.path.join(dirpath, name), uid, uid, follow_symlinks=False)
