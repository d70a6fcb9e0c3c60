"""The notebook environment against a real kernel."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.support.helpers import make_task
from tests.support.sandboxes import tiny_wheel

from super_bench import Action, Environment
from super_bench.errors import EnvironmentClosedError


def execute(env: Environment, code: str) -> Any:
    return env.step(Action.execute(code))


def test_state_persists_between_cells(env: Environment) -> None:
    execute(env, "x = 41")
    step = execute(env, "print(x + 1)")
    assert step.observation == "42\n"
    assert step.outcome == "ok"


def test_expression_results_are_shown(env: Environment) -> None:
    assert execute(env, "6 * 7").observation.strip() == "42"


def test_shell_commands_and_magics(env: Environment) -> None:
    step = execute(env, "!echo hello from the shell")
    assert "hello from the shell" in step.observation
    assert step.exit_code == 0
    execute(env, "!mkdir -p sub && touch sub/marker.txt")
    step = execute(env, "%cd sub\nimport os\nprint(sorted(os.listdir('.')))")
    assert "['marker.txt']" in step.observation
    assert env._kernel.cwd is not None and env._kernel.cwd.endswith("/sub")
    step = execute(env, "%%bash\necho from a bash cell")
    assert "from a bash cell" in step.observation


def test_failed_shell_command_records_its_exit_status(env: Environment) -> None:
    assert execute(env, "!exit 3").exit_code == 3
    assert execute(env, "print('no command')").exit_code is None


@pytest.mark.slow
def test_an_empty_cell_has_no_exit_status_of_its_own(env: Environment) -> None:
    assert execute(env, "!exit 3").exit_code == 3
    for blank in ("", "   \n\t"):  # IPython runs nothing for these
        step = execute(env, blank)
        assert (step.outcome, step.exit_code) == ("ok", None)
    assert execute(env, "# only a comment").exit_code is None


@pytest.mark.slow
def test_errors_are_reported_with_their_traceback(env: Environment) -> None:
    step = execute(env, "def f():\n    return 1 / 0\nf()")
    assert step.outcome == "error"
    assert "ZeroDivisionError" in step.observation
    assert "\x1b[" not in step.observation  # the model sees no colour codes
    assert "\x1b[" in step.raw_output  # grading keeps the raw output


@pytest.mark.slow
def test_input_does_not_hang(env: Environment) -> None:
    step = execute(env, "input('name? ')")
    assert step.outcome == "error"
    assert "StdinNotImplementedError" in step.observation


def test_agent_code_runs_in_the_task_directory_with_a_scrubbed_environment(
    env_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("HARMLESS_SETTING", "visible")
    env = env_factory()
    env.reset(make_task())
    step = execute(
        env,
        "import os, sys\nprint(os.getcwd()); print(os.environ.get('OPENAI_API_KEY'))\n"
        "print(os.environ['HARMLESS_SETTING']); print(os.environ['HOME']); print(sys.prefix)",
    )
    cwd, key, harmless, home, prefix = step.observation.split()
    assert cwd == env._sandbox.workdir
    assert key == "None"
    assert harmless == "visible"
    # HOME and the Python environment are the task's own (where agent code sees them).
    assert home == env._sandbox.inside(env._sandbox.root / "home")
    assert prefix == env._sandbox.inside(env._sandbox.python_dir)


@pytest.mark.slow
def test_soft_timeout_then_continue_wait_then_completion(env_factory: Any) -> None:
    env = env_factory(cell_timeout=1.0)
    env.reset(make_task())
    step = execute(
        env, "import time\nfor i in range(3):\n    print('tick', i, flush=True)\n    time.sleep(0.8)\nprint('finished')"
    )
    assert step.outcome == "timeout"
    assert "tick 0" in step.observation
    assert "still running" in step.observation and "continue_wait" in step.observation
    outputs = [step.raw_output]
    while step.outcome == "timeout":
        step = env.step({"type": "continue_wait"})
        outputs.append(step.raw_output)
    assert step.outcome == "ok"
    assert "finished" in step.observation
    assert "".join(outputs).count("tick") == 3  # nothing lost, nothing repeated


@pytest.mark.slow
def test_interrupt_stops_a_running_cell_and_keeps_state(env_factory: Any) -> None:
    env = env_factory(cell_timeout=0.5)
    env.reset(make_task())
    execute(env, "kept = 'still here'")
    assert execute(env, "import time\nwhile True:\n    time.sleep(0.1)").outcome == "timeout"
    step = env.step({"type": "interrupt"})
    assert step.outcome == "interrupted"
    assert "KeyboardInterrupt" in step.observation
    assert execute(env, "print(kept)").observation == "still here\n"


@pytest.mark.slow
def test_interrupt_reaches_shell_subprocesses(env_factory: Any) -> None:
    env = env_factory(cell_timeout=0.5)
    env.reset(make_task())
    assert execute(env, "!sleep 60").outcome == "timeout"
    started = time.monotonic()
    env.step({"type": "interrupt"})
    assert time.monotonic() - started < 8
    assert execute(env, "print('responsive')").observation == "responsive\n"


@pytest.mark.slow
def test_another_action_interrupts_a_running_cell_first(env_factory: Any) -> None:
    env = env_factory(cell_timeout=0.5)
    env.reset(make_task())
    execute(env, "import time\nfor i in range(100):\n    print('late output', i, flush=True)\n    time.sleep(0.05)")
    step = execute(env, "print('next cell')")
    assert "interrupted first" in step.observation
    assert "late output" not in step.observation  # no stale output leaks into the next cell
    assert step.observation.endswith("next cell\n")


def test_continue_wait_and_interrupt_without_a_running_cell(env: Environment) -> None:
    assert env.step({"type": "continue_wait"}).outcome == "invalid"
    assert env.step({"type": "interrupt"}).outcome == "invalid"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("code", "cause"),
    [
        ("import os\nos._exit(7)", "exited with status 7"),
        ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", "SIGKILL"),
        ("import ctypes\nctypes.string_at(0)", "SIGSEGV"),
    ],
)
def test_a_dead_kernel_is_replaced_and_reported(env_factory: Any, code: str, cause: str) -> None:
    env = env_factory()
    env.reset(make_task())
    execute(env, "lost = 1")
    started = time.monotonic()
    step = execute(env, code)
    assert time.monotonic() - started < 15
    assert step.outcome == "kernel_died"
    assert "kernel died" in step.observation and cause in step.observation
    assert "state was lost" in step.observation
    after = execute(env, "print('alive'); print('lost' in globals())")
    assert after.observation == "alive\nFalse\n"
    assert env._kernel.restarts == 1


@pytest.mark.slow
def test_a_hundred_megabyte_cell(env_factory: Any) -> None:
    env = env_factory(cell_timeout=120)
    env.reset(make_task(landmarks=["Epoch 3 finished"]))
    code = (
        "import sys\n"
        "chunk = ''.join(f'\\r{i % 100:3d}%|' + '#' * 90 for i in range(100_000))\n"  # ~10 MB of redraws
        "for _ in range(10):\n"
        "    sys.stdout.write(chunk)\n"
        "print('\\nEpoch 3 finished')\n"
    )
    step = execute(env, code)
    assert step.outcome == "ok"
    assert len(step.raw_output) > 95_000_000
    assert step.observation.endswith("Epoch 3 finished\n")
    assert len(step.observation) <= env.config.observation_limit + 200
    from super_bench import score_trajectory

    metrics, _ = score_trajectory(env.trajectory, make_task(landmarks=["Epoch 3 finished"]))
    assert metrics.landmarks == 1.0


@pytest.mark.slow
def test_flooding_steps_stop_at_the_episode_output_limit(env_factory: Any, tmp_path: Any) -> None:
    env = env_factory(output_limit=2_000_000, episode_output_limit=3_000_000, observation_limit=1000)
    env.reset(make_task(landmarks=["first 1", "last 3"]))
    flood = "print('first {n}')\nprint('x' * 2_500_000)\nprint('last {n}')"
    steps = [execute(env, flood.format(n=n)) for n in (1, 2, 3)]
    kept = [len(step.raw_output) for step in steps]
    # The first step keeps its per-step limit, the second what is left of the episode's, the third a head and
    # a tail about the size of what the agent is shown.
    assert 1_999_000 < kept[0] < 2_001_000 and 999_000 < kept[1] < 1_001_000 and kept[2] < 1_200
    for step in steps:  # what was kept and what was dropped add up to what the cell printed
        dropped = step.metadata["output_dropped"]
        marker = f"\n[... {dropped:,} characters of output dropped by super-bench ...]\n"
        assert marker in step.raw_output and len(step.raw_output) - len(marker) + dropped == 2_500_016
    assert env.trajectory.metadata["output_limit_reached"] == {"limit": 3_000_000, "step": 1}
    from super_bench import score_trajectory

    # Landmarks are graded on what was kept: the head and the tail of every step.
    metrics, _ = score_trajectory(env.trajectory, make_task(landmarks=["first 3", "last 3", "last 1"]))
    assert metrics.landmarks == 1.0
    assert (env.trajectory.save(tmp_path) and (tmp_path / "trajectory.json").stat().st_size) < 3_200_000
    assert execute(env, "print('still running')").observation == "still running\n"


@pytest.mark.slow
def test_submit_ends_the_episode(env: Environment) -> None:
    step = env.step({"type": "submit", "content": '{"accuracy": 0.5}'})
    assert step.outcome == "ok"
    assert env.done
    assert env.trajectory.submission == {"accuracy": 0.5}
    assert env.trajectory.stop_reason == "submitted"
    with pytest.raises(EnvironmentClosedError):
        execute(env, "print(1)")


def test_a_submission_that_is_not_json_is_recorded_and_the_episode_goes_on(env: Environment) -> None:
    step = env.step({"type": "submit", "content": "{accuracy: 0.5"})
    assert step.outcome == "invalid"
    assert "not valid JSON" in step.observation
    assert not env.done
    env.step({"type": "submit", "content": {"accuracy": 0.5}})
    assert env.trajectory.submission == {"accuracy": 0.5}


@pytest.mark.slow
def test_step_budget_ends_the_episode(env_factory: Any) -> None:
    env = env_factory(max_steps=2)
    env.reset(make_task())
    execute(env, "1")
    assert not env.done
    execute(env, "2")
    assert env.done and env.trajectory.stop_reason == "max_steps"


@pytest.mark.slow
def test_execution_time_budget_ends_the_episode(env_factory: Any) -> None:
    env = env_factory(max_compute=0.5)
    env.reset(make_task())
    execute(env, "import time; time.sleep(0.6)")
    assert env.trajectory.stop_reason == "max_compute"


@pytest.mark.slow
def test_masked_tasks_run_their_pre_executed_cells(env_factory: Any) -> None:
    env = env_factory()
    cells = [json.dumps({"type": "execute", "content": "prepared = 'yes'\nprint('setup done')"})]
    env.reset(make_task(pre_execute_cells=cells, landmarks=["setup done"]))
    (pre,) = env.trajectory.steps
    assert pre.pre_executed and pre.observation == "setup done\n"
    step = execute(env, "print(prepared)")
    assert step.index == 1 and not step.pre_executed
    assert env.trajectory.agent_steps == [step]


@pytest.mark.slow
def test_pip_installs_stay_in_the_task_environment(env: Environment, tmp_path: Any) -> None:
    wheel = tiny_wheel(tmp_path)
    env._sandbox.write_file(wheel.name, wheel.read_bytes())
    step = execute(env, f"!pip install --no-index --no-deps {wheel.name}")
    assert step.exit_code == 0, step.observation
    step = execute(
        env, "import sbtinypkg, sys\nprint(sbtinypkg.VALUE); print(sbtinypkg.__file__.startswith(sys.prefix))"
    )
    assert step.observation == "42\nTrue\n"
    assert (env._sandbox.python_dir / "lib").is_dir()
    assert list(env._sandbox.python_dir.glob("lib/python*/site-packages/sbtinypkg/__init__.py"))
    with pytest.raises(ImportError):
        __import__("sbtinypkg")  # the harness never sees it
    # Packages of the base environment cannot be removed from inside the task.
    base = env._sandbox.base.site_dirs  # type: ignore[attr-defined]
    numpy_files = sorted(str(p) for d in base for p in Path(d).glob("numpy/*.py"))
    assert numpy_files, "the base holds numpy"
    step = execute(env, "!pip uninstall -y numpy")
    assert "outside environment" in step.observation or step.exit_code != 0
    assert execute(env, "import numpy\nprint(numpy.arange(3).sum())").observation == "3\n"
    assert sorted(str(p) for d in base for p in Path(d).glob("numpy/*.py")) == numpy_files


@pytest.mark.skipif(sys.platform != "linux", reason="uses /proc")
def test_closing_twice_is_harmless(env: Environment) -> None:
    first = env.close()
    assert env.close() is first
