"""The disk limit of a docker task: what its task directory (``/content``, ``/root``, ``/tmp``) and its
container's own writable layer (what it installs with pip or apt) hold together, watched.

A file system of the task's own cannot hold both: the layer is the engine's, under its storage root. The
engine's own cap (``--storage-opt size=``) exists only for overlay on XFS with project quotas (and a few
other drivers), and caps the layer alone; so the docker backend watches, as ``limits.disk``'s ``watch``
does for the host backends: the layer's directory on the host is read from the engine (``inspect``), and
past the limit everything in the container is killed and the episode ends with ``max_disk``. Where the
layer is not on this host's file system (a remote or virtual-machine engine: Docker Desktop), the limit
is refused, saying so.
"""

from __future__ import annotations

import functools
import subprocess
import uuid
from pathlib import Path

from super_bench.errors import SandboxError
from super_bench.sandbox.backends.container_engine import Engine
from super_bench.sandbox.config import SandboxConfig

DISK_MECHANISM = (
    "a watch on what the task directory and the container's own layer hold together (every few seconds): past "
    "it everything in the container is killed and the task is stopped"
)
_LAYER = "{{.GraphDriver.Data.UpperDir}}"


def check_disk_limit(config: SandboxConfig, engine: Engine, image: str) -> None:
    """Raise ``SandboxError`` where the disk limit of ``config`` cannot be kept on docker here."""
    if config.disk_limit is None:
        return
    if config.disk_enforcement == "filesystem":
        raise SandboxError(
            "--disk-enforcement filesystem: a docker task's own layer is the engine's, outside any file system "
            "of the task's; the docker backend watches (--disk-enforcement watch or auto)"
        )
    problem = _layer_problem(engine, image)
    if problem is not None:
        raise SandboxError(f"--disk-limit on docker: {problem}")


def writable_layer(engine: Engine, container: str) -> Path | None:
    """The host directory of the container's own writable layer, where the engine says and it is here."""
    command = [*engine.command, "inspect", "--format", _LAYER, container]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=60)
    found = proc.stdout.strip()
    return Path(found) if proc.returncode == 0 and found.startswith("/") and Path(found).is_dir() else None


def bind_files_dir(engine: Engine, container: str) -> Path | None:
    """The host folder of the files the engine binds into the container read-write (``/etc/hosts``,
    ``/etc/hostname``, ``/run/.containerenv``): container root can fill them, outside its layer."""
    command = [*engine.command, "inspect", "--format", "{{.HostsPath}}", container]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=60)
    found = Path(proc.stdout.strip()).parent if proc.returncode == 0 and proc.stdout.strip().startswith("/") else None
    return found if found is not None and found.is_dir() else None


@functools.cache
def _layer_problem(engine: Engine, image: str) -> str | None:
    """Why the harness cannot watch a container's layer here (probed once, with a container created, never
    started), or None."""
    name = f"super-bench-probe-{uuid.uuid4().hex[:12]}"
    create = [*engine.command, "create", "--name", name, "--label", "super-bench=1", "--network", "none", image, "true"]
    proc = subprocess.run(create, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        return f"cannot create a container of {image}: {proc.stderr.strip()}"
    try:
        layer = writable_layer(engine, name)
    finally:
        subprocess.run([*engine.command, "rm", "-f", name], capture_output=True, timeout=120)
    if layer is None:
        return (
            f"{engine.name} keeps containers' layers where this host cannot read them (not its overlay storage on "
            "this machine); run without --disk-limit, or use --sandbox bwrap"
        )
    return None
