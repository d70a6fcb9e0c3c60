"""A run directory is anyone's data (docs/threat-model.md, "Readers of run directories"): ``verify`` runs
nothing on the host and opens nothing the run names (its backend, interpreter, caches, mirrors, paths
outside it); ``score`` and ``view`` read only inside it; what a run asked for and what was refused is
printed and recorded. And what reaches the terminal from such a directory is shown, never obeyed
("The terminal")."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.helpers import cli, payloads, step, trajectory
from tests.support.hostile_runs import make_hostile, recorded_run
from tests.support.sandboxes import backend_settings

from super_bench import EnvConfig, SandboxConfig
from super_bench.errors import ConfigError, RunDirError
from super_bench.report.viewer import build_view
from super_bench.runner import verify_env
from super_bench.runner.rescore import rescore
from super_bench.runner.rundir import RunDir
from super_bench.runner.verify import verify
from super_bench.runner.verify_env import replay_environment
from super_bench.runner.verify_records import VerifySummary


@pytest.mark.slow
def test_verify_of_a_crafted_run_runs_nothing_on_the_host_and_says_what_it_refused(tmp_path: Path) -> None:
    backend_settings("bwrap")
    marker = tmp_path / "host-marker"
    out = recorded_run(
        tmp_path,
        [{"type": "execute", "content": f"!id > {marker}"}, {"type": "submit", "content": {"uid": 0}}],
    )
    assert marker.exists()  # the original run was local: the action did run on its host
    marker.unlink()
    make_hostile(out, marker)
    result = cli("verify", str(out))
    assert not marker.exists() and not Path(f"{marker}.probed").exists(), "the run's code ran on the host"
    assert "replays run in: bwrap, network off" in result.stderr, result.stderr
    for name in ("backend", "network", "task_python", "hf_cache", "offline_bundle", "git_mirrors", "env", "pip_index"):
        assert f"refused from run.json: {name} = " in result.stderr, (name, result.stderr)
    summary = VerifySummary.model_validate_json((out / "verify-summary.json").read_text())
    assert summary.environment is not None
    used = summary.environment.sandbox
    assert (used["backend"], used["network"], used["task_python"], used["hf_cache"]) == ("bwrap", False, None, None)
    assert used["git_mirrors"] == {} and used["env"] == {} and used["offline_bundle"] is None
    assert summary.environment.asked["hf_cache"] == "/" and summary.environment.given == []
    assert summary.infra_errors == 0


def test_verify_refuses_the_local_sandbox_unless_the_caller_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    out.mkdir()
    asked = EnvConfig(cell_timeout=7, sandbox=SandboxConfig(backend="local", wall_time_limit=50))
    (out / "run.json").write_text(json.dumps({"schema_version": 1, "config": {"env": asked.model_dump(mode="json")}}))
    env, _, record = replay_environment(RunDir(out), {})
    assert (env.sandbox.backend, env.sandbox.network, env.cell_timeout, env.sandbox.wall_time_limit) == (
        "bwrap",
        False,
        7,
        50,  # the run's budgets and limits kept
    )
    assert [line.split(" = ")[0] for line in record.refused] == ["backend", "network"]
    env, _, record = replay_environment(RunDir(out), {"backend": "local"})
    assert env.sandbox.backend == "local" and record.given == ["backend"]
    # A machine where bwrap does not work: "auto" would be the local sandbox, which only "local" may choose.
    monkeypatch.setattr(verify_env, "resolve_backend", lambda name: "local" if name == "auto" else name)
    with pytest.raises(ConfigError, match="--sandbox local is given"):
        replay_environment(RunDir(out), {"backend": "auto"})


def test_a_trajectory_named_outside_the_run_directory_is_not_read(tmp_path: Path) -> None:
    secret = tmp_path / "elsewhere"
    secret.mkdir()
    (secret / "trajectory.json").write_text('{"task_id": "t", "query": "SECRET-7731", "steps": [], "submission": 1}')
    out = tmp_path / "run"
    (out / "tasks").mkdir(parents=True)
    (out / "run.json").write_text(json.dumps({"schema_version": 1, "config": {}}))
    rows = [
        {"task_id": "a", "task_set": "expert", "status": "completed", "trajectory": str(secret / "trajectory.json")},
        {"task_id": "b", "task_set": "expert", "status": "completed", "trajectory": "../elsewhere/trajectory.json"},
    ]
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (out / "tasks.jsonl").write_text("".join(json.dumps({"task_id": t, "query": "q"}) + "\n" for t in "abct"))
    (out / "tasks" / "c").symlink_to(secret)  # a task folder that is a link out
    outcome = verify(out, sandbox={**backend_settings("bwrap")})
    assert [r.reproduced for r in outcome.rows] == [None, None]
    assert all("outside the run directory" in (r.reason or "") for r in outcome.rows), outcome.rows
    scored = rescore(out)
    assert {r.task_id for r in scored.results} == {"a", "b"}  # the linked folder c is not read
    shown = json.dumps(payloads(build_view(out).read_text()))
    assert "outside the run directory" in shown and "SECRET-7731" not in shown
    (out / "verify").rename(out / "verify-old")
    (out / "verify").symlink_to(secret)  # --redo would empty the folder it points to
    with pytest.raises(RunDirError, match="outside the run directory"):
        verify(out, redo=True, sandbox={**backend_settings("bwrap")})
    assert (secret / "trajectory.json").exists()


HOSTILE_ID = "x\x1b]8;;http://evil.example/\x1b\\link\x1b]8;;\x1b\\[/red][link=http://e]y[/link]\x1b[2J"


@pytest.mark.parametrize("command", ["verify", "score"])
def test_agent_text_reaches_the_terminal_shown_not_obeyed(tmp_path: Path, command: str) -> None:
    """Task ids and reasons from a run directory, through the real CLI on a terminal Rich styles: no ESC
    from the data, no OSC-8 link, and a stray ``[/red]`` printed, not crashing the command."""
    out = tmp_path / "run"
    (out / "tasks").mkdir(parents=True)
    (out / "run.json").write_text(
        json.dumps({"schema_version": 1, "config": {"env": {"sandbox": {"hf_cache": HOSTILE_ID}}}})
    )
    (out / "tasks.jsonl").write_text(json.dumps({"task_id": HOSTILE_ID, "query": "q"}) + "\n")
    row = {"task_id": HOSTILE_ID, "task_set": "expert", "status": "completed", "trajectory": "tasks/none"}
    (out / "results.jsonl").write_text(json.dumps(row) + "\n")
    env = {**os.environ, "COLUMNS": "300", "FORCE_COLOR": "1", "TERM": "xterm-256color"}
    args = [command, str(out), *(["--sandbox", "bwrap"] if command == "verify" else [])]
    if command == "verify":
        backend_settings("bwrap")
    result = subprocess.run(
        [sys.executable, "-m", "super_bench", *args], capture_output=True, text=True, env=env, timeout=120
    )
    printed = result.stdout + result.stderr
    assert "Traceback" not in printed and "MarkupError" not in printed, printed
    assert "\x1b]" not in printed and "\x1b[2J" not in printed, repr(printed)
    plain = re.sub(r"\x1b\[[0-9;]*m", "", printed)  # Rich's own styles: the only ESC sequences left
    assert "\x1b" not in plain, repr(printed)
    assert "x␛]8;;http://evil.example/␛\\link␛]8;;␛\\[/red][link=http://e]y[/link" in plain, repr(printed)


def test_analyze_reads_trajectories_inside_the_run_only_and_shows_agent_text_not_obeyed(tmp_path: Path) -> None:
    """``analyze`` reads no trajectory a row names outside the run, none through a task folder or a
    trajectory.json that is a link; the quoted line an agent's output made reaches the terminal shown."""
    from super_bench.runner.analyze import analyze_run

    secret = tmp_path / "elsewhere"
    secret.mkdir()

    def timed_out(task_id: str, output: str) -> str:
        recorded = trajectory(step(0, {"type": "execute", "content": "!x"}, output, outcome="timeout"))
        return recorded.model_copy(update={"task_id": task_id}).model_dump_json()

    (secret / "trajectory.json").write_text(timed_out("a", "SECRET-7731"))
    out = tmp_path / "run"
    (out / "tasks" / "d").mkdir(parents=True)
    (out / "tasks" / "d" / "trajectory.json").symlink_to(secret / "trajectory.json")  # a file that is a link
    (out / "tasks" / "c").symlink_to(secret)  # a task folder that is a link out
    (out / "tasks" / "h").mkdir()
    (out / "tasks" / "h" / "trajectory.json").write_text(timed_out("h", f"died {HOSTILE_ID}"))
    rows = [
        {"task_id": t, "task_set": "expert", "status": "completed", "trajectory": path}
        for t, path in [
            ("a", str(secret / "trajectory.json")),
            ("b", "../elsewhere/trajectory.json"),
            ("c", "tasks/c/trajectory.json"),
            ("d", "tasks/d/trajectory.json"),
            ("h", "tasks/h/trajectory.json"),
        ]
    ]
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    outcome = analyze_run(out)
    causes = {r.task_id: r.failure for r in outcome.results}
    assert [t for t, failure in causes.items() if failure is not None] == ["h"]  # no trajectory outside was read
    assert "SECRET-7731" not in (out / "results.jsonl").read_text()
    env = {**os.environ, "COLUMNS": "300", "FORCE_COLOR": "1", "TERM": "xterm-256color"}
    result = subprocess.run(
        [sys.executable, "-m", "super_bench", "analyze", str(out)], capture_output=True, text=True, env=env, timeout=120
    )
    printed = result.stdout + result.stderr
    assert result.returncode == 0 and "Traceback" not in printed, printed
    assert "\x1b]" not in printed and "\x1b[2J" not in printed, repr(printed)
    plain = re.sub(r"\x1b\[[0-9;]*m", "", printed)
    assert "\x1b" not in plain and "SECRET-7731" not in plain, repr(printed)
    assert "died x␛]8;;http://evil.example/␛\\link" in plain, repr(printed)  # the quote, shown
