"""Plug-in registries: built-ins named by lazy ``"module:attr"`` targets, others by entry points.

Nothing is imported until a name is looked up, so optional extras cost nothing until used,
and a missing extra produces a message naming the ``pip install`` that fixes it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

from super_bench.errors import ConfigError

T = TypeVar("T")


@dataclass(frozen=True)
class _Entry:
    target: str
    extra: str | None = None
    summary: str = ""


class Registry(Generic[T]):
    """Names to lazily imported objects of one kind (sandboxes, agents, model providers, ...)."""

    def __init__(self, kind: str, group: str) -> None:
        self.kind = kind
        self.group = group
        self._entries: dict[str, _Entry] = {}

    def register(self, name: str, target: str, *, extra: str | None = None, summary: str = "") -> None:
        self._entries[name] = _Entry(target, extra, summary)

    def unregister(self, name: str) -> None:
        """Forget a name (a plug-in registered for a while, as in tests); unknown names are ignored."""
        self._entries.pop(name, None)

    def _discover(self) -> None:
        for ep in entry_points(group=self.group):
            self._entries.setdefault(ep.name, _Entry(ep.value))

    def names(self) -> list[str]:
        self._discover()
        return sorted(self._entries)

    def summaries(self) -> dict[str, str]:
        self._discover()
        return {name: entry.summary for name, entry in sorted(self._entries.items())}

    def get(self, name: str) -> T:
        if name not in self._entries:
            self._discover()
        entry = self._entries.get(name)
        if entry is None:
            known = ", ".join(self.names()) or "none"
            raise ConfigError(f"unknown {self.kind} {name!r}; known: {known}")
        module_name, _, attr = entry.target.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as e:
            if entry.extra:
                raise ConfigError(
                    f"the {self.kind} {name!r} needs an optional dependency ({e.name or e}); "
                    f"install it with: pip install 'super-bench[{entry.extra}]'"
                ) from e
            raise
        obj: Any = getattr(module, attr) if attr else module
        return obj  # type: ignore[no-any-return]
