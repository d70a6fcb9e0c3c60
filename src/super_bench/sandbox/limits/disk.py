"""Disk limits of a task directory: a file system of its own, or a watch on what it holds.

Defends the host's disk against one task. ``mkfs.ext4``, ``mount`` and ``umount`` run as the harness (root)
and are the system's, by their absolute paths, with a fixed environment (``lifetime.programs``).

- ``filesystem``: the task directory is the mount point of an ext4 file system made in a sparse file of
  the limit's size, on a loop device (as root, with ``mkfs.ext4`` and ``mount``). Writing past it fails
  with "No space left on device", as on a full disk, whatever writes (many small files, a sparse file
  filled in, a file deleted while still open): the agent sees the error and may free space, and nothing
  of the host fills up. The image's allocated blocks are all the task takes of the host's disk.
- ``watch``: a thread of the harness per task adds up what its directory holds, every few seconds (each
  file's allocated blocks, at least one block per file or directory, hard links once, links into the
  package cache not at all), and what the files its processes keep open after deleting them take. Past
  the limit, everything the task runs is killed and its episode ends with stop reason ``max_disk``. A task
  may overshoot by what it writes between two looks; a task slow to walk delays only its own looks.
"""

from __future__ import annotations

import functools
import logging
import os
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from super_bench.errors import SandboxError
from super_bench.sandbox.lifetime import supervisor
from super_bench.sandbox.lifetime.programs import SYSTEM_PATH, find_program, program
from super_bench.sandbox.lifetime.reaper import unmount

log = logging.getLogger(__name__)

Mechanism = Literal["filesystem", "watch"]
_DESCRIPTION = {
    "filesystem": "a file system of each task's own (ext4 in a sparse file, on a loop device): writes past it fail",
    "watch": "a watch on what each task directory holds (every few seconds): past it the task is stopped",
}
_BLOCK = 4096  # what a file or directory costs at least


def describe(mechanism: Mechanism) -> str:
    return _DESCRIPTION[mechanism]


def _mkfs() -> str | None:
    return find_program("mkfs.ext4") or find_program("mke2fs")


@functools.cache
def filesystem_problem() -> str | None:
    """Why tasks cannot get file systems of their own here, or None when they can (probed once)."""
    if os.geteuid() != 0:
        return "mounting a file system per task needs root"
    if _mkfs() is None or find_program("mount") is None or find_program("umount") is None:
        return "mounting a file system per task needs mkfs.ext4 and mount (apt-get install e2fsprogs mount)"
    with tempfile.TemporaryDirectory(prefix="super-bench-disk-probe-") as probe:
        try:
            TaskFilesystem(Path(probe) / "fs", 16 << 20).unmount()
        except SandboxError as e:
            return str(e)
    return None


def disk_mechanism(requested: str = "auto") -> Mechanism:
    """How a disk limit is enforced here: ``auto`` is a file system of the task's own where one can be made."""
    if requested == "watch":
        return "watch"
    problem = filesystem_problem()
    if requested == "auto":
        return "watch" if problem else "filesystem"
    if requested == "filesystem":
        if problem:
            raise SandboxError(
                f"cannot give tasks file systems of their own here: {problem}; use --disk-enforcement watch"
            )
        return "filesystem"
    raise SandboxError(f"unknown disk enforcement {requested!r}: choose auto, filesystem or watch")


def _run(command: list[str], what: str) -> None:
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120, env={"PATH": SYSTEM_PATH})
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        raise SandboxError(f"cannot {what}: {detail[-1] if detail else f'exit status {proc.returncode}'}")


