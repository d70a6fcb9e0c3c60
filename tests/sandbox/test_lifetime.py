"""Nothing a task starts outlives the harness, however the harness ends, and a resumed run clears what a
killed one left behind."""

from __future__ import annotations

import glob
import json
import multiprocessing
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.sandboxes import backend_settings, kill_all, parent_pid, start_run, token

from super_bench.sandbox.conformance import pids_with, wait_for
from super_bench.sandbox.lifetime import reaper, supervisor
from super_bench.sandbox.lifetime.scratch import runtime_tag, scratch_dir
from super_bench.sandbox.lifetime.supervisor import watchdog_command


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["local", "bwrap", "docker"])
@pytest.mark.parametrize("wall_time_limit", [None, "600"])
def test_sigkill_of_the_harness_leaves_no_process(tmp_path: Path, backend: str, wall_time_limit: str | None) -> None:
    backend_settings(backend)  # skips where the backend cannot run
    mark = token()
    daemons = (
        "import os, subprocess\n"
        f"subprocess.Popen(['setsid', 'sleep', '{mark}'])\n"
        f"os.system('nohup sleep {mark} > /dev/null 2>&1 &')\n"
    )
    actions = [{"type": "execute", "content": daemons}, {"type": "execute", "content": f"!sleep {mark}"}]
    extra = ["--wall-time-limit", wall_time_limit] if wall_time_limit else []
    proc = start_run(tmp_path, backend, actions, "--cell-timeout", "600", *extra)
    try:
        assert wait_for(lambda: len(pids_with(mark)) >= 3, timeout=120), "the task's processes did not start"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    assert wait_for(lambda: not pids_with(mark), timeout=5), "a process of the task outlived the harness"
    scratch = scratch_dir(tmp_path / "run", None).name
    assert wait_for(lambda: not list((tmp_path / "tmp" / scratch).glob("*")), timeout=5), "a task directory was left"


@pytest.mark.slow
def test_a_resumed_run_clears_what_a_killed_run_left(tmp_path: Path) -> None:
    """The whole session killed, the watchdog too: the next run of the same run directory kills what still runs
    (the local sandbox's kernels have no parent-death signal) and removes the directories."""
    backend_settings("local")
    mark, go = token(), tmp_path / "go"
    actions = [{"type": "execute", "content": f"!test -e {go} || sleep {mark}"}]
    proc = start_run(tmp_path, "local", actions, "--cell-timeout", "600")
    try:
        assert wait_for(lambda: pids_with(mark), timeout=120), "the task did not start"
    finally:
        watchdogs = [pid for pid in pids_with(watchdog_command()[-1]) if parent_pid(pid) == proc.pid]
        kill_all([*watchdogs, proc.pid])
        proc.communicate()
    scratch = tmp_path / "tmp" / scratch_dir(tmp_path / "run", None).name
    assert pids_with(mark) and list(scratch.iterdir()), "nothing was left to clear"
    # Runtime directories go to a short path: the temporary directory, or /tmp where its path is long.
    runtimes = f"{tmp_path / 'tmp' if len(str(tmp_path / 'tmp')) <= 40 else '/tmp'}/sbk-{runtime_tag(scratch)}-*"
    assert glob.glob(runtimes)
    go.touch()
    resumed = start_run(tmp_path, "local", actions, "--cell-timeout", "600")
    _, stderr = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, stderr
    assert not pids_with(mark)
    assert not scratch.exists() and not glob.glob(runtimes)


def test_the_watchdog_imports_nothing_of_the_harness_but_the_reaper(tmp_path: Path) -> None:
    *command, code = watchdog_command()
    marked = tmp_path / "left-behind"
    marked.mkdir()
    registration = json.dumps({"op": "add", "kind": "dir", "value": str(marked)}) + "\n"
    # Once it has done its work (its input closed), it says what it had imported.
    listing = code + "print(' '.join(sorted(sys.modules)))\n"
    proc = subprocess.run([*command, listing], input=registration, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    imported = set(proc.stdout.split())
    assert {name for name in imported if "super_bench" in name} == {reaper.__name__}
    assert not imported & {"pydantic", "rich", "jupyter_client", "site", "super_bench"}
    assert not marked.exists()  # it still does its work: the harness went away, what it registered went too


def test_a_harness_that_exits_has_waited_for_its_watchdog(tmp_path: Path) -> None:
    """A command that has returned has nothing of its own still running: at its exit the harness closes its
    watchdog's pipe and waits while the watchdog removes what was still registered and ends."""
    left = tmp_path / "left"
    left.mkdir()
    for i in range(2000):  # enough that removing it takes the watchdog a while after the pipe closes
        (left / str(i)).touch()
    code = (
        "from super_bench.sandbox.lifetime import supervisor\n"
        f"supervisor.register('dir', {str(left)!r})\n"
        "print(supervisor._watchdog._process.pid)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert not left.exists(), "the harness exited before its watchdog had removed what was registered"
    assert not Path(f"/proc/{int(proc.stdout)}").exists(), "the watchdog outlived the harness's exit"


def _spawn_in_child(marker: str) -> None:
    # In a forked child: a process through the spawner, and a registration with the watchdog.
    supervisor.spawn(["sh", "-c", f"echo ok > {marker}"]).wait(timeout=30)
    supervisor.register("dir", marker + ".never-made")
    supervisor.unregister("dir", marker + ".never-made")


def test_a_child_forked_from_the_harness_spawns_with_threads_of_its_own(tmp_path: Path) -> None:
    # The parent's spawner thread is running; a process pool's worker forked now has no such thread.
    supervisor.spawn(["true"]).wait(timeout=30)
    supervisor.register("dir", str(tmp_path / "never-made"))
    marker = str(tmp_path / "from-child")
    child = multiprocessing.get_context("fork").Process(target=_spawn_in_child, args=(marker,))
    child.start()
    child.join(timeout=60)
    if child.is_alive():
        child.kill()
    assert child.exitcode == 0 and Path(marker).read_text() == "ok\n"
    supervisor.unregister("dir", str(tmp_path / "never-made"))


def test_a_watchdog_with_nothing_left_to_remove_imports_only_what_it_reads_with() -> None:
    """Starting it is part of every run: what removing and killing need is imported only when there is some."""
    *command, code = watchdog_command()
    add = {"op": "add", "kind": "dir", "value": "/nonexistent/never-made"}
    registrations = "".join(json.dumps(entry) + "\n" for entry in (add, {**add, "op": "remove"}))
    listing = code + "print(' '.join(sorted(sys.modules)))\n"
    proc = subprocess.run([*command, listing], input=registrations, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    imported = set(proc.stdout.split())
    assert "json" in imported and reaper.__name__ in imported
    assert not imported & {"shutil", "subprocess", "typing", "contextlib", "importlib.util"}
