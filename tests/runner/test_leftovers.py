"""Nothing is left by any way a run can die: when the harness and its watchdog are killed together (a batch
scheduler, the OOM killer), the resume removes what they left: kernels, memory cgroups, task directories, the
kernels' runtime folders and the killed process's temporary folders (docs/runner.md#resume)."""

from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from super_bench.sandbox.conformance import pids_with
from super_bench.sandbox.lifetime.scratch import (
    CGROUP_NOTE,
    clear_scratch,
    private_temp,
    runtime_tag,
    scratch_dir,
    sweep,
)
from super_bench.sandbox.lifetime.supervisor import watchdog_command
from super_bench.sandbox.limits.memory import cgroup_parent

pytestmark = pytest.mark.slow


def test_a_resume_after_harness_and_watchdog_are_killed_together_leaves_nothing(tmp_path: Path) -> None:
    if cgroup_parent() is None:
        pytest.skip("no memory cgroup can be made here")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "COLUMNS": "200"}
    actions = tmp_path / "actions.json"
    actions.write_text(json.dumps([{"type": "execute", "content": "import time; time.sleep(120)"}]))
    out = tmp_path / "run"
    command = [sys.executable, "-m", "super_bench", "run", "--agent", f"replay:{actions}", "--sandbox", "local"]
    command += ["--task-ids", "tinyreg", "tinyreg-lr", "--workers", "2", "--memory-limit", "1g", "--out", str(out)]
    harness = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    scratch = tmp / scratch_dir(out, None).name  # in its TMPDIR
    try:
        deadline = time.monotonic() + 180
        while len(list(scratch.glob(f"{CGROUP_NOTE}*"))) < 2 or len(pids_with(str(scratch), environment=True)) < 2:
            assert time.monotonic() < deadline and harness.poll() is None, "the tasks' kernels never started"
            time.sleep(0.1)
        time.sleep(2)  # in the sleeping cells
        (watchdog,) = pids_with(watchdog_command()[-1], parent=harness.pid)
        os.kill(watchdog, signal.SIGKILL)
        os.kill(harness.pid, signal.SIGKILL)
        harness.wait(timeout=30)
    finally:
        harness.kill()
    time.sleep(1)
    # Left behind: the kernels, their cgroups, the killed harness's git configuration.
    cgroups = [note.read_text() for note in scratch.glob(f"{CGROUP_NOTE}*")]
    assert len(cgroups) == 2 and all(os.path.isdir(c) for c in cgroups)
    assert pids_with(str(scratch), environment=True)
    assert glob.glob(str(tmp / f"super-bench-git-{harness.pid}-*"))

    actions.write_text(json.dumps([{"type": "execute", "content": "import time; time.sleep(0)"}]))
    resumed = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(r["task_id"] for r in rows) == ["tinyreg", "tinyreg-lr"]
    assert not pids_with(str(scratch), environment=True) and not pids_with(str(tmp), environment=True)
    assert not any(os.path.exists(c) for c in cgroups)
    assert str(tmp_path) not in Path("/proc/mounts").read_text()
    assert sorted(p.name for p in tmp.iterdir()) == [], "temporary folders left"
    assert not glob.glob(f"/tmp/sbk-{runtime_tag(scratch)}-*")


def test_the_folders_of_processes_that_are_gone_are_swept_and_no_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = tmp_path / f"super-bench-git-{gone.stdout.strip()}-abc"
    mine = tmp_path / f"super-bench-git-{os.getpid()}-abc"
    unnamed = tmp_path / "super-bench-git-x1y2"  # named before folders carried their process
    other = tmp_path / f"super-bench-ray-{gone.stdout.strip()}-abc"  # another kind
    for path in (dead, mine, unnamed, other):
        path.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert sweep("git") == [str(dead)]
    assert mine.is_dir() and unnamed.is_dir() and other.is_dir() and not dead.exists()
    made = private_temp("ray")
    assert made.name.startswith(f"super-bench-ray-{os.getpid()}-") and not other.exists()


def test_a_resume_with_nothing_left_to_do_still_sweeps_a_killed_harnesss_folders(tmp_path: Path) -> None:
    # A harness killed after its last row: the resume starts no sandbox, so makes no folder of its own.
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "COLUMNS": "200"}
    out = tmp_path / "run"
    command = [sys.executable, "-m", "super_bench", "run", "--sandbox", "local", "--task-ids", "tinyreg"]
    command += ["--out", str(out)]
    assert subprocess.run(command, env=env, capture_output=True, timeout=600).returncode == 0
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = [tmp / f"super-bench-{kind}-{gone.stdout.strip()}-abc" for kind in ("git", "ray")]
    alive = tmp / f"super-bench-git-{os.getpid()}-abc"
    for path in (*dead, alive):
        path.mkdir()
    resumed = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert len((out / "results.jsonl").read_text().splitlines()) == 1
    assert sorted(p.name for p in tmp.iterdir()) == [alive.name]


