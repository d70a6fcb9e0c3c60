"""The agent-related command line: `super-bench play`, and `run` with models, settings and budgets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.helpers import ANSWER, CLONE, TRAIN, react
from tests.support.model_server import model_server

# Each test runs agents on demo tasks end to end.
pytestmark = pytest.mark.slow


def cli(*args: str, stdin: str | None = None, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "super_bench", *args],
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,  # never the test worker's own input
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200", **env},
        timeout=600,
    )


def test_play_a_task_from_the_terminal(tmp_path: Path) -> None:
    typed = [
        CLONE,
        "%cd tinyreg",
        ":note Train as the README says.",
        TRAIN,
        ":edit",
        "configs/base.json",
        "<<<BEFORE_EDIT>>>",
        '  "l2": 0.01',
        "<<<AFTER_EDIT>>>",
        '  "l2": 0.01',
        ":end",
        "for name in ['a', 'b']:",
        "    print(name * 2)",
        "",
        ":bogus",
        f":submit {ANSWER}",
    ]
    result = cli("play", "tinyreg", "--out", str(tmp_path / "play"), stdin="\n".join(typed) + "\n", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Test MSE: 7.4031" in result.stdout and "Unknown command :bogus" in result.stdout
    assert "aa\nbb" in result.stdout and "The episode is over: submitted." in result.stdout
    summary = json.loads((tmp_path / "play" / "summary.json").read_text())
    assert summary["metrics"]["output_match"] == 1.0 and summary["metrics"]["landmarks"] == 1.0
    trajectory = json.loads((tmp_path / "play" / "tasks" / "tinyreg" / "trajectory.json").read_text())
    assert trajectory["agent"] == "human"
    assert [s["action"]["type"] for s in trajectory["steps"]] == ["execute"] * 3 + ["edit", "execute", "submit"]
    assert trajectory["steps"][2]["thought"] == "Train as the README says."


def test_play_finds_the_task_in_any_set_and_stops_at_end_of_input(tmp_path: Path) -> None:
    result = cli("play", "tinyreg_goal", "--out", str(tmp_path / "p"), stdin="print('hi')\n", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "(masked)" in result.stdout and "[run before you started]" in result.stdout
    assert "End of input: stopping without a submission." in result.stdout
    (line,) = (tmp_path / "p" / "results.jsonl").read_text().splitlines()
    assert json.loads(line)["stop_reason"] == "agent_stopped"
    result = cli("play", "no-such-task", cwd=tmp_path)
    assert result.returncode == 2 and "unknown task id(s): 'no-such-task'" in result.stderr


def test_run_with_a_mock_model_settings_and_a_token_budget(tmp_path: Path) -> None:
    script = tmp_path / "replies.txt"
    script.write_text("\n=====\n".join([react("Clone.", "execute", CLONE)] * 5 + [react("Report.", "submit", ANSWER)]))
    out = tmp_path / "run"
    result = cli(
        "run", "--agent", "react", "--model", f"mock/{script}", "--task-ids", "tinyreg", "--out", str(out),
        "--max-tokens", "3500", "--agent-setting", "temperature=0", "--agent-setting", "max_response_tokens=300",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "stopped by a budget: max_tokens 1" in result.stdout
    (line,) = (out / "results.jsonl").read_text().splitlines()
    assert json.loads(line)["stop_reason"] == "max_tokens"
    manifest = json.loads((out / "run.json").read_text())["config"]
    assert manifest["agent_settings"] == {"temperature": 0, "max_response_tokens": 300}
    assert manifest["env"]["max_tokens"] == 3500


def test_run_reports_model_configuration_errors(tmp_path: Path) -> None:
    result = cli("run", "--agent", "react-super", "--model", "openai/gpt-4o", "--out", str(tmp_path / "r"))
    assert result.returncode == 2 and "needs an API key: set OPENAI_API_KEY" in result.stderr
    result = cli("run", "--agent", "react", "--out", str(tmp_path / "r"))
    assert result.returncode == 2 and "the react agent needs a model" in result.stderr
    result = cli("run", "--agent", "react", "--model", "mock/x", "--agent-setting", "nonsense", "--out", str(tmp_path))
    assert result.returncode == 2 and "expected KEY=VALUE" in result.stderr
    result = cli("run", "--agent", "react", "--model", "mock/x", "--agent-setting", "attempts=2")
    assert result.returncode == 2 and "invalid setting for the react agent (attempts: Extra inputs" in result.stderr


def test_run_on_an_openai_compatible_server_then_rerun_from_the_cache(tmp_path: Path) -> None:
    replies = [react("Clone.", "execute", CLONE), react("Train.", "execute", f"%cd tinyreg\n{TRAIN}")]
    with model_server(*replies, react("Report.", "submit", ANSWER)) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "SUPER_BENCH_CACHE": str(tmp_path / "cache.sqlite")}
        args = ["run", "--agent", "react-super", "--model", "openai/llama3.1", "--task-ids", "tinyreg", "--seed", "5"]
        first = cli(*args, "--out", str(tmp_path / "first"), **env)
        again = cli(*args, "--out", str(tmp_path / "again"), **env)
    assert first.returncode == 0 and again.returncode == 0, first.stderr + again.stderr
    assert len(server.requests) == 3 and server.requests[0]["model"] == "llama3.1"
    assert "model: 3 calls," in first.stdout and "model: 3 calls (3 from the cache)" in again.stdout
    for out in ("first", "again"):
        summary = json.loads((tmp_path / out / "summary.json").read_text())
        assert summary["metrics"]["output_match"] == 1.0
