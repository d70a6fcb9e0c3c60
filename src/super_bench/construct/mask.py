"""Masked tasks cut from Expert ones (``super-bench construct mask``).

For each block of an Expert solution (see ``blocks``), one Masked task ``<expert_id>_<category>``:
its pre-executed cells are the cells before the block, plus the later ones that are independent
of it; its solution is the block and every cell left after it; its query is the Expert query with
a paragraph saying what has been done and what is left (from a template, or phrased by a model);
the answer and landmarks are the Expert task's. The entrypoint is not inherited: a pre-executed
cell may already run it.

Every task is then run with the gold agent (pre-executed cells, then the solution) and kept only
if it reproduces the gold answer and landmarks. When it fails and later cells were run ahead of
the block, the task is tried again with only the cells before the block pre-executed.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from super_bench.construct.blocks import MASKABLE, CellInfo, analyse, depends
from super_bench.construct.gold import GoldCheck, check_gold
from super_bench.environment import EnvConfig
from super_bench.errors import ModelError
from super_bench.models import ChatModel, ModelRequest
from super_bench.runner.config import Reporter
from super_bench.tasks.model import Task
from super_bench.trajectory import Usage

log = logging.getLogger(__name__)

# What the agent is told has been done, and what is left to it, per category of block.
_DONE = {
    "setup": "the repository is cloned and checked out (the current directory is its root)",
    "dependencies": "the dependencies are installed",
    "data": "the data is prepared as the task asks",
    "configuration": "the configuration that the task asks for is set up",
    "cpu": "the code is adapted to run on the CPU",
    "issue": "the code changes that the task needs are made",
}
_LEFT = {
    "dependencies": "install the dependencies that the code needs",
    "data": "prepare the data as the task asks",
    "configuration": "set up the configuration that the task asks for",
    "cpu": "make the code run on the CPU (this machine has no GPU)",
    "issue": "fix the code, which fails or does not do what the task asks as it is",
    "goal": "find how to run the experiment, run it and report the result",
}


@dataclass(frozen=True)
class Split:
    """One Masked task's cells, as positions in the Expert solution."""

    category: str
    pre: list[int]  # run before the agent starts, in this order
    block: list[int]
    rest: list[int]  # the block and every later cell that was not pre-executed
    moved: list[int]  # cells of ``pre`` that come after the block in the Expert solution


# (expert, cells, split, template paragraph) -> the paragraph to append to the query
GoalWriter = Callable[[Task, list[CellInfo], Split, str], str]


def splits(cells: list[CellInfo], *, move_independent: bool = True) -> list[Split]:
    """One split per maskable category present, in the order the categories first appear."""
    found = []
    categories = dict.fromkeys(c.category for c in cells if c.category in MASKABLE)
    for category in categories:
        block = [c.index for c in cells if c.category == category]
        first = block[0]
        staying = [cells[i] for i in block]  # what a moved cell must not depend on
        moved = []
        for cell in cells[first + 1 :]:
            if cell.index in block:
                continue
            # Goal cells depend on everything; setup cells and looking around depend on where they run.
            if move_independent and cell.category not in ("goal", "setup", "other") and not depends(cell, staying):
                moved.append(cell.index)
            else:
                staying.append(cell)
        pre = [c.index for c in cells if c.index < first and c.index not in block] + moved
        rest = [c.index for c in cells if c.index >= first and c.index not in moved]
        found.append(Split(category, pre, block, rest, moved))
    return found


def template_goal(cells: list[CellInfo], split: Split) -> str:
    """The paragraph that says what has been done and what is left, from the categories of the cells."""
    done = [_DONE[c] for c in dict.fromkeys(cells[i].category for i in split.pre) if c in _DONE]
    ran = [f"`{s}`" for i in split.pre if cells[i].category == "goal" for s in cells[i].scripts]
    if ran:
        done.append(f"{_join(ran)} {'has' if len(ran) == 1 else 'have'} been run")
    later = [cells[i].category for i in split.rest if i not in split.block]
    left = [_LEFT[split.category]] + [_LEFT[c] for c in dict.fromkeys(later) if c in _LEFT and c != "goal"]
    text = "; then ".join(left)
    if split.category != "goal":
        scripts = [f"`{s}`" for i in split.rest if cells[i].category == "goal" for s in cells[i].scripts]
        text += (
            f", then run {_join(scripts)}, and report the result" if scripts else ", then run it and report the result"
        )
    intro = (
        f"Some of the required steps have already been run in this notebook: {'; '.join(done)}. "
        if done
        else "Nothing has been run in this notebook yet. "
    )
    return f"{intro}What is left to do: {text}."


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


class ModelGoalWriter:
    """Asks a chat model to phrase the paragraph, with the template's as a draft; falls back to the
    template when the model fails or says nothing."""

    def __init__(self, model: ChatModel) -> None:
        self.model = model
        self.usage = Usage()
        self.failures = 0

    def __call__(self, expert: Task, cells: list[CellInfo], split: Split, draft: str) -> str:
        request = ModelRequest(
            messages=[
                {"role": "system", "content": _SYSTEM},
                {"role": "user", "content": _prompt(expert, cells, split, draft)},
            ],
            max_tokens=600,
            temperature=0.2,
        )
        try:
            response = self.model.complete(request)
        except ModelError as e:
            self.failures += 1
            log.warning("%s_%s: the model failed (%s); the template's text is used", expert.task_id, split.category, e)
            return draft
        self.usage.add(response.usage)
        text = response.text.strip().strip("`").strip().strip('"').strip()
        if not text:
            self.failures += 1
            return draft
        return text


