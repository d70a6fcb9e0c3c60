"""Reference mode against the paper's own metric functions, on every published notebook.

The oracle is ``get_metrics`` (with ``evaluate``, ``evaluate_checkpoints`` and ``evaluate_entrypoint``) of
the paper's ``evaluate_dataset.py``, read from ``../shared`` at test time: only those functions' definitions
are taken from its source and executed, with the standard library they use. Every published notebook of the
four runs is scored by both, against three generated gold tasks each: answers near and far from the
submission, falsy ones, landmarks cut from the notebook's own outputs (given cells, progress bars and colour
codes among them) and entrypoints named in its cells. Every metric value must be equal.
"""

from __future__ import annotations

import ast
import json
import logging
import os
import random
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from tests.support.helpers import REFERENCE_TRAJECTORIES

from super_bench import Task, score_trajectory
from super_bench.runner.paper_notebooks import notebook_trajectory
from super_bench.scoring import submission_of
from super_bench.trajectory import Trajectory

EVALUATOR = REFERENCE_TRAJECTORIES.parent / "super-code" / "super" / "evaluate_dataset.py"
RUNS = ("react-super_expert", "react-super_masked", "swe-agent_expert", "swe-agent_masked")
ORACLE_FUNCTIONS = ("evaluate", "evaluate_checkpoints", "evaluate_entrypoint", "get_metrics")
VARIANTS = 3

pytestmark = pytest.mark.skipif(
    not (EVALUATOR.is_file() and REFERENCE_TRAJECTORIES.is_dir()), reason="the paper's code or runs are not beside"
)


class _Step:
    """What the paper's evaluator reads of a history step."""

    def __init__(self, action: dict[str, Any], observation: str, start: datetime, end: datetime) -> None:
        self.action, self.observation = action, observation
        self.execution_start_time, self.execution_end_time = start, end


def _oracle() -> dict[str, Any]:
    tree = ast.parse(EVALUATOR.read_text(encoding="utf-8"))
    wanted = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name in ORACLE_FUNCTIONS]
    assert sorted(node.name for node in wanted) == sorted(ORACLE_FUNCTIONS), "the paper's evaluator changed shape"
    namespace: dict[str, Any] = {
        "re": re,
        "os": os,
        "json": json,
        "datetime": datetime,
        "List": list,
        "Dict": dict,
        "Union": Any,
        "logger": logging.getLogger("paper-evaluator"),
        "EnvironmentStep": _Step,
        "print": lambda *args, **kwargs: None,
    }
    exec(compile(ast.Module(body=wanted, type_ignores=[]), str(EVALUATOR), "exec"), namespace)
    return namespace


def _history(trajectory: Trajectory) -> list[_Step]:
    """The history as the paper's harness kept it: the action, the observation as stored, the times. The
    answer is the value the notebook spells (``{22896: 9}`` has integer keys), as the harness held it."""
    history = [
        _Step(
            {"type": step.action.type, "content": step.action.content}, step.raw_output, step.start_time, step.end_time
        )
        for step in trajectory.steps
    ]
    if history and trajectory.steps[-1].action.type == "submit":
        history[-1].action["content"] = submission_of(trajectory)
    return history


def _fragments(trajectory: Trajectory, rng: random.Random, count: int) -> list[str]:
    """Landmarks cut from the notebook's outputs: a few words of a line, escaped, some with a wildcard."""
    lines = [
        line
        for step in trajectory.steps
        for line in step.raw_output.replace("\r", "\n").split("\n")
        if len(line.strip()) >= 12
    ]
    found = []
    for _ in range(count):
        if not lines:
            break
        line = rng.choice(lines)
        start = rng.randrange(0, max(1, len(line) - 10))
        piece = line[start : start + rng.randint(6, 30)]
        pattern = re.escape(piece)
        if rng.random() < 0.3:  # one wildcard for each run of spaces: nothing that backtracks for long
            pattern = re.sub(r"(?:\\ )+", lambda _: r"\s+", pattern).replace("0", r"\d")
        found.append(pattern)
    return found


def _entrypoints(trajectory: Trajectory) -> list[str]:
    names = set()
    for step in trajectory.steps:
        if isinstance(step.action.content, str):
            names.update(re.findall(r"[\w./-]+\.(?:py|sh|bash)\b", step.action.content))
    return sorted(names)


def _near(value: Any, rng: random.Random) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return value + rng.choice([0.0, 0.004, -0.009, 0.02, 1])
    if isinstance(value, list):
        return [_near(v, rng) for v in value]
    if isinstance(value, dict):
        kept = {k: _near(v, rng) for k, v in value.items() if rng.random() < 0.85}
        return kept or {"missing": 1.0}
    return value


def _variants(trajectory: Trajectory, seed: str) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    submitted = trajectory.submission
    scripts = _entrypoints(trajectory)
    golds: list[Any] = [
        _near(submitted, rng) if submitted not in (None, "") else {"accuracy": 0.5},
        rng.choice([0, 0.0, {}, [], "", {"loss": 0.25, "accuracy": 1}, [0.1, 0.2]]),
        submitted if submitted not in (None, "") else 0.7,
    ]
    variants = []
    for index, gold in enumerate(golds):
        entrypoint = rng.choice(scripts) if scripts and index < 2 else rng.choice(["run.py", "train.sh", "x.ipynb"])
        landmarks = _fragments(trajectory, rng, rng.randint(1, 4)) + ([r"never\sprinted\s#42"] if index == 1 else [])
        variants.append({"answer": json.dumps(gold), "landmarks": landmarks or ["nothing"], "entrypoint": entrypoint})
    return variants


def _notebooks() -> list[tuple[str, Path]]:
    return [
        (run, folder)
        for run in RUNS
        for folder in sorted((REFERENCE_TRAJECTORIES / run).iterdir())
        if (folder / "history.ipynb").is_file()
    ]


def _ours(trajectory: Trajectory, task: Task) -> dict[str, Any]:
    metrics = score_trajectory(trajectory, task, "reference")[0]
    return {
        "submitted": int(metrics.submitted or 0),
        "output_match": metrics.output_match,
        "landmarks": metrics.landmarks,
        "entrypoint": metrics.entrypoint,
    }


@pytest.mark.slow
def test_reference_mode_equals_the_papers_functions_on_every_published_notebook() -> None:
    oracle = _oracle()
    notebooks = _notebooks()
    assert len(notebooks) == 377
    compared, differences = 0, []
    for run, folder in notebooks:
        trajectory = notebook_trajectory(folder / "history.ipynb", folder.name)
        history = _history(trajectory)
        for number, fields in enumerate(_variants(trajectory, f"{run}/{folder.name}")):
            task = Task(task_id=folder.name, query="q", **fields)
            paper = oracle["get_metrics"](history, {"task_id": folder.name, **fields})
            ours = _ours(trajectory, task)
            for metric, expected in paper.items():
                compared += 1
                if ours[metric] != expected:
                    differences.append(f"{run}/{folder.name} #{number} {metric}: paper {expected}, ours {ours[metric]}")
    assert compared == 377 * VARIANTS * 4
    assert not differences, f"{len(differences)} of {compared} differ:\n" + "\n".join(differences[:30])
