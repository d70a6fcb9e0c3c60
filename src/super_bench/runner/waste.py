"""Where a task's time went without result: cells cut short, infrastructure attempts that were retried,
package installs, and sandboxes that sat idle.

Everything but the retried attempts is read from the trajectory, so a run's figures can be computed
again from its files. A cell is an ``execute`` step with the ``continue_wait`` and ``interrupt`` steps
that followed it; the categories overlap (an install that timed out counts as both).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic import ConfigDict, Field

from super_bench.trajectory import Figures, Step, Trajectory

# A command that installs packages, at the start of a line or after a shell separator, a ``!`` or a ``%``.
_INSTALL = re.compile(
    r"(?:^|[\s;&|!%(])(?:(?:python[\d.]*\s+-m\s+)?pip[\d.]*|uv\s+pip|conda|mamba|apt(?:-get)?)\s+install\b",
    re.MULTILINE,
)


class Waste(Figures):
    """Seconds of a task (or, summed, of a run) spent without result."""

    model_config = ConfigDict(extra="forbid")

    interrupted_cells: float = Field(
        0.0, description="Cells that hit the soft timeout and never finished, or were interrupted"
    )
    retried_attempts: float = Field(0.0, description="Attempts that failed on the infrastructure and were retried")
    package_installs: float = Field(0.0, description="Cells that ran pip, uv, conda or apt-get install")
    idle_sandbox: float = Field(
        0.0, description="The sandbox up with no cell running: its start, the model's replies, the agent's own work"
    )


def total(wastes: Iterable[Waste | None]) -> Waste | None:
    """The sum of the wastes given; None when none is known (rows written before rows recorded it)."""
    known = [waste for waste in wastes if waste is not None]
    return Waste.summed(known) if known else None


def _cells(steps: list[Step]) -> list[list[Step]]:
    cells: list[list[Step]] = []
    current: list[Step] | None = None
    for step in steps:
        if step.action.type == "execute":
            current = [step]
            cells.append(current)
        elif step.action.type in ("continue_wait", "interrupt") and current is not None:
            current.append(step)
        else:
            current = None
    return cells


def waste_of(trajectory: Trajectory) -> Waste | None:
    """The waste a trajectory shows (all but the retried attempts, which only the runner sees), from
    measured time only: in a recording with untimed steps (an imported one), the sandbox's span is that
    of its timed steps; with none timed, the waste is unknown (None)."""
    timed = [step for step in trajectory.steps if step.timed]
    if not timed and trajectory.steps:
        return None
    waste = Waste()
    for cell in _cells(trajectory.steps):
        seconds = sum(step.duration for step in cell)
        if cell[-1].outcome in ("timeout", "interrupted"):  # still running when the agent moved on, or stopped
            waste.interrupted_cells += seconds
        if isinstance(cell[0].action.content, str) and _INSTALL.search(cell[0].action.content):
            waste.package_installs += seconds
    span: float | None = None
    if len(timed) < len(trajectory.steps):
        span = (max(step.end_time for step in timed) - min(step.start_time for step in timed)).total_seconds()
    elif trajectory.finished_at is not None:
        span = (trajectory.finished_at - trajectory.started_at).total_seconds()
    if span is not None:
        waste.idle_sandbox = max(0.0, span - sum(step.duration for step in timed))
    return waste
