"""Memory limits that bound everything a task maps, shared memory included.

Defends the host's memory (and so other tasks and the harness) against one task. The ``sh`` that puts a
process into the task's cgroup is the system's, by its absolute path (``lifetime.programs``).

Per-process limits on the data segment (``RLIMIT_DATA``) miss shared mappings: ``mmap(-1, n)``,
memfd and ``/dev/shm`` files are not counted. Two mechanisms do count them:

- a memory cgroup of the task's own (``cgroup2``: ``memory.max``; ``cgroup1``: the v1 memory
  controller's ``memory.limit_in_bytes``), made under the harness's own cgroup where it may make
  one (as root, or with a delegated cgroup). Its limit covers every process of the task together,
  page cache and shared memory included; past it the kernel's OOM killer ends a process of the
  task, and the harness can tell that this is what happened.
- otherwise ``RLIMIT_AS`` per process (``address-space``): a mapping past it fails at once. It counts
  address space merely reserved too, so programs that reserve far more than they use (CUDA, JVMs)
  may fail under it; numpy and PyTorch on the CPU import under a limit of 1 GiB.
"""

from __future__ import annotations

import functools
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from super_bench._sizes import human_size
from super_bench.errors import ConfigError, SandboxError
from super_bench.sandbox.lifetime.programs import program
from super_bench.sandbox.lifetime.reaper import kill_cgroup

Mechanism = Literal["cgroup2", "cgroup1", "address-space"]
_DESCRIPTION = {
    "cgroup2": "a cgroup v2 of each task's own (memory.max: all its processes together, shared memory included)",
    "cgroup1": "a v1 memory cgroup of each task's own (memory.limit_in_bytes: all its processes, shared memory too)",
    "address-space": "RLIMIT_AS per process (address space, shared mappings included; no cgroup could be made here)",
}


def describe(mechanism: Mechanism) -> str:
    return _DESCRIPTION[mechanism]


def _own_cgroup_dirs(pid: str = "self") -> dict[str, Path]:
    """This process's (or ``pid``'s) cgroup directories: ``cgroup2`` and (v1) ``memory``, where mounted."""
    found: dict[str, Path] = {}
    try:
        own = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in mounts:
        fields = line.split()
        dash = fields.index("-")
        root, mountpoint, fstype, options = fields[3], fields[4], fields[dash + 1], fields[-1].split(",")
        kind = "cgroup2" if fstype == "cgroup2" else "memory" if fstype == "cgroup" and "memory" in options else None
        if kind is None or kind in found:
            continue
        for entry in own:
            hierarchy, controllers, path = entry.split(":", 2)
            if (kind == "cgroup2" and hierarchy == "0" and controllers == "") or (
                kind == "memory" and "memory" in controllers.split(",")
            ):
                relative = os.path.relpath(path, root) if path.startswith(root) else path
                directory = Path(mountpoint) / relative.lstrip("/")
                if directory.is_dir():
                    found[kind] = directory.resolve()
    return found


def _can_make_child(parent: Path, mechanism: Mechanism) -> bool:
    probe = parent / f"super-bench-probe-{secrets.token_hex(4)}"
    try:
        probe.mkdir()
    except OSError:
        return False
    try:
        limit = "memory.max" if mechanism == "cgroup2" else "memory.limit_in_bytes"
        (probe / limit).write_text(str(1 << 30))
        return True
    except OSError:
        return False
    finally:
        try:
            probe.rmdir()
        except OSError:
            pass


@functools.cache
def cgroup_parent() -> tuple[Mechanism, Path] | None:
    """Where this process can make a task's memory cgroup, and of which kind; None where it cannot."""
    dirs = _own_cgroup_dirs()
    v2 = dirs.get("cgroup2")
    if v2 is not None:
        try:
            delegated = "memory" in (v2 / "cgroup.subtree_control").read_text().split()
        except OSError:
            delegated = False
        if delegated and _can_make_child(v2, "cgroup2"):
            return "cgroup2", v2
    v1 = dirs.get("memory")
    if v1 is not None and _can_make_child(v1, "cgroup1"):
        return "cgroup1", v1
    return None


def memory_mechanism(requested: str = "auto") -> Mechanism:
    """The mechanism a memory limit is enforced with here: ``auto`` is a cgroup where one can be made."""
    parent = cgroup_parent()
    if requested == "auto":
        return parent[0] if parent else "address-space"
    if requested == "address-space":
        return "address-space"
    if requested == "cgroup":
        if parent is None:
            raise SandboxError(
                "cannot make a memory cgroup here (run as root, or in a cgroup with the memory controller "
                "delegated); use --memory-enforcement auto to fall back to an address-space limit"
            )
        return parent[0]
    raise SandboxError(f"unknown memory enforcement {requested!r}: choose auto, cgroup or address-space")


