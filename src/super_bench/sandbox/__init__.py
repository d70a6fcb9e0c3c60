"""Sandboxes: where a task's kernel and commands run (``local``, ``bwrap``, ``docker``).

This package's face is all that code outside it imports (``pyproject.toml``'s contract "The sandbox's face"
holds it so): the names exported here (the ``Sandbox`` contract of ``base``; ``SandboxConfig``, its parts and
the build records of ``config``; the registry and its helpers; ``ProcessSandbox`` for plug-ins; the run's
scratch directory and leftovers), ``supply`` (what a task may fetch: mirrors and the package cache) and
``conformance`` (the checks every backend must pass). The rest is grouped by concern: ``backends`` (the
backends and what they share), ``kernel`` (the kernel's runtime directory and environment), ``pyenv`` (task
Python environments), ``packages`` (the package cache), ``mirrors`` (git and package mirrors, offline
bundles), ``limits`` (memory, disk, the wall clock) and ``lifetime`` (the watchdog, the reaper, scratch and
build directories).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from super_bench._registry import Registry
from super_bench.sandbox.base import (
    MAX_EDIT_BYTES,
    CommandResult,
    FileTooLargeError,
    KernelLaunch,
    KernelProcess,
    Sandbox,
    SandboxDescription,
    Usage,
)
from super_bench.sandbox.config import (
    BuildReport,
    BuildRequest,
    DockerSettings,
    LimitSettings,
    PlaceSettings,
    SandboxConfig,
    SupplySettings,
)
from super_bench.sandbox.lifetime import supervisor
from super_bench.sandbox.lifetime.reaper import remove_tree
from super_bench.sandbox.lifetime.scratch import clear_scratch, private_temp, scratch_dir

if TYPE_CHECKING:
    from pathlib import Path

    from super_bench.sandbox.process import ProcessSandbox

    BUILD_COST: str
    DEFAULT_REQUIREMENTS: Path

log = logging.getLogger(__name__)

SANDBOXES: Registry[type[Sandbox]] = Registry("sandbox backend", "super_bench.sandboxes")
SANDBOXES.register(
    "local",
    "super_bench.sandbox.backends.local:LocalSandbox",
    summary="a child process in a per-task directory; not isolated",
)
SANDBOXES.register(
    "bwrap",
    "super_bench.sandbox.backends.bwrap:BwrapSandbox",
    summary="bubblewrap: read-only system, private task directory, own PID/user/network namespaces, limits",
)
SANDBOXES.register(
    "docker",
    "super_bench.sandbox.backends.docker:DockerSandbox",
    summary="a container of the image `super-bench sandbox build --sandbox docker` makes (Docker or Podman)",
)


def __getattr__(name: str) -> Any:
    # ProcessSandbox brings in the host backends' machinery: loaded only by the plug-ins that subclass it.
    if name == "ProcessSandbox":
        from super_bench.sandbox.process import ProcessSandbox

        return ProcessSandbox
    # What ``super-bench sandbox build`` installs by default, and what that costs: read only by that command.
    if name in ("BUILD_COST", "DEFAULT_REQUIREMENTS"):
        from super_bench.sandbox.pyenv import super_base

        return super_base.BUILD_COST if name == "BUILD_COST" else super_base.COLAB_REQUIREMENTS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def resolve_backend(name: str) -> str:
    """The concrete backend for a name; ``auto`` is ``bwrap`` where it works, else ``local``."""
    if name != "auto":
        return name
    return _auto_backend()


@functools.cache
def _auto_backend() -> str:
    from super_bench.sandbox.backends.bwrap import bwrap_problem

    problem = bwrap_problem()
    if problem is None:
        return "bwrap"
    log.warning(
        "running agent code in the local sandbox, which does not isolate it: %s. "
        "For isolation, make bwrap work, or use --sandbox docker.",
        problem,
    )
    return "local"


def check_backend(config: SandboxConfig, commits: Mapping[str, Collection[str]] | None = None) -> type[Sandbox]:
    """The configured backend's class, after checking that it can run here and that agent code can clone every
    git mirror (``commits``: repository URL -> the commits tasks pin there); else one clear ``SandboxError``."""
    from super_bench.sandbox.supply import check_mirrors

    cls = sandbox_class(config)
    cls.check(config)
    check_mirrors(config, commits, other_user=cls.agent_is_another_user())
    return cls


def describe_backend(config: SandboxConfig, *, packages: bool = False) -> SandboxDescription:
    """What runs of ``config`` record and say of the backend it names (see ``Sandbox.describe``), with where
    its tasks fetch from (``supply``: the same for every backend, so added here where a backend gives none)."""
    description = sandbox_class(config).describe(config, packages=packages)
    if description.supply is None:
        from super_bench.sandbox.supply import describe_supply

        description = description.model_copy(update={"supply": describe_supply(config)})
    return description


def sandbox_class(config: SandboxConfig) -> type[Sandbox]:
    """The class of the configured backend."""
    return SANDBOXES.get(resolve_backend(config.backend))


def create_sandbox(config: SandboxConfig, label: str = "task") -> Sandbox:
    """A new, not yet started, sandbox of the configured backend."""
    return sandbox_class(config)(config, label)


__all__ = [
    "BUILD_COST",
    "DEFAULT_REQUIREMENTS",
    "MAX_EDIT_BYTES",
    "SANDBOXES",
    "BuildReport",
    "BuildRequest",
    "CommandResult",
    "DockerSettings",
    "FileTooLargeError",
    "KernelLaunch",
    "KernelProcess",
    "LimitSettings",
    "PlaceSettings",
    "ProcessSandbox",
    "Sandbox",
    "SandboxConfig",
    "SandboxDescription",
    "SupplySettings",
    "Usage",
    "check_backend",
    "clear_scratch",
    "create_sandbox",
    "describe_backend",
    "private_temp",
    "remove_tree",
    "resolve_backend",
    "sandbox_class",
    "scratch_dir",
    "supervisor",
]
