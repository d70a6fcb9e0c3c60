"""Agent code attacks the harness's privileges and limits through what the harness starts around it.

The privilege rule: nothing agent code can write or name runs with more privilege than agent code has.
Agent code plants programs named like every helper the harness could start, in every directory of its
PATH it can write and in every directory its environment names; then the harness restarts the kernel
and makes edits. A planted program that runs at all records whom it ran as: it must be agent code's user
with no capabilities, and the limits must still hold. Limits are kept from outside: agent code stopping
every process it can see changes nothing, and a flood to the kernel's own output fills no file.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from tests.support.helpers import make_task
from tests.support.planted import CAPABILITIES, HELPERS, LIMITS, PLANT, STOP_WATCHERS, limit_of, processes
from tests.support.sandboxes import backend_settings

from super_bench import Action, Environment
from super_bench.sandbox.limits.memory import cgroup_parent


def _restart(env: Environment) -> None:
    step = env.step(Action.execute("import os\nos._exit(3)"))
    assert step.outcome == "kernel_died", step.observation


def _ran(env: Environment) -> list[str]:
    log = env._sandbox.root / "tmp" / "planted.log"
    return log.read_text().splitlines() if log.exists() else []


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["bwrap", "local"])
def test_planted_helpers_never_run_with_more_privilege_than_agent_code(env_factory: Any, backend: str) -> None:
    settings = backend_settings(backend)
    limits = {"max_file_size": "8m", "memory_limit": "1g", "memory_enforcement": "address-space"}
    if backend == "bwrap":
        limits["max_processes"] = 64
    env: Environment = env_factory(cell_timeout=60, sandbox={**settings, **limits})
    env.reset(make_task())
    task_root = "" if backend == "bwrap" else str(env._sandbox.root)
    seen = env.step(Action.execute(PLANT.format(helpers=HELPERS, task_root=task_root))).observation
    venv_bin = "/venv/bin" if backend == "bwrap" else str(env._sandbox.python_dir / "bin")
    assert venv_bin in seen, seen  # the PATH's first directory, which agent code owns, was planted in
    env.step(Action.execute("open('notes.txt', 'w').write('a = 1\\n')"))
    for round_ in range(3):
        _restart(env)
        edit = f"notes.txt\n<<<BEFORE_EDIT>>>\na = {round_ + 1}\n<<<AFTER_EDIT>>>\na = {round_ + 2}\n"
        step = env.step(Action(type="edit", content=edit))
        assert step.outcome == "ok", step.observation
        env.kill_kernel()  # the next step starts a new kernel
        after = env.step(Action.execute(LIMITS)).observation
        assert limit_of(after, "Max file size") == str(8 << 20)
        assert limit_of(after, "Max data size") == str(1 << 30)
        assert limit_of(after, "Max address space") == str(1 << 30)
        if backend == "bwrap":
            assert limit_of(after, "Max processes") == "64"
    assert "a = 4" in env.step(Action.execute("print(open('notes.txt').read())")).observation
    ran = _ran(env)
    if backend == "local":
        assert ran == [], "the harness ran a program agent code planted"
    agent = os.geteuid() if backend == "local" else getattr(env._sandbox, "_uid", os.geteuid())
    for line in ran:
        _, _name, uid, *caps = line.split()
        assert int(uid) == (agent if os.geteuid() == 0 else os.geteuid()), line
        assert all(cap.endswith(":0000000000000000") for cap in caps), line


@pytest.mark.slow
def test_no_process_in_the_bwrap_sandbox_has_capabilities(env_factory: Any) -> None:
    env: Environment = env_factory(cell_timeout=60, sandbox=backend_settings("bwrap"))
    env.reset(make_task())
    seen = env.step(Action.execute(CAPABILITIES)).observation
    procs = processes(seen)
    assert len(procs) >= 2, seen  # PID 1 and the kernel at least
    assert "NoNewPrivs:\t1" in seen
    for pid, uid, prm, eff, bnd, amb in procs:
        assert prm == eff == amb == "0000000000000000", (pid, uid)
        if pid != "1":  # bubblewrap's reaper; every other process is agent code's
            assert bnd == "0000000000000000", (pid, uid)
            if os.geteuid() == 0:
                assert uid != "0", pid


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["bwrap", "local"])
def test_a_stopped_watcher_does_not_stop_the_wall_clock(env_factory: Any, backend: str) -> None:
    env: Environment = env_factory(cell_timeout=30, sandbox={**backend_settings(backend), "wall_time_limit": 10})
    env.reset(make_task())
    _restart(env)  # the limit holds for kernels started later too
    deadline = env._sandbox._deadline
    assert deadline is not None
    step = env.step(Action.execute(STOP_WATCHERS))
    ended = time.monotonic()
    assert step.outcome == "kernel_died", step.observation
    assert "wall-time limit" in step.observation
    assert ended - deadline < 1.5, f"the cell ran {ended - deadline:.1f} s past the wall-time limit"


def _bytes_under(path: Path) -> int:
    return sum(os.lstat(os.path.join(d, f)).st_size for d, _, files in os.walk(path) for f in files)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["bwrap", "local"])
def test_a_flood_to_the_kernels_own_output_fills_no_file(env_factory: Any, backend: str) -> None:
    env: Environment = env_factory(cell_timeout=120, sandbox={**backend_settings(backend), "disk_limit": "64m"})
    env.reset(make_task())
    flood = "import os\nchunk = b'x' * (1 << 20)\nfor _ in range(200):\n    os.write(1, chunk)\n    os.write(2, chunk)"
    step = env.step(Action.execute(flood + "\nprint('flooded')"))
    assert "flooded" in step.observation, step.observation
    assert _bytes_under(env._sandbox.runtime_dir) < 1 << 20  # the harness's files of the task: no log grew
    disk, _ = env._sandbox.usage()
    assert disk is None or disk < 64 << 20
    assert not env._sandbox.disk_limit_passed
    assert env._sandbox.kernel_log_tail(100).endswith("x" * 100)  # the tail is kept, for a dying kernel's note


@pytest.mark.slow
def test_other_tasks_cgroups_are_invisible(env_factory: Any) -> None:
    settings = {**backend_settings("bwrap"), "memory_limit": "1g"}
    if cgroup_parent() is None:
        settings["memory_enforcement"] = "address-space"
    envs = []
    for name in ("first", "second"):
        env: Environment = env_factory(cell_timeout=60, sandbox=settings)
        env.reset(make_task(name))
        envs.append(env)
    seen = (
        envs[0]
        .step(
            Action.execute(
                "import os\nfor d, dirs, files in os.walk('/sys/fs/cgroup'):\n    print('ENTRY', d, dirs, files)"
            )
        )
        .observation
    )
    assert "super-bench" not in seen and envs[1]._sandbox.label not in seen
    assert seen.splitlines()[0].startswith("ENTRY /sys/fs/cgroup [] []"), seen
