"""The bundled demo suite, end to end: the gold agent solves every task with the network cut off."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.shared_runs import SharedRuns

from super_bench import load_tasks
from super_bench.construct.gold import min_runtime_problems
from super_bench.runner.results import TaskResult
from super_bench.tasks.model import MASKED_CATEGORIES


@pytest.mark.slow
@pytest.mark.parametrize("task_set", ["expert", "masked", "auto"])
def test_gold_agent_solves_every_demo_task_offline(
    tmp_path: Path, offline: list[str], shared_runs: SharedRuns, task_set: str
) -> None:
    # `super-bench run` with no arguments is the Expert set: the promise of the README. The runs are the
    # README's own commands, run once per session with the network cut off and shared with its tests.
    shared = shared_runs.get("super-bench run" if task_set == "expert" else f"super-bench run --set {task_set}")
    result, run_dir = shared.result, shared.run_dir
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"│ mean +│", result.stdout), result.stdout
    header = result.stdout.split("┡")[0]  # at 80 columns a heading may take two lines ("output / match")
    if task_set == "auto":  # the gold agent has nothing to submit there, which is no failure
        assert "submitted: no task here has an answer to submit" in " ".join(result.stdout.split())
        assert "output" not in header and "0.00" not in result.stdout
    else:
        assert "output" in header

    results = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    tasks = {t.task_id: t for t in load_tasks("demo", task_set)}
    assert sorted(r["task_id"] for r in results) == sorted(tasks)
    for row in results:
        task, metrics = tasks[row["task_id"]], row["metrics"]
        assert row["status"] == "completed", row
        if task_set != "auto":
            assert (metrics["output_match"], metrics["landmarks"]) == (1.0, 1.0), row
        if task.entrypoint:
            assert metrics["entrypoint"] == 1.0, row
            # ... and with room to spare over its min_runtime, which `super-bench doctor` checks too.
            assert min_runtime_problems(task, TaskResult.model_validate(row)) == [], row
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["n_tasks"] == len(tasks)
    assert summary["metrics"]["entrypoint" if task_set == "auto" else "output_match"] == 1.0
    # Offline, from the saved trajectories alone, every task scores as it did online.
    rescored = tmp_path / "rescored"
    offline = subprocess.run(
        [sys.executable, "-m", "super_bench", "score", str(run_dir), "--out", str(rescored), "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert offline.returncode == 0, offline.stderr
    again = {r["task_id"]: r for r in map(json.loads, (rescored / "results.jsonl").read_text().splitlines())}
    for row in results:
        assert row["mode"] == again[row["task_id"]]["mode"] == "corrected"
        assert (again[row["task_id"]]["metrics"], again[row["task_id"]]["details"]) == (row["metrics"], row["details"])
    assert json.loads(offline.stdout)["metrics"] == summary["metrics"]


def test_the_suite_covers_every_obstacle_category() -> None:
    expert = load_tasks("demo", "expert")
    masked = load_tasks("demo", "masked")
    auto = load_tasks("demo", "auto")
    assert len(expert) >= 8 and len(masked) >= 16 and len(auto) >= 8
    assert len({t.github_repo for t in expert}) >= 8
    categories = {c for t in masked for c in t.categories}
    assert categories >= set(MASKED_CATEGORIES) - {"customgoal"}
    expert_ids = {t.task_id for t in expert}
    for task in masked:
        assert task.expert_id in expert_ids, task.task_id
        assert task.categories and set(task.categories) <= set(MASKED_CATEGORIES), task.task_id
    for task in [*expert, *auto]:
        assert task.git_commit and task.solution[0].content == f"!git clone -- {task.github_repo}"
    for task in expert:
        assert 2 <= len(task.landmarks) <= 4, task.task_id
    assert all(t.min_runtime is not None and t.min_runtime < 1 for t in auto)