_SYSTEM = (
    "You write sub-problems for SUPER, a benchmark in which agents set up and run experiments from research "
    "repositories in a Jupyter notebook. A sub-problem is cut from an expert's solution: some of its cells have "
    "already been run in the agent's notebook, and the agent must do the rest."
)


def _prompt(expert: Task, cells: list[CellInfo], split: Split, draft: str) -> str:
    def show(indices: list[int]) -> str:
        return "\n\n".join(f"[cell {i + 1}]\n{cells[i].action.content}" for i in indices) or "(none)"

    return (
        f"The full task:\n<task>\n{expert.query}\n</task>\n\n"
        f"Cells already run in the agent's notebook:\n{show(split.pre)}\n\n"
        f"Cells the agent must now write and run itself (it does not see them):\n{show(split.rest)}\n\n"
        f"The part the sub-problem is about: {split.category} ({_LEFT[split.category]}).\n\n"
        "Write the paragraph that is appended to the task to tell the agent what has been done and what is "
        f"left. Here is a draft:\n{draft}\n\n"
        "Say what is left without giving away how to do it: no code from the hidden cells. Reply with the "
        "paragraph only."
    )


@dataclass
class Masked:
    """A Masked task and how its check went."""

    task: Task
    split: Split
    check: GoldCheck | None = None
    note: str | None = None  # set when this is a retry: why the first try failed

    @property
    def verified(self) -> bool:
        return self.check is not None and self.check.reproduces and not self._moved_failed()

    def _moved_failed(self) -> list[int]:
        """Cells run ahead of the block (pre-executed after the earlier ones) that failed."""
        first_moved = len(self.split.pre) - len(self.split.moved)
        return [i for i in (self.check.failed_pre_executed if self.check else []) if i >= first_moved]

    def failure(self) -> str:
        if self.check is None:
            return "not checked"
        reasons = list(self.check.problems)
        if self._moved_failed():
            reasons.append("a cell run ahead of the block failed, so it is not independent of it")
        if self.check.failed_cell:
            reasons.append(self.check.failed_cell)
        return "; ".join(reasons) or self.check.status


@dataclass
class MaskReport:
    kept: list[Masked] = field(default_factory=list)
    failed: list[Masked] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # Expert tasks without a solution, and why


def masked_task(expert: Task, split: Split, goal: str) -> Task:
    solution = list(expert.solution)
    return Task(
        task_id=f"{expert.task_id}_{split.category}",
        query=f"{expert.query.rstrip()}\n\n{goal}",
        task_set="masked",
        answer=expert.answer,
        landmarks=expert.landmarks,
        pre_execute_cells=[solution[i] for i in split.pre],
        solution=[solution[i] for i in split.rest],
        github_repo=expert.github_repo,
        git_commit=expert.git_commit,
    )


def mask_tasks(
    experts: list[Task],
    out: Path,
    *,
    writer: GoalWriter | None = None,
    env: EnvConfig | None = None,
    reporter: Reporter | None = None,
) -> MaskReport:
    """Masked tasks for every Expert task with a solution, each checked with the gold agent (its runs go
    under ``out``)."""
    report = MaskReport()
    candidates: list[tuple[Task, list[CellInfo], Split, Split | None]] = []
    for expert in experts:
        if not expert.solution:
            report.skipped.append(f"{expert.task_id}: no gold solution")
            continue
        if any(a.type == "submit" for a in expert.solution):
            report.skipped.append(f"{expert.task_id}: its solution submits a fixed answer")
            continue
        cells = analyse(expert.solution)
        strict = {s.category: s for s in splits(cells, move_independent=False)}
        found = splits(cells)
        if not found:
            report.skipped.append(f"{expert.task_id}: no block to mask")
        for split in found:
            candidates.append((expert, cells, split, strict[split.category] if split.moved else None))
    first = [_candidate(expert, cells, split, writer) for expert, cells, split, _ in candidates]
    _check(first, out / "check", env, reporter)
    retry: list[Masked] = []
    for masked, (expert, cells, _, fallback) in zip(first, candidates):
        if masked.verified:
            report.kept.append(masked)
        elif fallback is not None:
            retry.append(_candidate(expert, cells, fallback, writer))
            retry[-1].note = f"retried with only the cells before the block pre-executed ({masked.failure()})"
        else:
            report.failed.append(masked)
    _check(retry, out / "check-retry", env, reporter)
    for masked in retry:
        (report.kept if masked.verified else report.failed).append(masked)
    order = {c[0].task_id + "_" + c[2].category: i for i, c in enumerate(candidates)}
    report.kept.sort(key=lambda m: order[m.task.task_id])
    report.failed.sort(key=lambda m: order[m.task.task_id])
    return report


def _candidate(expert: Task, cells: list[CellInfo], split: Split, writer: GoalWriter | None) -> Masked:
    draft = template_goal(cells, split)
    goal = writer(expert, cells, split, draft) if writer is not None else draft
    return Masked(masked_task(expert, split, re.sub(r"\n{3,}", "\n\n", goal)), split)


def _check(masked: list[Masked], out: Path, env: EnvConfig | None, reporter: Reporter | None) -> None:
    if not masked:
        return
    checks = check_gold([m.task for m in masked], out, env=env, reporter=reporter)
    for m, check in zip(masked, checks):
        m.check = check


def failed_task(masked: Masked) -> Task:
    """A task left out by its check, kept with the reason in its metadata (``--keep-failed``)."""
    return masked.task.model_copy(update={"metadata": {**masked.task.metadata, "check_failed": masked.failure()}})
