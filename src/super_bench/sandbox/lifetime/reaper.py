"""Defends the host against what a task leaves behind. Killing what a task left running, found by what cannot
be shed: a process group, a marker variable in the environment, a cgroup, a container. Standard library
only: the watchdog process uses it too. ``shutil`` and ``subprocess`` are imported where they are used: the
watchdog loads this module at every run and, after a run that ended as it should, has nothing left to remove
(importing them was a good part of its start-up CPU)."""

from __future__ import annotations

import os
import signal
import time

MARKER = "SUPER_BENCH_SANDBOX"
# Where the harness looks for the system programs it starts (never on a PATH that tasks set).
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def system_program(name: str) -> str | None:
    """The absolute path of ``name`` on the system search path, or None."""
    import shutil

    return shutil.which(name, path=SYSTEM_PATH)


def processes_with_marker(marker_value: str) -> list[int]:
    """PIDs of processes whose environment carries ``MARKER=marker_value`` (this one excluded)."""
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


def kill_marked(marker_value: str) -> None:
    """SIGKILL every process with the marker; a few passes catch those forked meanwhile."""
    for _ in range(3):
        pids = processes_with_marker(marker_value)
        if not pids:
            return
        for pid in pids:
            _kill(pid)


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def kill_cgroup(path: str, *, remove: bool = True) -> None:
    """Kill every process of a cgroup and remove it (v2's ``cgroup.kill`` where there is one), or with ``remove``
    false only kill them; never raises."""
    if not os.path.isdir(path):
        return
    kill_file = os.path.join(path, "cgroup.kill")
    if os.path.exists(kill_file):
        try:
            with open(kill_file, "w") as f:
                f.write("1")
        except OSError:
            pass
    # Killed processes leave the cgroup once the kernel has reaped them, usually within a millisecond or
    # two: polled at a growing interval (a fixed 50 ms sleep cost every task that much), for 2.5 s at most.
    deadline = time.monotonic() + 2.5
    pause = 0.0005
    while True:
        try:
            with open(os.path.join(path, "cgroup.procs")) as f:
                pids = [int(line) for line in f if line.strip()]
        except (OSError, ValueError):
            pids = []
        for pid in pids:
            _kill(pid)
        if not remove:
            if not pids:
                return
            time.sleep(0.05)
            continue
        try:
            os.rmdir(path)
            return
        except OSError:
            if time.monotonic() >= deadline:
                return
            time.sleep(pause)
            pause = min(pause * 2, 0.05)


def remove_container(engine: list[str], name: str) -> None:
    """Remove a container; ``engine`` is the engine's command with its global options."""
    import subprocess

    try:
        subprocess.run([*engine, "rm", "-f", name], capture_output=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        pass


def remove_tree(path: str) -> None:
    """Remove a directory tree, even one whose directories agent code made unwritable or unreadable."""
    import shutil

    if not os.path.isdir(path) or os.path.islink(path):
        return
    try:
        os.chmod(path, 0o700)
    except OSError:
        pass
    # Top-down: each directory is fixed before os.walk lists it; links are never followed.
    for dirpath, dirnames, _ in os.walk(path):
        for name in dirnames:
            child = os.path.join(dirpath, name)
            if not os.path.islink(child):
                try:
                    os.chmod(child, 0o700)
                except OSError:
                    pass
    shutil.rmtree(path, ignore_errors=True)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def unmount(mountpoint: str, image: str | None = None) -> None:
    """Unmount a task's file system (lazily where something still holds it) and remove its image; never raises."""
    import subprocess

    umount = system_program("umount")
    if os.path.ismount(mountpoint) and umount is not None:
        for command in ([umount, mountpoint], [umount, "-l", mountpoint]):
            try:
                env = {"PATH": SYSTEM_PATH}
                if subprocess.run(command, capture_output=True, timeout=60, env=env).returncode == 0:
                    break
            except (OSError, subprocess.SubprocessError):
                pass
    if image is not None:
        try:
            os.unlink(image)
        except OSError:
            pass
