"""In docker, agent code is root in its container and may replace any program there (docs/threat-model.md, "Host
files and privileges"). What the harness must do to a task's processes it does from the host: a kernel that will
not stop and a cell past the wall-time limit are killed by their host ids, so programs planted in the container
(an `sh` or a `kill` that never ends, or streams without end) neither hold up the limit nor cost the harness."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.environment.test_edit_limits import PLANT
from tests.support.helpers import make_task
from tests.support.sandboxes import backend_settings

from super_bench import Action, Environment


def _peak_since_reset() -> tuple[int, Any]:
    status = Path("/proc/self/status")
    Path("/proc/self/clear_refs").write_text("5")

    def field(name: str) -> int:
        line = next(line for line in status.read_text().splitlines() if line.startswith(name + ":"))
        return int(line.split()[1]) * 1024

    return field("VmRSS"), lambda: field("VmHWM")


def test_a_cell_past_the_wall_time_limit_ends_on_time_whatever_agent_code_planted(env_factory: Any) -> None:
    env: Environment = env_factory(cell_timeout=120, sandbox={**backend_settings("docker"), "wall_time_limit": 25})
    env.reset(make_task())
    assert env.step(Action.execute(PLANT)).observation.strip() == "planted"
    deadline = env._sandbox._deadline
    assert deadline is not None
    before, peak = _peak_since_reset()
    step = env.step(Action.execute("import time\ntime.sleep(600)"))
    ended = time.monotonic()
    assert step.outcome == "kernel_died" and "wall-time limit" in step.observation, step.observation
    assert ended - deadline < 3, f"the cell ran {ended - deadline:.1f} s past the wall-time limit"
    assert peak() - before < 64 << 20
    assert not (env._sandbox.root / "tmp" / "planted-ran").exists()  # no planted program ran for the harness


def test_a_kernel_that_ignores_its_interrupt_is_killed_from_the_host(env_factory: Any) -> None:
    env: Environment = env_factory(cell_timeout=2, interrupt_grace=2, sandbox=backend_settings("docker"))
    env.reset(make_task())
    assert env.step(Action.execute(PLANT)).observation.strip() == "planted"
    stubborn = "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(600)"
    assert env.step(Action.execute(stubborn)).outcome == "timeout"
    before, peak = _peak_since_reset()
    started = time.monotonic()
    stopped = env.step(Action(type="interrupt"))
    assert time.monotonic() - started < 15, stopped.observation
    assert stopped.outcome == "kernel_died", stopped.observation
    assert peak() - before < 64 << 20
    after = env.step(Action.execute("print(6 * 7)"))
    assert after.observation.strip().endswith("42"), after.observation
    assert not (env._sandbox.root / "tmp" / "planted-ran").exists()


def test_the_containers_lifetime_guard_is_its_first_process_and_cannot_be_stopped(env_factory: Any) -> None:
    """The guard that ends the container after its lifetime once ran as tini's child, which container root could
    SIGSTOP: the container then outlived the harness, its watchdog and a resumed run."""
    env: Environment = env_factory(cell_timeout=30, sandbox={**backend_settings("docker"), "wall_time_limit": 600})
    env.reset(make_task())
    attack = (
        "import os, signal, time\nfor sig in (signal.SIGSTOP, signal.SIGKILL):\n    os.kill(1, sig)\ntime.sleep(0.5)\n"
        "state = [l for l in open('/proc/1/status') if l.startswith('State:')][0].split()[1]\n"
        "print(state, 'lifetime guard' in open('/proc/1/cmdline').read())"
    )
    assert env.step(Action.execute(attack)).observation.split() == ["S", "True"]


def test_the_guard_ends_at_its_lifetime_and_starts_what_it_is_given(tmp_path: Path) -> None:
    guard = Path(__file__).resolve().parents[2] / "src" / "super_bench" / "sandbox" / "in_task" / "container_guard.py"
    marker = tmp_path / "started"
    beside = f"open({str(marker)!r}, 'w').write('yes')"
    started = time.monotonic()
    subprocess.run([sys.executable, "-S", str(guard), "1.5", beside], check=True, timeout=30)
    assert 1.4 < time.monotonic() - started < 10
    assert marker.read_text() == "yes"


def test_a_resumed_run_removes_the_containers_a_killed_one_left(tmp_path: Path) -> None:
    """Were the harness and its watchdog both killed, a task's container would live on (until its lifetime
    guard ends it); the next run of the same run directory clears its scratch, containers included."""
    from super_bench.sandbox import SandboxConfig, create_sandbox
    from super_bench.sandbox.lifetime.scratch import clear_scratch, scratch_dir

    scratch = scratch_dir(tmp_path / "run", tmp_path / "sb")
    sandbox = create_sandbox(SandboxConfig(**backend_settings("docker"), root=scratch))
    sandbox.start()
    try:
        name = sandbox.container  # type: ignore[attr-defined]
        engine = sandbox.engine.command  # type: ignore[attr-defined]
        listed = subprocess.run([*engine, "ps", "-q", "--filter", f"name={name}"], capture_output=True, text=True)
        assert listed.stdout.strip()
        removed = clear_scratch(scratch)  # as a resumed run does, before its first task
        assert any(item.startswith("container ") for item in removed), removed
        listed = subprocess.run([*engine, "ps", "-a", "-q", "--filter", f"name={name}"], capture_output=True, text=True)
        assert not listed.stdout.strip()
    finally:
        sandbox.stop()


def test_a_command_in_the_container_costs_the_harness_at_most_what_it_keeps() -> None:
    """``run_bounded`` keeps the first bytes of each stream and drains the rest, so an endless stream costs
    nothing but its time (bounded too)."""
    from super_bench.sandbox.backends.container_exec import run_bounded

    endless = [sys.executable, "-c", "import sys\nwhile True: sys.stdout.write('y' * 65536)"]
    with pytest.raises(subprocess.TimeoutExpired):
        run_bounded(endless, timeout=2, kept=1000)
    done = run_bounded(
        [sys.executable, "-c", "print('x' * 5000); import sys; print('e' * 10, file=sys.stderr)"], timeout=30, kept=1000
    )
    assert done.stdout == b"x" * 1000 and done.stderr == b"e" * 10 + b"\n" and done.returncode == 0
    fed = run_bounded(
        [sys.executable, "-c", "import sys; print(len(sys.stdin.buffer.read()))"], data=b"z" * 300_000, timeout=30
    )
    assert fed.stdout.strip() == b"300000"


def test_a_docker_edit_writes_through_a_link_inside_the_container_and_keeps_the_mode(env_factory: Any) -> None:
    """The engine's copy writes where agent code's own write would: through a link, resolved in the container."""
    env: Environment = env_factory(cell_timeout=30, sandbox=backend_settings("docker"))
    env.reset(make_task())
    setup = (
        "import os\nos.makedirs('/content/sub', exist_ok=True)\nopen('/content/sub/m.py', 'w').write('old = 1\\n')\n"
        "os.chmod('/content/sub/m.py', 0o751)\nos.symlink('/content/sub/m.py', '/content/ln.py')"
    )
    env.step(Action.execute(setup))
    edit = env.step(
        Action(type="edit", content="/content/ln.py\n<<<BEFORE_EDIT>>>\nold = 1\n<<<AFTER_EDIT>>>\nnew = 2")
    )
    assert edit.outcome == "ok", edit.observation
    check = "s = os.stat('/content/sub/m.py')\nprint(oct(s.st_mode & 0o777), os.path.islink('/content/ln.py'))\n"
    check += "print(open('/content/sub/m.py').read(), end='')"
    assert env.step(Action.execute(check)).observation == "0o751 True\nnew = 2\n"
