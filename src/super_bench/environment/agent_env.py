"""``AgentEnv``: the environment as agents see it, and all they may use of it.

Agents are typed against this Protocol, not against ``Environment``, so that mypy refuses an agent that reaches
for anything else (the sandbox, the kernel, the harness's own calls such as ``reset`` or ``close``).
``Environment`` satisfies it; docs/architecture.md lists its members and what each agent uses them for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from super_bench.actions import Action
    from super_bench.environment.budget import BudgetLeft
    from super_bench.environment.env import EnvConfig
    from super_bench.tasks.model import Task
    from super_bench.trajectory import Step, StopReason, Trajectory, Usage


class AgentEnv(Protocol):
    """What an agent may use of the notebook environment."""

    # Shown each piece of a running cell's output as it arrives (a terminal's live view), or None.
    on_output: Callable[[str], None] | None

    @property
    def task(self) -> Task:
        """The task as the agent is told it in this attempt."""

    @property
    def trajectory(self) -> Trajectory:
        """The steps so far and the episode's record."""

    @property
    def done(self) -> bool:
        """Whether the episode is over."""

    @property
    def cwd(self) -> str:
        """The notebook's current directory, as agent code sees it."""

    @property
    def workdir(self) -> str:
        """The task's working directory, as agent code sees it."""

    @property
    def config(self) -> EnvConfig:
        """The environment's settings (``cell_timeout``, told to a model)."""

    def step(
        self, action: Action | dict[str, Any], thought: str | None = None, metadata: dict[str, Any] | None = None
    ) -> Step:
        """Perform one action and record it."""

    def record_invalid(
        self,
        action: Action | dict[str, Any],
        observation: str,
        thought: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Step:
        """Record, without carrying it out, an action that cannot be run as given."""

    def add_usage(self, usage: Usage) -> None:
        """Count a model call's usage against the episode's budgets."""

    def check_budgets(self) -> bool:
        """End the episode if a budget is spent; whether it is over."""

    def budget_left(self) -> BudgetLeft:
        """What is left of each budget."""

    def stop(self, reason: StopReason) -> None:
        """End the episode for a reason of the agent's."""

    def new_attempt(self, query: str | None = None) -> Trajectory:
        """Start the task again in a fresh sandbox and kernel; the finished attempt's trajectory."""

    def request_interrupt(self) -> None:
        """Interrupt the running cell (safe from a signal handler)."""


# The members of ``AgentEnv`` by name: its methods and properties, and its attributes.
MEMBERS = frozenset(name for name in (*vars(AgentEnv), *AgentEnv.__annotations__) if not name.startswith("_"))
