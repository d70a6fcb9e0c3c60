"""A run's own scratch directory for its sandboxes, so that a resumed run can clear what a killed one left.

A run's task directories go to ``<root>/super-bench-run-<key>/`` (root: the sandbox root, else the
system's temporary directory) and its kernels' runtime directories to ``sbk-<tag>-*`` beside the
other short paths; each task's memory cgroup is noted there too (``.cgroup-<name>``), and its docker tasks'
containers carry the label ``super-bench.scratch=<tag>``. The watchdog removes them when the harness dies; if
the watchdog died too (a whole process group killed, the OOM killer, a machine's reboot), the next run of the
same run directory does.

A process's own temporary folders (``private_temp``: its git configuration, a Ray worker's scratch) are
named after it, ``super-bench-<kind>-<pid>-*``, so that the folders of a process that is gone, however
it went, are found and removed by the next that makes one, and by the start of every run (``clear_scratch``):
a resume with nothing left to do makes none.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from super_bench.sandbox.lifetime.reaper import kill_cgroup, kill_group, remove_tree, unmount

# The label of a docker task's container: the tag of the scratch directory of the run it belongs to.
CONTAINER_LABEL = "super-bench.scratch"
# Container engines, found on the harness's own PATH (never a task's).
_ENGINES = ("docker", "podman")

# Unix socket paths are limited to about 100 bytes; kernels' runtime directories live under this directory.
_SHORT_TEMP = "/tmp"


def short_temp_base() -> str:
    """The system's temporary directory if its path is short, else /tmp."""
    base = tempfile.gettempdir()
    return base if len(base) <= 40 else _SHORT_TEMP


def scratch_dir(run_dir: Path, root: Path | None) -> Path:
    """The scratch directory of the run in ``run_dir``."""
    key = hashlib.sha256(str(run_dir.resolve()).encode()).hexdigest()[:12]
    return (root or Path(tempfile.gettempdir())) / f"super-bench-run-{key}"


def runtime_tag(root: Path | None) -> str:
    """The tag of the runtime directories of sandboxes whose task directories go under ``root``."""
    return hashlib.sha256(str(root).encode()).hexdigest()[:8] if root is not None else "any"


def clear_scratch(scratch: Path, containers: bool = True) -> list[str]:
    """Kill what still runs from ``scratch`` and remove what is left there; returns what was removed. The
    container engines are asked for the run's containers where ``containers`` (its backend runs them) or where
    an earlier attempt left the scratch directory (of whichever backend: ``--redo`` may change it)."""
    removed: list[str] = []
    containers = containers or scratch.is_dir()
    needle = f"HOME={scratch}/".encode()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as f:
                if any(v.startswith(needle) for v in f.read().split(b"\0")):
                    kill_group(os.getpgid(int(entry.name)))
        except OSError:
            continue
    if scratch.is_dir():
        for note in scratch.glob(f"{CGROUP_NOTE}*"):
            cgroup = _noted_cgroup(note)
            if cgroup is not None:
                kill_cgroup(cgroup)
                removed.append(cgroup)
        for child in scratch.iterdir():
            unmount(str(child))  # a task's own file system (--disk-limit), still mounted
            if child.is_dir() and not child.is_symlink():
                remove_tree(str(child))
            else:
                child.unlink(missing_ok=True)  # its image
            removed.append(str(child))
    for runtime in glob.glob(os.path.join(short_temp_base(), f"sbk-{runtime_tag(scratch)}-*")):
        remove_tree(runtime)
        removed.append(runtime)
    for kind in PRIVATE_KINDS:
        removed += sweep(kind)
    return removed + (remove_containers(runtime_tag(scratch)) if containers else [])


def remove_containers(tag: str) -> list[str]:
    """Remove the containers whose scratch label is ``tag`` (a killed run's), with every engine here; returns
    their ids. Nothing is said where no engine runs."""
    removed: list[str] = []
    for name in _ENGINES:
        engine = shutil.which(name)
        if engine is None:
            continue
        try:
            listed = subprocess.run(
                [engine, "ps", "-a", "-q", "--filter", f"label={CONTAINER_LABEL}={tag}"],
                capture_output=True,
                text=True,
                timeout=60,
            )
            ids = listed.stdout.split() if listed.returncode == 0 else []
            if ids:
                subprocess.run([engine, "rm", "-f", *ids], capture_output=True, timeout=300)
        except (OSError, subprocess.SubprocessError):
            continue
        removed += [f"container {i}" for i in ids]
    return removed


CGROUP_NOTE = ".cgroup-"
# The cgroups tasks get (limits.memory.MemoryCgroup): only such a cgroup is ever removed for a note.
_TASK_CGROUP = re.compile(r"super-bench-[A-Za-z0-9_.-]{1,40}-[0-9a-f]{8}")
_CGROUP_FS = "/sys/fs/cgroup/"


def note_cgroup(scratch: Path | None, cgroup: Path) -> None:
    """Note a task's memory cgroup in the run's ``scratch`` folder, so that ``clear_scratch`` removes it if the
    harness and its watchdog both die first. Nothing is noted without a sandbox root (no run's folder)."""
    if scratch is None:
        return
    try:
        (scratch / f"{CGROUP_NOTE}{cgroup.name}").write_text(str(cgroup), encoding="utf-8")
    except OSError:
        pass  # the watchdog still removes it; only the death of both would leave it


def forget_cgroup(scratch: Path | None, cgroup: Path) -> None:
    if scratch is not None:
        (scratch / f"{CGROUP_NOTE}{cgroup.name}").unlink(missing_ok=True)


def _noted_cgroup(note: Path) -> str | None:
    """The cgroup a note names, where it is a task's cgroup under the cgroup file system and the note's own name."""
    try:
        path = note.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    name = os.path.basename(path)
    if note.name != CGROUP_NOTE + name or not _TASK_CGROUP.fullmatch(name):
        return None
    if not path.startswith(_CGROUP_FS) or os.path.normpath(path) != path:
        return None
    return path


# The kinds of ``private_temp`` folders: every one is swept at a run's start.
PRIVATE_KINDS = ("git", "ray")


def private_temp(kind: str) -> Path:
    """A new temporary folder of this process, ``super-bench-<kind>-<pid>-*``, once the folders of this kind of
    processes that are gone (killed, however) are removed (``sweep``)."""
    assert kind in PRIVATE_KINDS, kind  # an unlisted kind would escape the sweep at a run's start
    sweep(kind)
    return Path(tempfile.mkdtemp(prefix=f"super-bench-{kind}-{os.getpid()}-"))


def sweep(kind: str) -> list[str]:
    """Remove the ``private_temp`` folders of ``kind`` whose process is gone; returns them."""
    removed = []
    prefix = f"super-bench-{kind}-"
    for path in glob.glob(os.path.join(tempfile.gettempdir(), f"{prefix}*")):
        pid = os.path.basename(path)[len(prefix) :].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)) and os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's
    return True
