"""What is left of an episode's budgets: the answer of ``Environment.budget_left()``.

The environment holds every budget of an episode (steps, execution time, the sandbox's wall time,
prompt tokens and cost), counts what is spent, and ends the episode when one runs out; agents ask
it what is left rather than keeping counts of their own.
"""

from __future__ import annotations

from pydantic import ConfigDict, Field

from super_bench._pydantic import Model
from super_bench.trajectory import StopReason


class BudgetLeft(Model):
    """What is left of each budget of an episode: at least 0, None where the budget has no limit."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    steps: int | None = Field(description="Agent steps (max_steps)")
    execution_seconds: float | None = Field(description="Seconds of execution by the agent's steps (max_compute)")
    wall_seconds: float | None = Field(
        description="Seconds until the sandbox's wall-time limit (max_wall_time); None once the sandbox is stopped"
    )
    prompt_tokens: int = Field(description="Prompt tokens of model calls (max_tokens)")
    cost: float | None = Field(description="USD of model calls (max_cost)")

    def spent(self) -> StopReason | None:
        """The stop reason of the first budget that is spent (steps, execution time, wall time, tokens,
        cost, in that order), or None while every budget has something left."""
        budgets: tuple[tuple[StopReason, float | None], ...] = (
            ("max_steps", self.steps),
            ("max_compute", self.execution_seconds),
            ("max_wall_time", self.wall_seconds),
            ("max_tokens", self.prompt_tokens),
            ("max_cost", self.cost),
        )
        return next((reason for reason, left in budgets if left is not None and left <= 0), None)

    @property
    def model_calls_spent(self) -> bool:
        """Whether the prompt tokens or the money are spent: then no further model call may be made."""
        return self.prompt_tokens <= 0 or (self.cost is not None and self.cost <= 0)
