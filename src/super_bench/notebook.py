"""A trajectory as a Jupyter notebook (``trajectory.ipynb``): one code cell per action, with the
observation as its output, so a run can be read, or re-run, in Jupyter.

Written as nbformat 4.5 JSON directly, the way ``nbformat.writes`` lays it out: importing nbformat
and compiling its schema cost about 120 ms, a tenth of a one-cell run. The tests validate what is
written against nbformat's schema. Cell ids follow the steps, so a notebook is the same each time
it is written from the same trajectory.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from super_bench.trajectory import Step, Trajectory, atomic_write

_KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}


def save_notebook(trajectory: Trajectory, directory: Path) -> Path:
    """Write ``trajectory.ipynb`` (atomically) beside the ``trajectory.json`` that ``Trajectory.save`` writes."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "trajectory.ipynb"
    atomic_write(path, trajectory_to_notebook(trajectory))
    return path


def trajectory_to_notebook(trajectory: Trajectory) -> str:
    """The notebook's JSON text."""
    header = f"# {trajectory.task_id}\n\n**Query**\n\n{trajectory.query}"
    who = " / ".join(x for x in (trajectory.agent, trajectory.model) if x)
    if who:
        header += f"\n\n*Agent:* {who}"
    cells: list[dict[str, Any]] = [_markdown("header", header)]
    for step in trajectory.steps:
        cells.extend(_step_cells(step))
    footer = f"**Stop reason:** {trajectory.stop_reason or 'unknown'}"
    if trajectory.submitted:
        footer += f"\n\n**Submission:** `{json.dumps(trajectory.submission)}`"
    cells.append(_markdown("footer", footer))
    notebook = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {
            "kernelspec": _KERNELSPEC,
            "super_bench": {"task_id": trajectory.task_id, "stop_reason": trajectory.stop_reason},
        },
        "cells": cells,
    }
    return json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def _markdown(cell_id: str, source: str) -> dict[str, Any]:
    return {"id": cell_id, "cell_type": "markdown", "metadata": {}, "source": _lines(source)}


def _lines(text: str) -> list[str]:
    """Multi-line text as Jupyter stores it on disk: a list of lines, each with its newline."""
    return text.splitlines(keepends=True)


def _step_cells(step: Step) -> list[dict[str, Any]]:
    kind = "pre-executed" if step.pre_executed else step.action.type
    title = f"### Step {step.index} ({kind}, {step.duration:.1f} s, {step.outcome})"
    if step.thought:
        title += f"\n\n**Thought:** {step.thought}"
    action = step.action
    cell_id = f"step-{step.index}"
    if action.type == "execute":
        outputs: list[dict[str, Any]] = (
            [{"output_type": "stream", "name": "stdout", "text": _lines(step.observation)}] if step.observation else []
        )
        outputs += [
            {"output_type": "display_data", "data": {figure.mime: figure.data}, "metadata": {}}
            for figure in step.figures
        ]
        code = {
            "id": f"{cell_id}-code",
            "cell_type": "code",
            "metadata": {"super_bench": {"action": action.type, "outcome": step.outcome}},
            "execution_count": None,
            "source": _lines(str(action.content or "")),
            "outputs": outputs,
        }
        return [_markdown(cell_id, title), code]
    # Other actions are not Python: shown as text, so that re-running the notebook skips them.
    content = action.content if isinstance(action.content, str | None) else json.dumps(action.content, indent=1)
    text = f"{title}\n\n**{action.type}**"
    if content:
        text += f"\n\n```\n{content}\n```"
    if step.observation:
        text += f"\n\n**Observation:**\n\n```\n{step.observation}\n```"
    for n, figure in enumerate(step.figures, start=1):  # a cell that went on after a timeout drew them
        text += f"\n\n![figure {n}](data:{figure.mime};base64,{figure.data})"
    return [_markdown(cell_id, text)]
