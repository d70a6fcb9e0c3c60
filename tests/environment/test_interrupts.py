"""Ctrl-C and SIGTERM in the commands a person runs by hand: what was kept is said, with the exact command
that resumes it, and a second Ctrl-C stops at once and still leaves a run that resumes."""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.sandboxes import kill_all

TWO = ["tinyreg", "tinyreg-lr"]
TINYREG = "https://github.com/super-bench-demo/tinyreg"
RESUME = re.compile(r"^resume with: (.+)$", re.MULTILINE)


@pytest.fixture
def home(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A working directory and the environment of a CLI run whose sandboxes live under it."""
    (tmp_path / "tmp").mkdir()
    scripts = Path(sys.executable).parent
    env = {**os.environ, "COLUMNS": "80", "TMPDIR": str(tmp_path / "tmp"), "PATH": f"{scripts}:{os.environ['PATH']}"}
    env.pop("RAY_ADDRESS", None)
    yield tmp_path, env
    kill_all(sandboxes_under(tmp_path / "tmp"))


def sandboxes_under(root: Path) -> list[int]:
    """Processes whose command line names a path under ``root``: the sandboxes of runs whose TMPDIR is there."""
    needle = str(root).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if needle in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def actions(path: Path, seconds: float) -> None:
    path.write_text(json.dumps([{"type": "execute", "content": f"import time; time.sleep({seconds})"}]))


def wait_for_a_cell(cwd: Path, timeout: float = 120) -> None:
    """Until the task's sandbox has run a while: in the sleeping cell."""
    deadline = time.monotonic() + timeout
    while not sandboxes_under(cwd / "tmp"):
        assert time.monotonic() < deadline, f"no kernel started within {timeout} s"
        time.sleep(0.05)
    time.sleep(3)


# The second signal is sent at once, so that it arrives while the first is still stopping the task (two
# SIGINTs that close together would be one: a signal pending twice is delivered once).
@pytest.mark.parametrize("signals", [[signal.SIGINT], [signal.SIGTERM], [signal.SIGINT, signal.SIGTERM]])
def test_an_interrupted_run_says_what_it_kept_and_the_command_that_resumes_it(
    home: tuple[Path, dict[str, str]], signals: list[signal.Signals]
) -> None:
    cwd, env = home
    actions(cwd / "actions.json", 120)
    command = ["super-bench", "run", "--agent", "replay:actions.json", "--task-ids", *TWO]
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_a_cell(cwd)
        for sent in signals:
            proc.send_signal(sent)
        start = time.monotonic()
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, stderr
    if len(signals) == 2:
        assert "stopped at once" in stderr and time.monotonic() - start < 5, stderr
    # The kernels the stop killed are no failure of the infrastructure (nor the agent's): none is reported.
    assert not re.search(r"task tinyreg\S*: ", stderr), stderr
    assert stderr.count("resume with: ") == 1, stderr
    (run_dir,) = (cwd / "runs").iterdir()
    assert f"interrupted: 0 of 2 task(s) finished, kept in runs/{run_dir.name}" in stderr
    (resume,) = RESUME.findall(stderr)
    # The run directory was a timestamped default: a plain rerun would start another, so --out is added.
    assert resume == f"super-bench run --agent replay:actions.json --task-ids {' '.join(TWO)} --out runs/{run_dir.name}"

    actions(cwd / "actions.json", 0)  # the same run, whose cell no longer sleeps
    resumed = subprocess.run(["bash", "-c", resume], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert [p.name for p in (cwd / "runs").iterdir()] == [run_dir.name], "the resume started another run"
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert sorted(r["task_id"] for r in rows) == TWO and all(r["status"] == "completed" for r in rows)


def test_ctrl_c_in_play_interrupts_the_cell_and_twice_at_the_prompt_ends_the_episode(
    home: tuple[Path, dict[str, str]],
) -> None:
    cwd, env = home
    proc = subprocess.Popen(
        ["super-bench", "play", "tinyreg"],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None
    try:
        proc.stdin.write("import time; time.sleep(120)\n")
        proc.stdin.flush()
        wait_for_a_cell(cwd)
        proc.send_signal(signal.SIGINT)  # interrupts the cell; the episode goes on
        time.sleep(3)
        proc.stdin.write("print('still', 'here')\n")
        proc.stdin.flush()
        time.sleep(3)
        proc.send_signal(signal.SIGINT)  # at the prompt: twice ends the episode
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        # Its input stays open until it ends, as a person's terminal does (closed at once, the end of the
        # input could be read before the key is handled: a stop all the same, but by end of input).
        proc.wait(timeout=60)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    # Quit by Ctrl-C: the episode is kept and scored, and the status says the player stopped it.
    assert proc.returncode == 130, stdout + stderr
    assert "KeyboardInterrupt" in stdout and "still here" in stdout and "stopped by Ctrl-C" in stderr
    assert "resume" not in stdout + stderr
    (run_dir,) = (cwd / "runs").iterdir()
    (row,) = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert row["task_id"] == "tinyreg" and row["status"] == "completed" and row["stop_reason"] == "cancelled"
    trajectory = json.loads((run_dir / row["trajectory"]).read_text())
    codes = [s["action"]["content"] for s in trajectory["steps"] if not s.get("pre_executed")]
    assert codes == ["import time; time.sleep(120)", "print('still', 'here')"]
    # The folder is a finished run, which the other commands take.
    for command in (["view", str(run_dir)],):  # verify takes it too, but replays the two-minute cell
        taken = subprocess.run(["super-bench", *command], cwd=cwd, env=env, capture_output=True, text=True)
        assert taken.returncode == 0, taken.stdout + taken.stderr


# -- verify, doctor and construct: each says what is true for it ----------------------------------
def holding_cell(cwd: Path) -> dict[str, str]:
    """A cell that says it started, then waits while ``cwd/hold`` exists (seen by the local sandbox)."""
    started, hold = cwd / "started", cwd / "hold"
    code = f"import os, time\nopen({str(started)!r}, 'w').close()\nwhile os.path.exists({str(hold)!r}):\n    time.sleep(0.1)"
    return {"type": "execute", "content": code}


def interrupted(cwd: Path, env: dict[str, str], command: list[str]) -> str:
    """The stderr of ``command`` stopped by one Ctrl-C while its holding cell runs (exit status 130)."""
    (cwd / "hold").touch()
    (cwd / "started").unlink(missing_ok=True)
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (cwd / "started").exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the holding cell never ran"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    (cwd / "hold").unlink()
    assert proc.returncode == 130, stderr
    assert "rerun the same command" not in stderr and "Traceback" not in stderr, stderr
    return stderr


def resumed(cwd: Path, env: dict[str, str], stderr: str) -> subprocess.CompletedProcess[str]:
    (resume,) = RESUME.findall(stderr)
    return subprocess.run(["bash", "-c", resume], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def task_file(cwd: Path) -> None:
    """tinyreg, whose gold solution starts with the holding cell."""
    from super_bench import load_tasks

    (task,) = load_tasks("demo", "expert", task_ids=["tinyreg"])
    record = task.model_dump(mode="json")
    record["solution"] = [holding_cell(cwd), *record["solution"]]
    (cwd / "tasks.jsonl").write_text(json.dumps(record) + "\n")


def test_an_interrupted_verification_says_what_it_kept_and_resumes(home: tuple[Path, dict[str, str]]) -> None:
    cwd, env = home
    (cwd / "actions.json").write_text(json.dumps([holding_cell(cwd)]))
    run = ["super-bench", "run", "--agent", "replay:actions.json", "--task-ids", *TWO, "--sandbox", "local"]
    made = subprocess.run([*run, "--out", "the-run"], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr

    # The local sandbox (which sees the holding file) cannot cut the network.
    verify = ["super-bench", "verify", "the-run", "--sandbox", "local", "--network", "on"]
    stderr = interrupted(cwd, env, [*verify, "--redo"])
    assert "stopping the running replays (Ctrl-C again to stop at once)" in stderr
    assert "interrupted: 0 of 2 replay(s) finished, kept in the-run/verify.jsonl" in stderr
    # The same command resumes (the run directory is named), without --redo, which would start afresh.
    assert RESUME.findall(stderr) == [" ".join(verify)]
    again = resumed(cwd, env, stderr)
    assert again.returncode != 130, again.stderr
    rows = [json.loads(line) for line in (cwd / "the-run" / "verify.jsonl").read_text().splitlines()]
    assert sorted(r["task_id"] for r in rows) == TWO


def test_an_interrupted_doctor_says_what_it_kept_and_the_command_that_resumes_it(
    home: tuple[Path, dict[str, str]],
) -> None:
    cwd, env = home
    task_file(cwd)
    stderr = interrupted(cwd, env, ["super-bench", "doctor", "--source", "tasks.jsonl", "--sandbox", "local"])
    (run_dir,) = (cwd / "runs").iterdir()
    assert f"interrupted: 0 of 1 task(s) finished, kept in runs/{run_dir.name}" in stderr
    assert RESUME.findall(stderr) == [
        f"super-bench doctor --source tasks.jsonl --sandbox local --out runs/{run_dir.name}"
    ]
    again = resumed(cwd, env, stderr)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "reproduces" in again.stdout and [p.name for p in (cwd / "runs").iterdir()] == [run_dir.name]


@pytest.mark.parametrize("keep", [True, False])
def test_an_interrupted_mask_says_what_it_kept_and_whether_it_resumes(
    home: tuple[Path, dict[str, str]], keep: bool
) -> None:
    cwd, env = home
    task_file(cwd)
    command = ["super-bench", "construct", "mask", "--source", "tasks.jsonl", "--out", "masked.jsonl"]
    command += ["--sandbox", "local", *(["--runs", "checks"] if keep else [])]
    stderr = interrupted(cwd, env, command)
    assert not (cwd / "masked.jsonl").exists()
    if keep:
        assert "interrupted: nothing was written to masked.jsonl; 0 check run(s) finished, kept in checks" in stderr
        assert RESUME.findall(stderr) == [" ".join(command)]
    else:
        # Nothing is kept: no resume is promised, and the advice names the option that keeps the check runs.
        assert "the check runs were in a temporary folder, not kept; nothing to resume" in stderr
        assert f"give --runs: {' '.join(command)} --runs checks" in stderr.replace("\n", " ")
        assert not RESUME.findall(stderr)


def stopped_when(command: list[str], cwd: Path, env: dict[str, str], ready: Callable[[], bool], **io: Any) -> str:
    """What ``command`` printed (stdout and stderr) when stopped by Ctrl-C once ``ready()``; it exits 130."""
    proc = subprocess.Popen(command, cwd=cwd, env=env, text=True, **io)
    try:
        deadline = time.monotonic() + 120
        while not ready():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "never ready to be interrupted"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, (out, err)
    return (out or "") + (err or "")


def test_autogen_stopped_while_the_model_is_asked_says_nothing_was_added(home: tuple[Path, dict[str, str]]) -> None:
    cwd, env = home
    asked: list[socket.socket] = []
    with socket.create_server(("127.0.0.1", 0)) as server:  # a model server that never answers

        def accept() -> None:
            with contextlib.suppress(OSError):
                while True:
                    asked.append(server.accept()[0])

        threading.Thread(target=accept, daemon=True).start()
        env = {
            **env,
            "OPENAI_BASE_URL": f"http://127.0.0.1:{server.getsockname()[1]}/v1",
            "OPENAI_API_KEY": "test",
            "SUPER_BENCH_CACHE": str(cwd / "replies.sqlite"),
        }
        command = ["super-bench", "construct", "autogen", TINYREG, "--model", "openai/gpt-4o", "--out", "auto.jsonl"]
        command.append("--offline")
        shown = stopped_when(command, cwd, env, lambda: bool(asked), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for connection in asked:
            connection.close()
    assert not (cwd / "auto.jsonl").exists()
    expected = (
        f"interrupted: no task was added to auto.jsonl; the model's replies so far are cached: {' '.join(command)}"
    )
    assert expected in shown and "Traceback" not in shown, shown


def test_from_notebook_stopped_at_its_prompt_says_nothing_was_added(home: tuple[Path, dict[str, str]]) -> None:
    cwd, env = home
    made = subprocess.run(
        ["super-bench", "run", "--task-ids", "tinyreg", "--sandbox", "local", "--out", "gold"],
        cwd=cwd,
        env=env,
        capture_output=True,
        timeout=300,
    )
    assert made.returncode == 0, made.stderr
    notebook = cwd / "gold" / "tasks" / "tinyreg" / "trajectory.ipynb"
    command = [
        "super-bench",
        "construct",
        "from-notebook",
        str(notebook),
        "--repo",
        TINYREG,
        "--query",
        "Report the MSE.",
    ]
    controller, terminal = os.openpty()  # the landmarks are reviewed at a terminal only
    seen = bytearray()

    def at_the_prompt() -> bool:
        if select.select([controller], [], [], 0)[0]:
            seen.extend(os.read(controller, 65536))
        return b"keep it?" in seen

    try:
        shown = stopped_when(
            [*command, "--out", "expert.jsonl"],
            cwd,
            env,
            at_the_prompt,
            stdin=terminal,
            stdout=terminal,
            stderr=terminal,
        )
        os.close(terminal)
        with contextlib.suppress(OSError):
            while chunk := os.read(controller, 65536):
                seen.extend(chunk)
    finally:
        os.close(controller)
    assert shown == ""  # all of it went to the terminal
    text = seen.decode().replace("\r", "")
    assert "stopping the task's construction" in text and "running tasks" not in text, text
    assert "interrupted: no task was added to expert.jsonl; run the command again to start over" in text, text
    assert "Aborted" not in text and not (cwd / "expert.jsonl").exists()