@pytest.mark.parametrize(
    ("runs_containers", "attempted", "asked"), [(False, False, False), (True, False, True), (False, True, True)]
)
def test_the_engines_are_asked_for_a_runs_containers_only_where_it_may_have_some(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runs_containers: bool, attempted: bool, asked: bool
) -> None:
    """A fresh run of a backend without containers asks no engine; a container backend's run does, and so does any
    run whose earlier attempt left its scratch directory (``--redo`` may have changed the backend)."""
    engines = tmp_path / "bin"
    engines.mkdir()
    calls = tmp_path / "calls"
    for name in ("docker", "podman"):
        (engines / name).write_text(f'#!/bin/sh\necho "{name} $*" >> {calls}\n')
        (engines / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{engines}{os.pathsep}{os.environ['PATH']}")
    scratch = tmp_path / "super-bench-run-0123456789ab"
    if attempted:
        scratch.mkdir()
    clear_scratch(scratch, runs_containers)
    said = calls.read_text().splitlines() if calls.exists() else []
    assert said == (
        [f"{n} ps -a -q --filter label=super-bench.scratch={runtime_tag(scratch)}" for n in ("docker", "podman")]
        if asked
        else []
    )


def test_the_sweep_of_a_dead_processs_folders_follows_no_link_planted_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Folders named like a gone process's, planted in the temporary directory by whoever may write it: a link
    so named is left alone, and a real one is removed without following the links inside it."""
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = gone.stdout.strip()
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("kept")
    temp = tmp_path / "tmp"
    temp.mkdir()
    (temp / f"super-bench-git-{pid}-link").symlink_to(victim)
    planted = temp / f"super-bench-ray-{pid}-abc"
    planted.mkdir()
    (planted / "inside").symlink_to(victim)
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    clear_scratch(tmp_path / "super-bench-run-0123456789ab", containers=False)
    assert (victim / "keep").read_text() == "kept"
    assert sorted(p.name for p in temp.iterdir()) == [f"super-bench-git-{pid}-link"]


def test_a_ray_run_leaves_no_temporary_folder(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "COLUMNS": "200"}
    env.pop("RAY_ADDRESS", None)  # a local Ray instance of the run's own, whose workers share this TMPDIR
    # Ray's own session (and its sockets, whose paths must be short) apart from it.
    env["RAY_TMPDIR"] = ray_tmp = tempfile.mkdtemp(prefix="sbray-", dir="/tmp")
    out = tmp_path / "run"
    command = [sys.executable, "-m", "super_bench", "run", "--executor", "ray", "--sandbox", "local", "--workers", "2"]
    command += ["--task-ids", "tinyreg", "tinyreg-lr", "nbsent", "--out", str(out)]
    try:
        result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert result.returncode == 0, result.stderr
    assert len((out / "results.jsonl").read_text().splitlines()) == 3
    deadline = time.monotonic() + 30  # Ray's workers end a moment after the driver
    while pids_with(str(tmp), environment=True) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not pids_with(str(tmp), environment=True)
    assert sorted(p.name for p in tmp.glob("super-bench-*")) == []


def test_a_planted_cgroup_note_removes_nothing(tmp_path: Path) -> None:
    scratch = tmp_path / "super-bench-run-0123456789ab"
    scratch.mkdir()
    victim = tmp_path / "super-bench-x-deadbeef"  # shaped like a task cgroup, but not under /sys/fs/cgroup
    victim.mkdir()
    (victim / "keep").write_text("kept")
    notes = {
        f"{CGROUP_NOTE}super-bench-x-deadbeef": str(victim),
        f"{CGROUP_NOTE}other": "/sys/fs/cgroup/memory/other",
        f"{CGROUP_NOTE}super-bench-y-cafebabe": "/sys/fs/cgroup/memory/../super-bench-y-cafebabe",
        f"{CGROUP_NOTE}super-bench-z-01234567": "/sys/fs/cgroup/memory/super-bench-w-01234567",
    }
    for name, target in notes.items():
        (scratch / name).write_text(target)
    removed = clear_scratch(scratch)
    assert (victim / "keep").read_text() == "kept"
    assert not any(path.startswith("/sys/fs/cgroup") for path in removed)


def test_a_tasks_cgroup_is_noted_before_it_is_made_and_the_note_goes_with_one_never_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Noted and known to the watchdog only after it was made, a cgroup was left by a harness killed in between.
    if cgroup_parent() is None:
        pytest.skip("no memory cgroup can be made here")
    from super_bench.errors import SandboxError
    from super_bench.sandbox import SandboxConfig
    from super_bench.sandbox.backends.local import LocalSandbox
    from super_bench.sandbox.lifetime import supervisor
    from super_bench.sandbox.limits import memory

    seen: list[tuple[Path, bool]] = []
    made = memory.MemoryCgroup("t", 2**30, lambda path: seen.append((path, path.exists())))
    try:
        assert seen == [(made.path, False)] and made.path.is_dir()
    finally:
        made.remove()
    # A cgroup announced, then never made (its limit refused, say): the sandbox's stop forgets it everywhere.
    made_init = memory.MemoryCgroup.__init__
    root = tmp_path / "sandboxes"
    noted: list[str] = []

    def refused(self: memory.MemoryCgroup, label: str, limit: int, announce: Any = None) -> None:
        made_init(self, label, limit, announce)
        noted.extend(p.name for p in root.glob(f"{CGROUP_NOTE}*"))
        self.remove()
        raise SandboxError("the limit was refused")

    monkeypatch.setattr(memory.MemoryCgroup, "__init__", refused)
    told: list[tuple[str, str]] = []
    monkeypatch.setattr(supervisor, "unregister", lambda kind, value: told.append((kind, value)))
    sandbox = LocalSandbox(SandboxConfig(root=root, memory_limit="1g"), "t")
    with pytest.raises(SandboxError, match="refused"):
        sandbox.start()  # which stops the sandbox on its way out
    assert len(noted) == 1  # noted while it was being made
    assert not list(root.glob(f"{CGROUP_NOTE}*"))
    assert [kind for kind, _ in told].count("cgroup") == 1
