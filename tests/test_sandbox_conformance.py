"""One conformance suite, run against every sandbox backend that works here (the others are
skipped, saying why): the same notebook behaviour and the same clean stop everywhere."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import make_task
from tests.sandboxes import BACKENDS, backend_settings, pids_with, tiny_wheel, token, wait_for

from super_bench import Action, Environment


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> dict[str, Any]:
    return backend_settings(request.param)


@pytest.fixture
def start(env_factory: Any, backend: dict[str, Any]) -> Any:
    """Start an environment on a trivial task in the backend under test."""

    def started(**settings: Any) -> Environment:
        sandbox = {**backend, **settings.pop("sandbox", {})}
        env: Environment = env_factory(sandbox=sandbox, **settings)
        env.reset(make_task())
        return env

    return started


def run(env: Environment, code: str) -> Any:
    return env.step(Action.execute(code))


def test_state_persists_and_shell_and_magics_work(start: Any) -> None:
    env = start()
    run(env, "x = 41")
    assert run(env, "print(x + 1)").observation == "42\n"
    step = run(env, "!echo from the shell; exit 3")
    assert "from the shell" in step.observation and step.exit_code == 3
    step = run(env, "!mkdir -p sub && touch sub/marker\n%cd sub\nimport os\nprint(sorted(os.listdir('.')))")
    assert "['marker']" in step.observation
    assert env.kernel.cwd == f"{env.sandbox.workdir}/sub"


def test_agent_code_sees_its_own_directory_and_no_secrets(start: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-conformance-secret")
    env = start()
    step = run(env, "import os\nprint(os.getcwd()); print(os.environ.get('OPENAI_API_KEY'))\n!touch ~/writable")
    cwd, key = step.observation.split()
    assert cwd == env.sandbox.workdir
    assert key == "None"
    assert run(env, "!ls ~/writable").exit_code == 0


def test_files_in_and_out(start: Any) -> None:
    env = start()
    env.sandbox.write_file("data/in.txt", b"from the harness\n")
    assert run(env, "print(open('data/in.txt').read(), end='')").observation == "from the harness\n"
    run(env, "open('out.bin', 'wb').write(bytes(range(256)))")
    assert env.sandbox.read_file("out.bin") == bytes(range(256))
    assert env.sandbox.read_file(f"{env.sandbox.workdir}/out.bin") == bytes(range(256))
    with pytest.raises(FileNotFoundError):
        env.sandbox.read_file("missing.txt")


def test_installs_land_in_the_task_layer(start: Any, tmp_path: Path) -> None:
    env = start()
    wheel = tiny_wheel(tmp_path)
    env.sandbox.write_file(wheel.name, wheel.read_bytes())
    step = run(env, f"!pip install -q --no-index --no-deps {wheel.name}")
    assert step.exit_code == 0, step.observation
    assert run(env, "import sbtinypkg; print(sbtinypkg.VALUE)").observation == "42\n"
    with pytest.raises(ImportError):
        __import__("sbtinypkg")


def test_soft_timeout_then_interrupt_reaches_shell_commands(start: Any) -> None:
    env = start(cell_timeout=1.0)
    run(env, "kept = 'still here'")
    step = run(env, "!sleep 60")
    assert step.outcome == "timeout"
    assert env.step({"type": "continue_wait"}).outcome == "timeout"
    started = time.monotonic()
    assert env.step({"type": "interrupt"}).outcome == "interrupted"
    assert time.monotonic() - started < 8
    assert run(env, "print(kept)").observation == "still here\n"


@pytest.mark.parametrize(
    ("code", "cause"),
    [
        ("import os\nos._exit(7)", "exited with status 7"),
        ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", "SIGKILL"),
    ],
)
def test_a_dead_kernel_is_reported_and_replaced(start: Any, code: str, cause: str) -> None:
    env = start()
    run(env, "lost = 1\nopen('kept.txt', 'w').write('on disk')")
    started = time.monotonic()
    step = run(env, code)
    assert time.monotonic() - started < 15
    assert step.outcome == "kernel_died"
    assert cause in step.observation and "state was lost" in step.observation
    step = run(env, "print('lost' in globals(), open('kept.txt').read())")
    assert step.observation == "False on disk\n"
    assert env.kernel.restarts == 1


def test_a_hundred_megabyte_output(start: Any) -> None:
    env = start(cell_timeout=120)
    step = run(env, "import sys\nfor _ in range(100):\n    sys.stdout.write('#' * 1_000_000)\nprint('\\ndone')")
    assert step.outcome == "ok"
    assert len(step.raw_output) >= 100_000_000
    assert step.observation.endswith("done\n")


def test_a_memory_bomb_is_contained(start: Any) -> None:
    env = start(sandbox={"memory_limit": "512m"})
    step = run(env, "chunks = []\nwhile True:\n    chunks.append(bytearray(50 * 2**20))")
    assert step.outcome == "kernel_died" or (step.outcome == "error" and "MemoryError" in step.observation)
    assert run(env, "chunks = None\nprint('alive')").observation == "alive\n"


def test_the_file_size_limit(start: Any) -> None:
    env = start(sandbox={"max_file_size": "1m"})
    assert "File too large" in run(env, "open('big', 'wb').write(b' ' * 2**21)").observation
    assert run(env, "!head -c 500000 /dev/zero > small && ls -l small").exit_code == 0


def test_the_wall_time_limit_ends_the_episode(start: Any) -> None:
    env = start(cell_timeout=5, sandbox={"wall_time_limit": 3})
    step = run(env, "import time\ntime.sleep(30)")
    assert env.trajectory.stop_reason == "max_wall_time"
    if env.sandbox.name != "local":  # isolating backends kill at the limit; local checks between steps
        assert step.outcome == "kernel_died" and "wall-time limit" in step.observation


def test_stop_leaves_no_process_and_no_directory(start: Any) -> None:
    env = start()
    marks = [token() for _ in range(3)]
    run(
        env,
        "import os, subprocess\n"
        f"subprocess.Popen(['setsid', 'sleep', '{marks[0]}'])\n"
        f"os.system('nohup sleep {marks[1]} > /dev/null 2>&1 &')\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        f"        os.execvp('sleep', ['sleep', '{marks[2]}'])\n"
        "    os._exit(0)\n",
    )
    assert wait_for(lambda: all(pids_with(mark) for mark in marks)), "the daemons did not start"
    pids = {pid: mark for mark in marks for pid in pids_with(mark)}
    root, runtime = env.sandbox.root, env.sandbox.runtime_dir
    env.close()
    assert wait_for(lambda: not any(pid in pids_with(mark) for pid, mark in pids.items())), (
        "a process outlived its task"
    )
    assert not root.exists() and not runtime.exists()
