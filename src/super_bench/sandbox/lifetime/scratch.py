"""A run's own scratch directory for its sandboxes, so that a resumed run can clear what a killed one left.

A run's task directories go to ``<root>/super-bench-run-<key>/`` (root: the sandbox root, else the
system's temporary directory) and its kernels' runtime directories to ``sbk-<tag>-*`` beside the
other short paths. The watchdog removes them when the harness dies; if the watchdog died too (a
whole process group killed, a machine's reboot), the next run of the same run directory does.
"""

from __future__ import annotations

import glob
import hashlib
import os
import tempfile
from pathlib import Path

from super_bench.sandbox.lifetime.reaper import kill_group, remove_tree, unmount

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
    return removed