class TaskFilesystem:
    """An ext4 file system of ``size`` bytes mounted at ``root`` (made empty), kept in ``root``.img beside it."""

    def __init__(self, root: Path, size: int) -> None:
        self.root = root
        self.image = root.with_name(root.name + ".img")
        self.size = size
        root.mkdir(exist_ok=True)
        # Registered first: a harness killed while mounting leaves nothing mounted.
        supervisor.register("mount", [str(root), str(self.image)])
        try:
            with open(self.image, "wb") as f:
                f.truncate(size)  # sparse: it takes of the host only what the task writes
            mkfs = [_mkfs() or program("mkfs.ext4"), "-q", "-F", "-t", "ext4", "-m", "0", "-O", "^has_journal"]
            _run([*mkfs, "-E", "lazy_itable_init=1", str(self.image)], f"make a file system in {self.image}")
            _run([program("mount"), "-o", "loop,nosuid,nodev", str(self.image), str(root)], f"mount {self.image}")
            (root / "lost+found").rmdir()
        except BaseException:
            self.unmount()
            raise

    def used(self) -> int:
        """Bytes of the host's disk the task takes: the image's allocated blocks."""
        try:
            return os.stat(self.image).st_blocks * 512
        except OSError:
            return 0

    def full(self) -> bool:
        """Whether (nearly) nothing is left: under a hundredth of the space (at most 1 MiB), or of the inodes."""
        try:
            stats = os.statvfs(self.root)
        except OSError:
            return False
        return stats.f_bavail * stats.f_frsize < min(self.size // 100, 1 << 20) or stats.f_favail < stats.f_files // 100

    def unmount(self) -> None:
        """Unmount and remove the image; never raises."""
        unmount(str(self.root), str(self.image))
        supervisor.unregister("mount", [str(self.root), str(self.image)])


def disk_usage(root: Path, agent_uid: int | None = None) -> int:
    """Bytes a directory tree takes: each file's allocated blocks, at least one block per entry, every inode
    once. Links into the package cache (files of another user than agent code's, linked more than once) are
    not counted: they are the cache's. Directories agent code made unreadable are opened again."""
    seen: set[tuple[int, int]] = set()
    total = 0
    stack = [str(root)]
    while stack:
        directory = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except PermissionError:
            try:
                os.chmod(directory, 0o700)  # ours when agent code runs as our user; as root it is readable anyway
                entries = list(os.scandir(directory))
            except OSError:
                continue
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            key = (info.st_dev, info.st_ino)
            if key in seen:
                continue
            seen.add(key)
            cached = agent_uid is not None and info.st_nlink > 1 and info.st_uid != agent_uid
            if not cached:
                total += max(info.st_blocks * 512, _BLOCK)
            if stat.S_ISDIR(info.st_mode):
                stack.append(entry.path)
    return total


def deleted_open_bytes(pids: list[int]) -> int:
    """What the files the processes ``pids`` hold open after they were deleted take on disk, each file once: no
    directory lists them any more, yet they take their space until the last descriptor closes. Files in memory
    (``memfd``, shared memory) are the memory limit's."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for pid in pids:
        try:
            descriptors = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in descriptors:
            path = f"/proc/{pid}/fd/{fd}"
            try:
                target = os.readlink(path)
                if not target.endswith(" (deleted)") or target.startswith(("/memfd:", "/dev/shm/")):
                    continue
                info = os.stat(path)
            except OSError:
                continue
            key = (info.st_dev, info.st_ino)
            if stat.S_ISREG(info.st_mode) and info.st_nlink == 0 and key not in seen:
                seen.add(key)
                total += info.st_blocks * 512
    return total


class _Watched:
    """One watched task: its directories, its limit, and its own thread of the watch."""

    def __init__(
        self,
        root: Path,
        limit: int,
        agent_uid: int | None,
        exceeded: Callable[[int], None],
        also: tuple[Path, ...],
        held: Callable[[], int] | None,
    ) -> None:
        self.root, self.limit, self.agent_uid, self.exceeded, self.also = root, limit, agent_uid, exceeded, also
        self.held = held
        self.used = 0
        self.stopped = False
        self.unwatched = threading.Event()

    def measure(self) -> int:
        used = sum(_usage(root, self.agent_uid) for root in (self.root, *self.also))
        if self.held is not None:
            try:
                used += self.held()
            except Exception:  # the task's processes may be going meanwhile
                log.debug("cannot count the deleted files %s holds open", self.root, exc_info=True)
        return used


def _usage(path: Path, agent_uid: int | None) -> int:
    """``disk_usage`` of a directory, or a single file's blocks (a file the engine binds into a container)."""
    try:
        info = os.lstat(path)
    except OSError:
        return 0
    return disk_usage(path, agent_uid) if stat.S_ISDIR(info.st_mode) else max(info.st_blocks * 512, _BLOCK)


class DiskWatch:
    """Watches task directories: one thread per watched task ("super-bench-disk-watch", ended when the task is
    unwatched), which measures it and calls back (once) when it holds more than its limit. A task is looked at
    every ``interval`` seconds, or, when a look takes longer than a tenth of that, after ten times as long as
    the look took: watching a task costs at most a tenth of a core, and a task whose tree is slow to walk
    (hundreds of thousands of hard links) delays only its own look, never another task's."""

    def __init__(self, interval: float = 2.0) -> None:
        self.interval = interval
        self._lock = threading.Lock()
        self._watched: list[_Watched] = []

    def watch(
        self,
        root: Path,
        limit: int,
        agent_uid: int | None,
        exceeded: Callable[[int], None],
        also: tuple[Path, ...] = (),
        held: Callable[[], int] | None = None,
    ) -> Callable[[], int]:
        """Watch ``root`` (and the directories or files ``also``, counted with it: a container's own layer and the
        files its engine binds into it; and ``held``: the bytes of deleted files its processes keep open);
        returns what they held at the last look. ``exceeded`` gets the bytes found."""
        watched = _Watched(root, limit, agent_uid, exceeded, also, held)
        with self._lock:
            self._watched.append(watched)
        threading.Thread(target=self._run, args=(watched,), name="super-bench-disk-watch", daemon=True).start()
        return lambda: watched.used

    def unwatch(self, root: Path) -> None:
        with self._lock:
            gone = [w for w in self._watched if w.root == root]
            self._watched = [w for w in self._watched if w.root != root]
        for watched in gone:
            watched.unwatched.set()

    def _run(self, w: _Watched) -> None:
        while not w.unwatched.is_set():
            start = time.monotonic()
            w.used = w.measure()
            if w.used > w.limit and not w.stopped and not w.unwatched.is_set():
                w.stopped = True
                try:
                    w.exceeded(w.used)
                except Exception:  # the sandbox may be stopping meanwhile
                    log.warning("stopping the task in %s after its disk limit failed", w.root, exc_info=True)
            w.unwatched.wait(max(self.interval, 10 * (time.monotonic() - start)))


WATCH = DiskWatch()