# The least memory a limit may give: what a notebook kernel needs to start and run a cell that imports
# NumPy, measured per mechanism (docs/sandboxes.md#limits) and rounded up. A cgroup (local, bwrap) and the
# container's cgroup (docker) count pages used: 224 MiB sufficed, 192 MiB did not, with the same figures on
# all three backends. An address-space limit counts what the kernel's threads reserve: 1 GiB sufficed,
# 768 MiB did not.
KERNEL_MEMORY: dict[str, int] = {
    "cgroup2": 256 << 20,
    "cgroup1": 256 << 20,
    "container": 256 << 20,
    "address-space": 1 << 30,
}


def check_kernel_memory(limit: int | None, mechanism: str, backend: str) -> None:
    """Refuse, before anything starts, a memory limit under which no kernel could start."""
    need = KERNEL_MEMORY[mechanism]
    if limit is not None and limit < need:
        how = "per process (address-space)" if mechanism == "address-space" else "by a memory cgroup"
        raise ConfigError(
            f"--memory-limit {human_size(limit)} is below the {human_size(need)} a notebook kernel needs to start "
            f"in the {backend} sandbox, with the limit enforced {how}; give --memory-limit "
            f"{need >> 20}m or more"
        )


class CgroupMemory:
    """What a memory cgroup counts: the bytes its processes use, and how many the kernel killed for it."""

    def __init__(self, mechanism: Mechanism, path: Path) -> None:
        self.mechanism, self.path = mechanism, path

    def current(self) -> int | None:
        """Bytes the task's processes use now (page cache and shared memory included)."""
        name = "memory.current" if self.mechanism == "cgroup2" else "memory.usage_in_bytes"
        try:
            return int((self.path / name).read_text())
        except (OSError, ValueError):
            return None

    def oom_kills(self) -> int:
        """How many processes the kernel killed for going over the limit."""
        name = "memory.events" if self.mechanism == "cgroup2" else "memory.oom_control"
        try:
            for line in (self.path / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0


def cgroup_of(pid: int) -> CgroupMemory | None:
    """The memory cgroup a process runs in (a container's, which its engine made), where this process can
    read it; None where not (another machine's engine, no memory controller mounted)."""
    dirs = _own_cgroup_dirs(str(pid))
    v2 = dirs.get("cgroup2")
    if v2 is not None and (v2 / "memory.max").exists():
        return CgroupMemory("cgroup2", v2)
    v1 = dirs.get("memory")
    if v1 is not None and (v1 / "memory.limit_in_bytes").exists():
        return CgroupMemory("cgroup1", v1)
    return None


class MemoryCgroup(CgroupMemory):
    """A task's own memory cgroup, with its limit; processes join it through ``wrap``. ``announce`` is told its
    path before it is made, so that whoever cleans up after a harness killed at any moment (the watchdog, a
    resume) knows of it; it is told of a cgroup that then failed to be made as well."""

    def __init__(self, label: str, limit: int, announce: Callable[[Path], None] | None = None) -> None:
        parent = cgroup_parent()
        if parent is None:
            raise SandboxError("cannot make a memory cgroup here")
        mechanism, base = parent
        super().__init__(mechanism, base / f"super-bench-{label[:40]}-{secrets.token_hex(4)}")
        if announce is not None:
            announce(self.path)
        try:
            self.path.mkdir()
            if self.mechanism == "cgroup2":
                (self.path / "memory.max").write_text(str(limit))
                _write_if_there(self.path / "memory.swap.max", "0")
            else:
                (self.path / "memory.limit_in_bytes").write_text(str(limit))
                _write_if_there(self.path / "memory.memsw.limit_in_bytes", str(limit))
        except OSError as e:
            self.remove()
            raise SandboxError(f"cannot set up the task's memory cgroup {self.path}: {e}") from e

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` run inside the cgroup: a shell joins it, then becomes the command (same process)."""
        return [program("sh"), "-c", 'echo $$ > "$0" && exec "$@"', str(self.path / "cgroup.procs"), *argv]

    def kill(self) -> None:
        """Kill every process of the cgroup, which stays."""
        kill_cgroup(str(self.path), remove=False)

    def remove(self) -> None:
        """Kill whatever runs in the cgroup, then remove it; never raises."""
        kill_cgroup(str(self.path))


def _write_if_there(path: Path, value: str) -> None:
    if path.exists():
        try:
            path.write_text(value)
        except OSError:
            pass  # swap accounting switched off: there is no swap to limit
