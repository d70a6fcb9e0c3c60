"""Names shared across the package, as ``Literal`` types, in a module that imports nothing else so that the
CLI can use them cheaply. Each tuple of names is derived from its type, so a name is written once."""

from typing import Literal, get_args

TaskSet = Literal["expert", "masked", "auto"]
TASK_SETS: tuple[TaskSet, ...] = get_args(TaskSet)

MetricName = Literal["output_match", "landmarks", "entrypoint", "submitted"]
METRICS: tuple[MetricName, ...] = get_args(MetricName)

ScoreMode = Literal["corrected", "reference"]
SCORE_MODES: tuple[ScoreMode, ...] = get_args(ScoreMode)

TaskStatus = Literal["completed", "agent_error", "infra_error"]

# The stop reasons that are budgets running out: steps, prompt tokens, cost, execution time, and the
# sandbox's wall-time limit (the other stop reasons are in trajectory.StopReason).
BudgetStop = Literal["max_steps", "max_tokens", "max_cost", "max_compute", "max_wall_time"]
BUDGET_STOPS: tuple[BudgetStop, ...] = get_args(BudgetStop)

MemoryEnforcement = Literal["auto", "cgroup", "address-space"]
MEMORY_ENFORCEMENTS: tuple[MemoryEnforcement, ...] = get_args(MemoryEnforcement)
