"""Per-task disk limits, attacked: one big file, a sparse file filled in, many small files, a file deleted while
still open. With a file system of the task's own, every write past the limit fails and the host's disk holds no
more than the limit; with the watch, the task is stopped (stop reason ``max_disk``, the agent's). Nothing stays
mounted when the harness is killed."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from tests.support.helpers import make_task
from tests.support.sandboxes import backend_settings, kill_all, parent_pid, start_run, token

from super_bench import EnvConfig, RunConfig, SandboxConfig, run
from super_bench.sandbox.conformance import pids_with, wait_for
from super_bench.sandbox.lifetime.scratch import scratch_dir
from super_bench.sandbox.lifetime.supervisor import watchdog_command
from super_bench.sandbox.limits import disk
from super_bench.sandbox.limits.disk import disk_usage, filesystem_problem

LIMIT = 64 << 20
DELETED = "a file deleted while still open"
FILL = 200  # MiB each attack tries to write
ATTACKS = {
    "one big file": f"!dd if=/dev/zero of=big bs=1M count={FILL} 2>&1 | grep -o 'No space left on device' | head -1",
    "a sparse file filled in": (
        f"!truncate -s 50G sparse && dd if=/dev/zero of=sparse bs=1M count={FILL} conv=notrunc 2>&1 "
        "| grep -o 'No space left on device' | head -1"
    ),
    "many small files": (
        "import os\nos.makedirs('small', exist_ok=True)\ntry:\n"
        "    for i in range(300_000):\n        with open(f'small/{i}', 'w') as f:\n            f.write('x')\n"
        "except OSError as e:\n    print(e.strerror)"
    ),
    "a file deleted while still open": (
        "import os\nf = open('held', 'wb')\nos.unlink('held')\ntry:\n"
        f"    for _ in range({FILL}):\n        f.write(b'0' * 2**20)\n        f.flush()\n"
        "except OSError as e:\n    print(e.strerror)"
    ),
}


def own_filesystem() -> None:
    problem = filesystem_problem()
    if problem:
        pytest.skip(f"tasks cannot get file systems of their own here: {problem}")


def mounts_under(path: Path) -> list[str]:
    return [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines() if str(path) in line]


@pytest.mark.parametrize("backend", ["bwrap", "local"])
@pytest.mark.parametrize("attack", list(ATTACKS))
def test_writes_past_a_disk_limit_fail_and_the_host_holds_no_more(
    env_factory: Any, tmp_sandbox_root: Path, backend: str, attack: str
) -> None:
    own_filesystem()
    env = env_factory(cell_timeout=120, sandbox={**backend_settings(backend), "disk_limit": LIMIT})
    env.reset(make_task())
    step = env.step({"type": "execute", "content": ATTACKS[attack]})
    assert "No space left on device" in step.raw_output, step.raw_output
    assert "The task's disk limit (64 MiB) is reached" in step.observation
    (image,) = tmp_sandbox_root.rglob("*.img")
    assert image.stat().st_blocks * 512 <= LIMIT  # all the task takes of the host's disk
    # The episode goes on: once the agent frees space, writing works again.
    free = "_ = globals().get('f') and f.close()\n!rm -rf big sparse small && head -c 1000000 /dev/zero > ok && ls ok"
    freed = env.step({"type": "execute", "content": free})
    assert freed.raw_output.strip().endswith("ok") and not env.done
    env.close()
    assert not mounts_under(tmp_sandbox_root) and not list(tmp_sandbox_root.rglob("*.img"))


def test_the_kernels_sockets_folder_is_under_the_disk_limit(env_factory: Any) -> None:
    """/run/super-bench, where the kernel binds its sockets, is agent code's to write: it lies in the task's own
    file system, so writing there fails at the limit like anywhere else, and no folder of the host's grows."""
    own_filesystem()
    env = env_factory(cell_timeout=120, sandbox={**backend_settings("bwrap"), "disk_limit": LIMIT})
    env.reset(make_task())
    fill = f"!dd if=/dev/zero of=/run/super-bench/big bs=1M count={FILL} 2>&1 | grep -o 'No space left on device'"
    step = env.step({"type": "execute", "content": fill})
    assert "No space left on device" in step.raw_output, step.raw_output
    assert env._sandbox.sockets_dir.is_relative_to(env._sandbox.root)
    held = sum(p.stat().st_size for p in env._sandbox.runtime_dir.rglob("*") if p.is_file() and not p.is_symlink())
    assert held < 1 << 20


