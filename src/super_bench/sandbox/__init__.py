"""Sandboxes: where a task's kernel and commands run (``local``, ``bwrap``, ``docker``)."""

from __future__ import annotations

from super_bench._registry import Registry
from super_bench.sandbox.base import CommandResult, KernelProcess, Sandbox, SandboxConfig

SANDBOXES: Registry[type[Sandbox]] = Registry("sandbox backend", "super_bench.sandboxes")
SANDBOXES.register(
    "local",
    "super_bench.sandbox.local:LocalSandbox",
    summary="a child process in a per-task directory; not isolated",
)


def resolve_backend(name: str) -> str:
    """The concrete backend for a name; ``auto`` picks the safest one usable here."""
    if name != "auto":
        return name
    return "local"


def create_sandbox(config: SandboxConfig, label: str = "task") -> Sandbox:
    """A new, not yet started, sandbox of the configured backend."""
    cls = SANDBOXES.get(resolve_backend(config.backend))
    return cls(config, label)


__all__ = [
    "SANDBOXES",
    "CommandResult",
    "KernelProcess",
    "Sandbox",
    "SandboxConfig",
    "create_sandbox",
    "resolve_backend",
]
