"""Ctrl-C and SIGTERM in the commands a person runs by hand: what was kept is said, with the exact command
that resumes it, and a second Ctrl-C stops at once and still leaves a run that resumes."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

TWO = ["tinyreg", "tinyreg-lr"]
RESUME = re.compile(r"^resume with: (.+)$", re.MULTILINE)


@pytest.fixture
def home(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A working directory and the environment of a CLI run whose sandboxes live under it."""
    (tmp_path / "tmp").mkdir()
    scripts = Path(sys.executable).parent
    env = {**os.environ, "COLUMNS": "80", "TMPDIR": str(tmp_path / "tmp"), "PATH": f"{scripts}:{os.environ['PATH']}"}
    env.pop("RAY_ADDRESS", None)
    yield tmp_path, env
    for pid in sandboxes_under(tmp_path / "tmp"):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


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
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, stdout + stderr
    assert "KeyboardInterrupt" in stdout and "still here" in stdout
    assert "resume" not in stdout + stderr
    (run_dir,) = (cwd / "runs").iterdir()
    (row,) = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert row["task_id"] == "tinyreg" and row["status"] == "completed"
    trajectory = json.loads((run_dir / row["trajectory"]).read_text())
    codes = [s["action"]["content"] for s in trajectory["steps"] if not s.get("pre_executed")]
    assert codes == ["import time; time.sleep(120)", "print('still', 'here')"]
    # The folder is a finished run, which the other commands take.
    for command in (["view", str(run_dir)],):  # verify takes it too, but replays the two-minute cell
        taken = subprocess.run(["super-bench", *command], cwd=cwd, env=env, capture_output=True, text=True)
        assert taken.returncode == 0, taken.stdout + taken.stderr
