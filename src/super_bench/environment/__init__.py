"""The notebook environment, in one package: ``Environment`` (``env``: actions in, steps out), the face agents
see of it (``AgentEnv``, ``agent_env``), its budgets (``budget``), the edit action (``edit``), failure classes
(``failures``), and the Jupyter kernel client with its output handling and recovery (``kernel``).

``EnvConfig``, ``Environment`` and ``AgentEnv`` are imported from here, on first use, so that a module that
needs only a small part (the edit markers, say) does not load the kernel client.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "AgentEnv": "super_bench.environment.agent_env",
    "EnvConfig": "super_bench.environment.env",
    "Environment": "super_bench.environment.env",
}

__all__ = ["AgentEnv", "EnvConfig", "Environment"]

if TYPE_CHECKING:
    from super_bench.environment.agent_env import AgentEnv
    from super_bench.environment.env import EnvConfig, Environment


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'super_bench.environment' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(__all__) | set(globals()))
