"""The command line, as a user runs it: real processes, real files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.support.helpers import cli


@pytest.mark.slow
def test_help_everywhere() -> None:
    for args in ([], ["run"], ["score"], ["tasks"], ["tasks", "validate"]):
        result = cli(*args, "--help")
        assert result.returncode == 0, result.stderr
        assert "Usage:" in result.stdout


@pytest.mark.slow
def test_run_options_and_rescore(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = cli("run", "--set", "masked", "--task-ids", "tinyreg_goal", "--out", str(out), "--cell-timeout", "60")
    assert result.returncode == 0, result.stderr
    before = (out / "results.jsonl").read_bytes(), (out / "summary.json").read_bytes()
    result = cli("score", str(out), "--json", "--mode", "reference")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["mode"] == "reference" and summary["metrics"]["output_match"] == 1.0
    # A new run directory beside the folder of runs (not among them), and the run is left as it was.
    rescored = tmp_path.with_name(f"{tmp_path.name}-rescored") / "run-reference"
    assert json.loads((rescored / "summary.json").read_text()) == summary
    assert ((out / "results.jsonl").read_bytes(), (out / "summary.json").read_bytes()) == before
    manifest = json.loads((rescored / "run.json").read_text())
    assert manifest["identity"]["mode"] == "reference" and manifest["rescored"][-1]["from"] == str(out.resolve())
    copied = rescored / "tasks" / "tinyreg_goal" / "trajectory.json"
    assert copied.stat().st_ino == (out / "tasks" / "tinyreg_goal" / "trajectory.json").stat().st_ino  # linked
    again = cli("score", str(out), "--mode", "reference")  # an earlier re-scoring of the same run is replaced
    assert again.returncode == 0 and "tinyreg_goal" in again.stdout, again.stderr
    taken = cli("score", str(out), "--out", str(tmp_path))
    assert taken.returncode == 2 and "not a re-scoring of" in taken.stderr
    in_place = cli("score", str(out), "--in-place", "--mode", "reference", "--json")
    assert in_place.returncode == 0, in_place.stderr
    assert json.loads((out / "summary.json").read_text())["mode"] == "reference"
    both = cli("score", str(out), "--in-place", "--out", str(tmp_path / "x"))
    assert both.returncode == 2 and "--in-place" in both.stderr


@pytest.mark.slow
def test_a_run_that_scored_nothing_fails(tmp_path: Path) -> None:
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\nexit 1\n")
    broken.chmod(0o755)
    out = tmp_path / "run"
    args = ["--task-ids", "tinyreg", "--out", str(out), "--task-python", str(broken), "--infra-retries", "0"]
    result = cli("run", *args)
    assert result.returncode == 3, result.stdout + result.stderr
    assert "no task could be scored" in result.stderr
    assert json.loads((out / "summary.json").read_text())["n_scored"] == 0
    scored = cli("score", str(out), "--in-place")
    assert scored.returncode == 3 and "no task could be scored" in scored.stderr


@pytest.mark.slow
def test_tasks_list_and_show() -> None:
    result = cli("tasks", "list")
    assert result.returncode == 0 and "tinyreg" in result.stdout
    result = cli("tasks", "list", "--set", "masked", "--json")
    assert json.loads(result.stdout.splitlines()[0])["task_set"] == "masked"
    result = cli("tasks", "show", "tinyreg")
    assert json.loads(result.stdout)["answer"] == {"test_mse": 7.4031}


def test_tasks_validate(tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps({"task_id": "a", "query": "q", "answer": '{"x": 1}'}) + "\n")
    assert cli("tasks", "validate", str(good)).returncode == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"task_id": "a", "answer": "1"})
        + "\n"
        + json.dumps({"task_id": "b", "query": "q", "landmarks": ["(unclosed"]})
        + "\n"
    )
    result = cli("tasks", "validate", str(bad))
    assert result.returncode == 1
    assert f"{bad}:1 (task 'a'): field 'query'" in result.stderr
    assert f"{bad}:2 (task 'b'): field 'landmarks'" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--task-ids", "tinyreq"], "unknown task id(s): 'tinyreq' (did you mean tinyreg"),
        (["run", "--source", "/nonexistent/tasks.jsonl"], "does not exist"),
        (["run", "--agent", "nope"], "unknown agent 'nope'"),
        (["run", "--sandbox", "nope", "--limit", "1"], "unknown sandbox backend 'nope'"),
        (["tasks", "show", "nope"], "unknown task id(s)"),
        (["run", "--agent", "gold", "--model", "openai/gpt-4o"], "the gold agent uses no model"),
        (["run", "--agent", "replay:x.json", "--model", "mock/m"], "the replay agent uses no model"),
    ],
)
def test_bad_input_gets_one_clear_line(args: list[str], message: str, tmp_path: Path) -> None:
    result = cli(*args, "--out", str(tmp_path / "x")) if args[0] == "run" else cli(*args)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_a_malformed_task_file_is_reported_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text('{"task_id": "a", "query": "q"}\n{broken\n')
    result = cli("run", "--source", str(path), "--out", str(tmp_path / "run"))
    assert result.returncode == 2
    assert f"{path}:2: not valid JSON" in result.stderr and "--skip-invalid" in result.stderr
