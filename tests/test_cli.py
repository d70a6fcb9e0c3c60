"""The command line, as a user runs it: real processes, real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def cli(*args: str, prefix: list[str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [*(prefix or []), sys.executable, "-m", "super_bench", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=600,
    )


def test_help_everywhere() -> None:
    for args in ([], ["run"], ["score"], ["tasks"], ["tasks", "validate"]):
        result = cli(*args, "--help")
        assert result.returncode == 0, result.stderr
        assert "Usage:" in result.stdout


def test_run_options_and_rescore(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = cli("run", "--set", "masked", "--task-ids", "tinyreg_goal", "--out", str(out), "--cell-timeout", "60")
    assert result.returncode == 0, result.stderr
    result = cli("score", str(out), "--json", "--mode", "reference")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["mode"] == "reference" and summary["metrics"]["output_match"] == 1.0
    result = cli("score", str(out))
    assert "tinyreg_goal" in result.stdout


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
