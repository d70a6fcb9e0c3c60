"""A trajectory as a Jupyter notebook (``trajectory.ipynb``): one code cell per action, with the
observation as its output, so a run can be read, or re-run, in Jupyter.

The cells are built as plain nodes and the notebook is validated once, when written: nbformat's
cell constructors validate each cell on its own, which cost about a millisecond per step.
"""

from __future__ import annotations

import json
from typing import Any

import nbformat
from nbformat import v4
from nbformat.v4.nbbase import random_cell_id

from super_bench.trajectory import Step, Trajectory


def trajectory_to_notebook(trajectory: Trajectory) -> str:
    """The notebook's JSON text."""
    header = f"# {trajectory.task_id}\n\n**Query**\n\n{trajectory.query}"
    who = " / ".join(x for x in (trajectory.agent, trajectory.model) if x)
    if who:
        header += f"\n\n*Agent:* {who}"
    cells: list[Any] = [_markdown(header)]
    for step in trajectory.steps:
        cells.extend(_step_cells(step))
    footer = f"**Stop reason:** {trajectory.stop_reason or 'unknown'}"
    if trajectory.submitted:
        footer += f"\n\n**Submission:** `{json.dumps(trajectory.submission)}`"
    cells.append(_markdown(footer))
    nb = nbformat.from_dict(
        {
            "nbformat": v4.nbformat,
            "nbformat_minor": v4.nbformat_minor,
            "metadata": {
                "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                "super_bench": {"task_id": trajectory.task_id, "stop_reason": trajectory.stop_reason},
            },
            "cells": cells,
        }
    )
    return str(nbformat.writes(nb))


def _markdown(source: str) -> dict[str, Any]:
    return {"id": random_cell_id(), "cell_type": "markdown", "metadata": {}, "source": source}


def _step_cells(step: Step) -> list[Any]:
    kind = "pre-executed" if step.pre_executed else step.action.type
    title = f"### Step {step.index} ({kind}, {step.duration:.1f} s, {step.outcome})"
    if step.thought:
        title += f"\n\n**Thought:** {step.thought}"
    action = step.action
    if action.type == "execute":
        outputs = [{"output_type": "stream", "name": "stdout", "text": step.observation}] if step.observation else []
        cell = {
            "id": random_cell_id(),
            "cell_type": "code",
            "metadata": {"super_bench": {"action": action.type, "outcome": step.outcome}},
            "execution_count": None,
            "source": str(action.content or ""),
            "outputs": outputs,
        }
        return [_markdown(title), cell]
    # Other actions are not Python: shown as text, so that re-running the notebook skips them.
    content = action.content if isinstance(action.content, str | None) else json.dumps(action.content, indent=1)
    text = f"{title}\n\n**{action.type}**"
    if content:
        text += f"\n\n```\n{content}\n```"
    if step.observation:
        text += f"\n\n**Observation:**\n\n```\n{step.observation}\n```"
    return [_markdown(text)]
