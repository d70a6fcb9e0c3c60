"""super-bench: the SUPER benchmark and its harness.

The public API, imported lazily so that ``import super_bench`` stays fast::

    import super_bench as sb

    with sb.make("tinyreg") as env:
        env.reset()
        step = env.step({"type": "execute", "content": "!ls"})
    outcome = sb.run(agent="gold", task_set="masked")
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "__version__": "super_bench._version",
    "Action": "super_bench.actions",
    "EnvConfig": "super_bench.environment",
    "Environment": "super_bench.environment",
    "Metrics": "super_bench.scoring",
    "RunConfig": "super_bench.runner.config",
    "SandboxConfig": "super_bench.sandbox",
    "Step": "super_bench.trajectory",
    "SuperBenchError": "super_bench.errors",
    "Task": "super_bench.tasks.model",
    "TaskEnvironment": "super_bench.integrations.gym",
    "Trajectory": "super_bench.trajectory",
    "load_tasks": "super_bench.tasks.loaders",
    "make": "super_bench.integrations.gym",
    "rescore": "super_bench.runner.rescore",
    "run": "super_bench.runner.run",
    "score_answer": "super_bench.scoring.answer",
    "score_trajectory": "super_bench.scoring",
}

__all__ = [
    "Action",
    "EnvConfig",
    "Environment",
    "Metrics",
    "RunConfig",
    "SandboxConfig",
    "Step",
    "SuperBenchError",
    "Task",
    "TaskEnvironment",
    "Trajectory",
    "__version__",
    "load_tasks",
    "make",
    "rescore",
    "run",
    "score_answer",
    "score_trajectory",
]

if TYPE_CHECKING:
    from super_bench._version import __version__
    from super_bench.actions import Action
    from super_bench.environment import EnvConfig, Environment
    from super_bench.errors import SuperBenchError
    from super_bench.integrations.gym import TaskEnvironment, make
    from super_bench.runner.config import RunConfig
    from super_bench.runner.rescore import rescore
    from super_bench.runner.run import run
    from super_bench.sandbox import SandboxConfig
    from super_bench.scoring import Metrics, score_trajectory
    from super_bench.scoring.answer import score_answer
    from super_bench.tasks.loaders import load_tasks
    from super_bench.tasks.model import Task
    from super_bench.trajectory import Step, Trajectory


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'super_bench' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