# In docker the limit holds for the task directory and the container's own layer (what pip or apt install) together;
# in both, the folder of the kernels' sockets (/run/super-bench) is the task directory's.
@pytest.mark.parametrize(
    ("backend", "target"),
    [
        ("bwrap", "big"),
        ("bwrap", "/run/super-bench/big"),
        ("bwrap", DELETED),
        ("docker", "big"),
        ("docker", "/var/big"),
        ("docker", "/run/super-bench/big"),
        ("docker", DELETED),
        ("docker", "/etc/hosts"),  # bound by the engine from its own storage on the host
    ],
)
def test_a_task_past_its_watched_disk_limit_is_stopped_as_its_own_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str, target: str
) -> None:
    monkeypatch.setattr(disk.WATCH, "interval", 0.2)
    actions = tmp_path / "actions.json"
    if target == DELETED:  # no folder lists it any more, yet it takes its space while open
        write = "import os, time\nf = open('held', 'wb')\nos.unlink('held')\nf.write(b'0' * (100 << 20))\nf.flush()\n"
        write += "time.sleep(30)"
    else:
        write = f"with open({target!r}, 'ab') as f:\n    f.write(b'0' * (100 << 20))\nimport time; time.sleep(30)"
    actions.write_text(json.dumps([{"type": "execute", "content": write}, {"type": "execute", "content": "1"}]))
    enforcement = "watch" if backend == "bwrap" else "auto"
    sandbox = SandboxConfig(
        **backend_settings(backend), root=tmp_path / "sb", disk_limit=LIMIT, disk_enforcement=enforcement
    )
    outcome = run(
        RunConfig(
            agent=f"replay:{actions}", task_ids=["tinyreg"], out=tmp_path / "run", env=EnvConfig(sandbox=sandbox)
        ),
        progress=False,
    )
    (result,) = outcome.results
    assert (result.status, result.stop_reason) == ("completed", "max_disk")
    assert result.n_steps == 1 and outcome.summary.stop_reasons == {"max_disk": 1}
    trajectory = json.loads((tmp_path / "run" / str(result.trajectory)).read_text())
    assert "The task's disk limit (64 MiB) was passed" in trajectory["steps"][-1]["observation"]


def test_a_task_slow_to_walk_delays_no_other_tasks_look(tmp_path: Path) -> None:
    """Hundreds of thousands of hard links make one task's tree slow to walk; each task has a look of its own,
    so another task past its limit is still seen within the interval."""
    slow = tmp_path / "slow"
    slow.mkdir()
    for n in range(4):
        (slow / f"f{n}").write_bytes(b"x")
    for i in range(200_000):
        os.link(slow / f"f{i % 4}", slow / f"l{i}")  # a file takes at most 65,000 links
    watchers = lambda: sum(t.name == "super-bench-disk-watch" for t in threading.enumerate())  # noqa: E731
    before = watchers()
    watch = disk.DiskWatch(interval=0.5)
    looked = []
    watch.watch(slow, 1 << 40, None, looked.append)
    time.sleep(1.0)  # its first walk is done: the watch of it now waits ten times as long as the walk took
    fast = tmp_path / "fast"
    fast.mkdir()
    (fast / "big").write_bytes(b"0" * (2 << 20))
    caught: list[int] = []
    started = time.monotonic()
    watch.watch(fast, 1 << 20, None, caught.append)
    assert wait_for(lambda: bool(caught), 5), "the other task's limit was not seen"
    assert time.monotonic() - started < 3
    assert watchers() == before + 2  # a thread per watched task
    watch.unwatch(slow)
    watch.unwatch(fast)
    assert wait_for(lambda: watchers() == before, 10), "a watch thread outlived its task"
    assert not looked


def test_the_watch_counts_blocks_not_sizes_and_every_file(tmp_path: Path) -> None:
    (tmp_path / "sparse").write_bytes(b"")
    os.truncate(tmp_path / "sparse", 10 << 30)  # 10 GiB that take no block
    (tmp_path / "small").mkdir()
    for i in range(500):
        (tmp_path / "small" / str(i)).touch()  # empty, yet each is an inode
    (tmp_path / "data").write_bytes(b"1" * (1 << 20))
    os.link(tmp_path / "data", tmp_path / "again")  # one file, two names
    used = disk_usage(tmp_path)
    assert 502 * 4096 + (1 << 20) <= used < 520 * 4096 + (1 << 20)


@pytest.mark.slow
def test_a_killed_harness_leaves_no_task_file_system_mounted(tmp_path: Path) -> None:
    own_filesystem()
    backend_settings("bwrap")
    mark = token()
    actions = [{"type": "execute", "content": f"!sleep {mark}"}]
    scratch = tmp_path / "tmp" / scratch_dir(tmp_path / "run", None).name
    for kill_watchdog in (False, True):
        proc = start_run(tmp_path, "bwrap", actions, "--cell-timeout", "600", "--disk-limit", "64m")
        try:
            assert wait_for(lambda: pids_with(mark) and mounts_under(scratch), timeout=120), "the task did not start"
        finally:
            watchdogs = [pid for pid in pids_with(watchdog_command()[-1]) if parent_pid(pid) == proc.pid]
            kill_all([*(watchdogs if kill_watchdog else []), proc.pid])
            proc.communicate()
        if not kill_watchdog:  # the watchdog unmounts it
            assert wait_for(lambda: not mounts_under(scratch), timeout=10), "a task's file system stayed mounted"
            assert wait_for(lambda: not list(scratch.glob("*")), timeout=5)
    # With the watchdog killed too, the next run of the same run directory unmounts what was left.
    assert mounts_under(scratch)
    kill_all(pids_with(mark))
    time.sleep(0.5)
    resumed = start_run(
        tmp_path, "bwrap", [{"type": "submit", "content": "{}"}], "--cell-timeout", "600", "--disk-limit", "64m"
    )
    _, stderr = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, stderr
    assert not mounts_under(scratch) and not scratch.exists()
