"""``make(task)``: a gym-style environment bound to one task, for writing your own agent loop:
``reset()`` returns the query, ``step(action)`` returns the step with its observation and whether
the episode ended with it (``terminated``, ``truncated``, ``stop_reason``), ``done`` says when the
episode is over and ``score()`` grades it (docs/integrations.md has an example).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from super_bench.environment import EnvConfig, Environment
from super_bench.errors import ConfigError
from super_bench.sandbox import SANDBOXES, SandboxConfig, resolve_backend
from super_bench.scoring import Metrics, ScoreMode, score_trajectory
from super_bench.tasks.loaders import find_task
from super_bench.tasks.model import Task


class TaskEnvironment(Environment):
    """An :class:`Environment` that knows its task: ``reset()`` needs no argument, ``score()`` grades
    the episode so far."""

    def __init__(self, task: Task, config: EnvConfig | None = None) -> None:
        super().__init__(config)
        self.bound_task = task

    def reset(self, task: Task | None = None, *, agent: str | None = None, model: str | None = None) -> str:
        """Start a fresh episode (of the bound task unless another is given); returns the query. The
        pre-executed cells of a Masked task are already in ``trajectory.steps``."""
        return super().reset(task or self.bound_task, agent=agent, model=model)

    def score(self, mode: ScoreMode = "corrected") -> Metrics:
        """The metrics of the episode: final once ``done``."""
        metrics, _ = score_trajectory(self.trajectory, self.task, mode)
        return metrics


def make(
    task: Task | str,
    *,
    source: str | Path = "demo",
    task_set: str | None = None,
    sandbox: str | SandboxConfig = "auto",
    **settings: Any,
) -> TaskEnvironment:
    """An environment for one task, not yet started (call ``reset()``; use it as a context manager).

    ``task``: a :class:`Task`, or a task id looked up in ``source`` (the demo suite by default; in
    every set unless ``task_set`` is given). ``sandbox``: a backend name or a :class:`SandboxConfig`.
    ``settings``: any :class:`EnvConfig` field, such as ``cell_timeout``, ``max_steps`` or ``max_compute``,
    and any :class:`SandboxConfig` field, such as ``git_mirrors``, ``packages_as_of`` or ``hf_cache``.
    """
    if isinstance(task, str):
        task = find_task(task, source, task_set)
    base = {"backend": sandbox} if isinstance(sandbox, str) else sandbox.model_dump(exclude_unset=True)
    sandbox_settings = {k: settings.pop(k) for k in list(settings) if k in SandboxConfig.model_fields}
    try:
        sandbox_config = SandboxConfig(**{**base, **sandbox_settings})
        config = EnvConfig(sandbox=sandbox_config, **settings)
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors())
        known = ", ".join(name for name in EnvConfig.model_fields if name != "sandbox")
        raise ConfigError(
            f"invalid environment settings ({problems}); the settings are: {known}, and the sandbox's "
            f"({', '.join(SandboxConfig.model_fields)})"
        ) from e
    SANDBOXES.get(resolve_backend(sandbox_config.backend))  # an unknown backend fails here, not at reset
    return TaskEnvironment(task, config)
