"""A run cut short, its last results.jsonl line torn: every command counts its tasks the same way, as a
resume does (a task counts when its row is readable); `score` says which trajectories it left out and why."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from tests.support.helpers import cli

from super_bench import EnvConfig, RunConfig, SandboxConfig, run


@pytest.fixture(scope="module")
def torn(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("torn")
    sandbox = SandboxConfig(backend="local", root=root / "sandboxes")
    config = RunConfig(task_ids=["tinyreg", "tinyreg-lr"], out=root / "run", env=EnvConfig(sandbox=sandbox))
    run(config, progress=False)
    results = root / "run" / "results.jsonl"
    first, second = results.read_text().splitlines()
    results.write_text(first + "\n" + second[:60])  # the crash cut the last row short
    return root / "run"


def copy(torn: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(torn, tmp_path / "run"))


def test_score_counts_the_readable_rows_and_says_what_it_left_out(torn: Path, tmp_path: Path) -> None:
    result = cli("score", str(torn), "--out", str(tmp_path / "scored"), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["n_tasks"] == 1
    (said,) = [line for line in result.stderr.splitlines() if "without a row in results.jsonl" in line]
    assert str(torn) in said and "1 trajectory(ies)" in said and "resume the run" in said, said
    assert ".scoring-" not in result.stderr  # the run's own path is named, not a scratch copy's


def test_view_analyze_and_leaderboard_count_the_same(torn: Path, tmp_path: Path) -> None:
    viewed = cli("view", str(copy(torn, tmp_path / "view")))
    assert viewed.returncode == 0, viewed.stderr
    html = (tmp_path / "view" / "run" / "view.html").read_text()
    found = re.search(r'<script type="application/json" id="run-data">(.*?)</script>', html, re.S)
    assert found is not None and len(json.loads(found.group(1))["rows"]) == 1
    analyzed = copy(torn, tmp_path / "analyze")
    assert cli("analyze", str(analyzed)).returncode == 0
    assert json.loads((analyzed / "summary.json").read_text())["n_tasks"] == 1
    board = cli("leaderboard", str(torn), "--format", "csv")
    assert board.returncode == 0, board.stderr
    (row,) = [line for line in board.stdout.splitlines()[1:] if line]
    header = board.stdout.splitlines()[0].split(",")
    assert row.split(",")[header.index("tasks")] == "1", board.stdout
