"""An Expert task from a solved notebook: the code cells are the gold solution, the JSON the last
cell prints is the gold answer, and milestone lines of the outputs are suggested as landmarks.

The gold agent replays the solution and submits what its last cell prints, so the notebook must
end with a cell that prints the answer (``print(json.dumps({...}))``), as SUPER's experts did.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from super_bench.actions import Action
from super_bench.agents.gold import printed_answer
from super_bench.construct.landmarks import Suggestion, suggest_landmarks
from super_bench.environment.kernel import clean_output
from super_bench.errors import TaskError, TaskSourceError
from super_bench.tasks.model import Task

_CHECKOUT = re.compile(r"git\s+(?:checkout|reset\s+--hard|switch\s+--detach)\s+([0-9a-f]{7,40})\b")


@dataclass(frozen=True)
class Cell:
    number: int  # the cell's 1-based position in the notebook
    source: str
    output: str


@dataclass
class NotebookTask:
    """The task built from a notebook, with what the builder should look at."""

    task: Task
    suggestions: list[Suggestion]
    cells: list[Cell]
    warnings: list[str] = field(default_factory=list)


def read_cells(path: Path) -> list[Cell]:
    """The notebook's code cells with their outputs as text; cells with no code are left out."""
    import nbformat

    try:
        notebook = nbformat.read(str(path), as_version=4)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:  # nbformat raises many kinds
        raise TaskSourceError(f"{path}: not a readable Jupyter notebook ({e})") from e
    return [
        Cell(number, cell.source, _output_text(cell.get("outputs", [])))
        for number, cell in enumerate(notebook.cells, start=1)
        if cell.cell_type == "code" and _has_code(cell.source)
    ]


def _has_code(source: str) -> bool:
    return any(line.strip() and not line.strip().startswith("#") for line in source.splitlines())


def _output_text(outputs: list[Any]) -> str:
    parts = []
    for output in outputs:
        if output.output_type == "stream":
            parts.append(output.text)
        elif output.output_type in ("execute_result", "display_data"):
            parts.append(output.get("data", {}).get("text/plain", ""))
        elif output.output_type == "error":
            parts.append("\n".join(output.get("traceback", [])) or f"{output.ename}: {output.evalue}")
    return clean_output("".join(parts))


def commit_in(cells: list[Cell]) -> str | None:
    """The commit the notebook checks out (``git checkout <sha>``), if it does."""
    for cell in cells:
        match = _CHECKOUT.search(cell.source)
        if match:
            return match.group(1)
    return None


def notebook_task(
    path: Path,
    *,
    task_id: str,
    query: str,
    repo: str,
    commit: str | None,
    landmarks: list[str] | None = None,
    max_landmarks: int = 3,
) -> NotebookTask:
    """The Expert task a solved notebook makes. Without ``landmarks``, suggested ones are used."""
    cells = read_cells(path)
    if not cells:
        raise TaskError(f"{path}: the notebook has no code cells")
    if not any(cell.output for cell in cells):
        raise TaskError(f"{path}: the notebook has no outputs; run it and save it with its outputs")
    answer = printed_answer(cells[-1].output)
    if not isinstance(answer, dict | list | int | float):
        raise TaskError(
            f"{path}: the last code cell (cell {cells[-1].number}) prints no JSON answer. The gold agent submits "
            "what the solution's last cell prints: end the notebook with a cell such as "
            "print(json.dumps({'accuracy': acc})), run it, and save the notebook."
        )
    suggestions = [  # numbered as the notebook's cells
        replace(s, cell=cells[s.cell - 1].number)
        for s in suggest_landmarks([cell.output for cell in cells[:-1]], max_landmarks)
    ]
    warnings = []
    checked_out = commit_in(cells)
    if commit and checked_out and not commit.startswith(checked_out) and not checked_out.startswith(commit):
        warnings.append(f"the notebook checks out {checked_out}, not the commit given ({commit})")
    if not checked_out:
        warnings.append(
            "the notebook does not check out a commit: a later run of the solution may get newer code "
            "(add a cell with `!git checkout <commit>` after the clone)"
        )
    for cell in cells:
        if "google.colab" in cell.source:
            warnings.append(f"cell {cell.number} uses google.colab, which exists only on Colab")
    if repo not in query:
        query = f"{query.rstrip()}\n\nGit repository: {repo}" + (f"\nCommit: {commit}" if commit else "")
    chosen = [s.regex for s in suggestions] if landmarks is None else landmarks
    for pattern in chosen:
        if not any(re.search(pattern, cell.output.replace("\n", " ")) for cell in cells):
            warnings.append(f"landmark {pattern!r} matches none of the notebook's outputs")
    task = Task(
        task_id=task_id,
        query=query,
        task_set="expert",
        answer=answer,
        landmarks=chosen,
        solution=[Action.execute(cell.source) for cell in cells],
        github_repo=repo,
        git_commit=commit,
    )
    return NotebookTask(task, suggestions, cells, warnings)


def task_line(task: Task) -> str:
    """The task as one line of a JSONL task file (fields at their defaults left out, the set kept)."""
    data = task.model_dump(mode="json", exclude_defaults=True)
    if task.answer is not None:
        data["answer"] = json.dumps(task.answer)  # as in the dataset: JSON text, whatever the value's type
    return json.dumps({"task_id": task.task_id, "task_set": task.task_set, **data}, ensure_ascii=False)
