"""Building blocks of the demo tasks: cells, queries, and Masked tasks cut from Expert ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

COMMITS = json.loads(
    (Path(__file__).resolve().parents[2] / "src" / "super_bench" / "demo" / "bundles" / "commits.json").read_text()
)
URL = "https://github.com/super-bench-demo/{}"
ANSWER_FORMAT = "Report {what} as a json structured as follows: {example} (replace 0.0 with the actual values)."
MASKED_INTRO = (
    "\n\nSome of the required steps have already been run in this notebook: the repository is cloned and checked "
    "out, and the current directory is its root. What is left to do: {goal}"
)

Cell = dict[str, str]
Row = dict[str, Any]


def execute(code: str) -> Cell:
    return {"type": "execute", "content": code}


def edit(path: str, before: str, after: str, context: str = "") -> Cell:
    """An edit action in the SUPER format: replace the ``before`` lines of ``path`` by ``after``."""
    lines = [path, *([context] if context else []), "<<<BEFORE_EDIT>>>", before, "<<<AFTER_EDIT>>>", after]
    return {"type": "edit", "content": "\n".join(lines)}


def setup_cells(repo: str) -> list[Cell]:
    # "--": a repository argument is never read as an option of git, in gold solutions as in the harness.
    return [execute(f"!git clone -- {URL.format(repo)}"), execute(f"%cd {repo}\n!git checkout {COMMITS[repo]}")]


def repo_footer(repo: str) -> str:
    return f"\n\nGit repository: {URL.format(repo)}\nCommit: {COMMITS[repo]}"


def json_answer_cell(expression: str) -> Cell:
    return execute(f"import json\nprint(json.dumps({expression}))")


def expert_query(task: str, what: str, example: dict[str, float], instructions: list[str], repo: str) -> str:
    answer = ANSWER_FORMAT.format(what=what, example=json.dumps(example))
    steps = "\n".join(f"{i}. {line}" for i, line in enumerate(instructions, start=1))
    return f"{task} {answer}\n\nAdditional instructions:\n{steps}{repo_footer(repo)}"


def expert(
    task_id: str, repo: str, query: str, answer: Any, landmarks: list[str], solution: list[Cell], **extra: Any
) -> Row:
    return {
        "task_id": task_id,
        "query": query,
        "github_repo": URL.format(repo),
        "git_commit": COMMITS[repo],
        "answer": json.dumps(answer),
        "landmarks": landmarks,
        "solution": solution,
        **extra,
    }


def masked(source: Row, category: str, pre: list[Cell], solution: list[Cell], goal: str) -> Row:
    """A Masked task cut from an Expert one: its cells are split into pre-executed ones and the gold rest.

    The split must use every cell of the Expert solution exactly once, in its order within each part.
    """
    cells = source["solution"]
    if sorted(map(cells.index, pre + solution)) != list(range(len(cells))) or any(
        list(map(cells.index, part)) != sorted(map(cells.index, part)) for part in (pre, solution)
    ):
        raise ValueError(f"{source['task_id']}_{category}: the cells do not split the Expert solution")
    # The answer and landmarks carry over; the entrypoint does not, since a pre-executed cell may already run it.
    left_out = ("task_id", "query", "solution", "entrypoint", "min_runtime")
    inherited = {k: v for k, v in source.items() if k not in left_out}
    return {
        "task_id": f"{source['task_id']}_{category}",
        "query": source["query"] + MASKED_INTRO.format(goal=goal),
        **inherited,
        "pre_execute_cells": [json.dumps(cell) for cell in pre],
        "solution": solution,
    }


def auto(task_id: str, repo: str, query: str, entrypoint: str, solution: list[Cell], min_runtime: float) -> Row:
    return {
        "task_id": task_id,
        "query": query + repo_footer(repo),
        "github_repo": URL.format(repo),
        "git_commit": COMMITS[repo],
        "entrypoint": entrypoint,
        "min_runtime": min_runtime,
        "solution": solution,
    }
