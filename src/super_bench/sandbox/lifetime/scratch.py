"""A run's own scratch directory for its sandboxes, so that a resumed run can clear what a killed one left.

A run's task directories go to ``<root>/super-bench-run-<key>/`` (root: the sandbox root, else the
system's temporary directory) and its kernels' runtime directories to ``sbk-<tag>-*`` beside the
other short paths, and its docker tasks' containers carry the label ``super-bench.scratch=<tag>``. The
watchdog removes them when the harness dies; if the watchdog died too (a whole process group killed, a
machine's reboot), the next run of the same run directory does.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from super_bench.sandbox.lifetime.reaper import kill_group, remove_tree, unmount

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


def clear_scratch(scratch: Path) -> list[str]:
    """Kill what still runs from ``scratch`` and remove what is left there; returns what was removed."""
    removed: list[str] = []
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
    return removed + remove_containers(runtime_tag(scratch))


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
