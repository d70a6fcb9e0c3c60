"""A run directory cannot lose its identity silently: a lost or unreadable run.json is refused by name, with the
command that keeps the results (``--adopt``), which checks each row against the settings given; duplicate rows and
missing trajectories are noticed (docs/runner.md#resume, docs/run-directory.md)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from super_bench.runner.rundir import RunDir

pytestmark = pytest.mark.slow

TASKS = ["--sandbox", "local", "--task-ids", "tinyreg", "tinyreg-lr"]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "super_bench", "run", *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "COLUMNS": "400"},
        timeout=600,
    )


def rows(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


@pytest.fixture
def finished(tmp_path: Path) -> Path:
    out = tmp_path / "run"
    result = cli(*TASKS, "--out", str(out))
    assert result.returncode == 0, result.stderr
    return out


def test_a_lost_run_json_is_refused_naming_the_fix_which_keeps_every_valid_row(finished: Path) -> None:
    before = (finished / "results.jsonl").read_text()
    (finished / "run.json").unlink()
    other = cli(*TASKS, "--out", str(finished), "--max-steps", "3")
    assert other.returncode == 2
    error = other.stderr.strip().splitlines()[-1]
    assert f"{finished}/run.json is missing" in error and "holds 2 result(s)" in error
    assert "; to keep them: " in error
    assert error.endswith(f" run {' '.join(TASKS)} --out {finished} --max-steps 3 --adopt")
    assert (finished / "results.jsonl").read_text() == before and not (finished / "run.json").exists()

    # Adopting them with other settings than they were run with is refused: the rows say so.
    mixed = cli(*TASKS, "--out", str(finished), "--max-steps", "3", "--adopt")
    assert mixed.returncode == 2
    assert "2 of the 2 result(s)" in mixed.stderr and "were run with other settings than these" in mixed.stderr
    assert (finished / "results.jsonl").read_text() == before

    # With the run's own settings (and one task more), every row is kept and run.json rebuilt.
    adopted = cli(*TASKS, "nbsent", "--out", str(finished), "--adopt")
    assert adopted.returncode == 0, adopted.stderr
    assert "adopted 2 result(s) (2 checked against these settings, 0 too old to say)" in adopted.stderr
    kept = rows(finished)
    assert [json.dumps(r, sort_keys=True) for r in kept[:2]] == [
        json.dumps(json.loads(line), sort_keys=True) for line in before.splitlines()
    ]
    assert [r["task_id"] for r in kept] == ["tinyreg", "tinyreg-lr", "nbsent"]
    manifest = json.loads((finished / "run.json").read_text())
    assert manifest["identity"]["env.max_steps"] == 100 and manifest["config"]["adopt"] is True
    assert len({r["identity_sha256"] for r in kept}) == 1


@pytest.mark.parametrize("garbage", ["{not json", '{"identity": ["agent"]}', ""])
def test_garbage_in_run_json_is_refused_naming_the_file_and_the_way_out_and_set_aside_on_adoption(
    finished: Path, garbage: str
) -> None:
    before = (finished / "results.jsonl").read_text()
    (finished / "run.json").write_text(garbage)
    refused = cli(*TASKS, "--out", str(finished))
    assert refused.returncode == 2
    assert str(finished / "run.json") in refused.stderr and "--adopt" in refused.stderr and "--redo" in refused.stderr
    assert "Traceback" not in refused.stderr and (finished / "run.json").read_text() == garbage
    adopted = cli(*TASKS, "--out", str(finished), "--adopt")
    assert adopted.returncode == 0, adopted.stderr
    assert (finished / "run.json.damaged").read_text() == garbage  # nothing lost
    assert (finished / "results.jsonl").read_text() == before  # nothing ran again
    assert json.loads((finished / "run.json").read_text())["identity"]["agent"] == "gold"


def test_rows_too_old_to_check_are_adopted_only_once_confirmed(finished: Path) -> None:
    old = [{k: v for k, v in r.items() if k != "identity_sha256"} | {"schema_version": 4} for r in rows(finished)]
    (finished / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in old))
    (finished / "run.json").unlink()
    unconfirmed = cli(*TASKS, "--out", str(finished), "--adopt")
    assert unconfirmed.returncode == 2
    assert "2 result(s) in" in unconfirmed.stderr and '"env.max_steps": 100' in unconfirmed.stderr
    assert "add --yes" in unconfirmed.stderr
    confirmed = cli(*TASKS, "--out", str(finished), "--adopt", "--yes")
    assert confirmed.returncode == 0, confirmed.stderr
    assert "(0 checked against these settings, 2 too old to say)" in confirmed.stderr
    assert [r["started_at"] for r in rows(finished)] == [r["started_at"] for r in old]
    # With run.json whole again, --adopt has nothing to adopt and asks nothing.
    again = cli(*TASKS, "--out", str(finished), "--adopt")
    assert again.returncode == 0 and "cannot be checked" not in again.stderr, again.stderr


def test_a_duplicate_row_is_reported_and_the_first_kept(finished: Path, caplog: pytest.LogCaptureFixture) -> None:
    first = rows(finished)[0]
    forged = {**first, "metrics": {**first["metrics"], "output_match": 0.0}}
    with (finished / "results.jsonl").open("a") as f:
        f.write(json.dumps(forged) + "\n")
    with caplog.at_level(logging.WARNING):
        read = RunDir(finished).read_results()
    assert [r.metrics.output_match for r in read] == [1.0, 1.0]
    assert "a second row of tinyreg (epoch 1) is ignored; the first is kept" in caplog.text
    resumed = cli(*TASKS, "--out", str(finished))
    assert resumed.returncode == 0, resumed.stderr
    assert "a second row of tinyreg" in resumed.stderr
    assert [r["metrics"]["output_match"] for r in rows(finished)] == [1.0, 1.0]  # rewritten without it


def test_a_finished_row_whose_trajectory_is_gone_runs_again(finished: Path) -> None:
    (finished / "tasks" / "tinyreg-lr" / "trajectory.json").unlink()
    resumed = cli(*TASKS, "--out", str(finished))
    assert resumed.returncode == 0, resumed.stderr
    assert "the trajectory of tinyreg-lr (epoch 1), tasks/tinyreg-lr/trajectory.json, is missing" in resumed.stderr
    assert [r["task_id"] for r in rows(finished)] == ["tinyreg", "tinyreg-lr"]
    assert (finished / "tasks" / "tinyreg-lr" / "trajectory.json").is_file()


def test_a_row_naming_a_trajectory_outside_the_run_runs_again(finished: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.json"
    outside.write_text("{}")
    kept = rows(finished)
    kept[0]["trajectory"] = str(outside)
    (finished / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))
    resumed = cli(*TASKS, "--out", str(finished))
    assert resumed.returncode == 0, resumed.stderr
    assert f"the trajectory of tinyreg (epoch 1), {outside}, is missing: the task runs again" in resumed.stderr
    assert rows(finished)[-1]["trajectory"] == "tasks/tinyreg/trajectory.json"
    assert outside.read_text() == "{}"
