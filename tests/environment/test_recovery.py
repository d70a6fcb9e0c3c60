"""Kernel recovery (``environment.kernel.recovery``) on a real kernel in the local sandbox: a kernel that died is
replaced and the note says why, a cell that would not stop costs the kernel, a kernel that cannot start again ends
the episode as the agent's failure (or raises where the agent had not acted), and a limit's end is said as such."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.sandboxes import backend_settings

from super_bench import messages
from super_bench.environment.kernel.client import NotebookKernel
from super_bench.environment.kernel.recovery import Broken, KernelRecovery, limit_note
from super_bench.errors import KernelRestartError
from super_bench.sandbox import SandboxConfig, create_sandbox
from super_bench.sandbox.conformance import wait_for
from super_bench.sandbox.limits import disk

GRACE = 2.0  # seconds an interrupted cell gets to stop
Start = Callable[..., KernelRecovery]


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Start]:
    """Start a local sandbox (with the given limits) and a kernel in it; returns their recovery. All are stopped at
    the end of the test."""
    made: list[KernelRecovery] = []
    root = tmp_path / "sandboxes"
    root.mkdir()

    def starter(**limits: Any) -> KernelRecovery:
        config = SandboxConfig(root=root, **backend_settings("local"), **limits)
        sandbox = create_sandbox(config, "recovery")
        kernel = NotebookKernel(sandbox, max_output_chars=100_000, startup_timeout=60, interrupt_grace=GRACE)
        made.append(KernelRecovery(kernel, sandbox, config))
        sandbox.start()
        kernel.start()
        return made[-1]

    yield starter
    for recovery in made:
        recovery.kernel.shutdown()
        recovery.sandbox.stop()


def output(kernel: NotebookKernel, code: str) -> str:
    result = kernel.execute(code, 30)
    assert result.state == "ok", result.output
    return str(result.output).strip()


def left_running(kernel: NotebookKernel, code: str) -> None:
    """Start ``code`` and return once it has printed ``begun`` (where it is sure to go on running) and still runs."""
    result = kernel.execute(code, 0.5)
    seen, deadline = str(result.output), time.monotonic() + 30
    while "begun" not in seen and kernel.running and time.monotonic() < deadline:
        seen += str(kernel.wait(0.2).output)
    assert "begun" in seen and kernel.running, seen


LAST_WORDS = "import os\nos.write(2, b'last words\\n')\n"


@pytest.mark.parametrize(
    ("death", "cause"),
    [
        ("os._exit(7)", "exited with status 7"),
        (
            "import signal\nos.kill(os.getpid(), signal.SIGKILL)",
            "killed by signal SIGKILL, often a sign of running out",
        ),
    ],
)
def test_a_kernel_that_died_during_an_action_is_replaced_and_the_note_says_why(
    start: Start, death: str, cause: str
) -> None:
    recovery = start()
    kernel = recovery.kernel
    output(kernel, "x = 41")
    assert kernel.execute(LAST_WORDS + death, 30).state == "died"
    note = recovery.replace_dead(agent_acted=True)
    assert f"The kernel died ({cause}" in note
    assert "A new kernel was started: all Python state was lost" in note
    said, _, log = note.partition("Last lines of the kernel's log:\n")
    assert said and "last words" in log.splitlines()
    assert kernel.alive and kernel.restarts == 1 and recovery.broken is None
    assert output(kernel, "print('x' in dir())") == "False"


def test_a_kernel_that_died_between_actions_is_replaced_before_the_next(start: Start) -> None:
    recovery = start()
    kernel = recovery.kernel
    assert recovery.settle(agent_acted=True) == ""  # a kernel alive and idle is left as it is
    output(kernel, "import os, threading\nthreading.Timer(0.2, os._exit, (3,)).start()")
    assert wait_for(lambda: not kernel.alive, 30), "the kernel did not exit"
    assert recovery.settle(agent_acted=True) == messages.KERNEL_HAD_DIED
    assert kernel.alive and kernel.restarts == 1
    assert output(kernel, "print(1 + 1)") == "2"


def test_a_cell_still_running_is_interrupted_before_the_next_action_and_the_kernel_kept(start: Start) -> None:
    recovery = start()
    kernel = recovery.kernel
    output(kernel, "x = 41")
    left_running(kernel, "import time\nprint('begun', flush=True)\ntime.sleep(60)")
    assert recovery.settle(agent_acted=True) == messages.PREVIOUS_CELL_INTERRUPTED
    assert not kernel.running and kernel.restarts == 0
    assert output(kernel, "print(x + 1)") == "42"


def test_a_cell_that_would_not_stop_costs_the_kernel_and_the_note_says_so(start: Start) -> None:
    recovery = start()
    kernel = recovery.kernel
    output(kernel, "x = 41")
    ignore = "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nprint('begun', flush=True)\n"
    left_running(kernel, ignore + "while True:\n    time.sleep(0.1)")
    assert recovery.settle(agent_acted=True) == messages.PREVIOUS_CELL_WOULD_NOT_STOP
    assert kernel.alive and not kernel.running and kernel.restarts == 1
    assert output(kernel, "print('x' in dir())") == "False"


def break_kernel_start(kernel: NotebookKernel, tmp_path: Path) -> None:
    """As agent code can: remove the task environment's ``python``, which every kernel of the task starts from."""
    venv = output(kernel, "import os\nprint(os.environ['VIRTUAL_ENV'])")
    assert Path(venv).is_relative_to(tmp_path)  # the task's own copy, never the harness's Python
    output(kernel, "os.unlink(os.path.join(os.environ['VIRTUAL_ENV'], 'bin', 'python'))")
    assert kernel.execute("os._exit(1)", 30).state == "died"


def test_a_kernel_that_cannot_start_again_after_the_agent_acted_ends_the_episode(start: Start, tmp_path: Path) -> None:
    recovery = start()
    break_kernel_start(recovery.kernel, tmp_path)
    note = recovery.replace_dead(agent_acted=True)
    assert "The kernel died (exited with status 1)." in note
    assert "no new kernel could be started" in note and "The episode ends here" in note
    assert isinstance(recovery.broken, Broken)
    assert recovery.broken.stop_reason == "environment_broken"
    assert recovery.broken.error.startswith("no new kernel could be started: the kernel exited during start-up")
    assert not recovery.kernel.alive


def test_a_kernel_that_cannot_start_again_before_the_agent_acted_is_the_infrastructures_failure(
    start: Start, tmp_path: Path
) -> None:
    recovery = start()
    break_kernel_start(recovery.kernel, tmp_path)
    with pytest.raises(KernelRestartError, match="no new kernel could be started"):
        recovery.settle(agent_acted=False)
    assert recovery.broken is None


def test_a_kernel_the_wall_time_limit_stopped_is_not_replaced_and_the_note_names_the_limit(start: Start) -> None:
    recovery = start(wall_time_limit=5)  # time enough for the kernel to start first
    kernel, sandbox = recovery.kernel, recovery.sandbox
    assert kernel.execute("import time\ntime.sleep(60)", 30).state == "died"
    assert sandbox.ended and sandbox.expired
    note = recovery.replace_dead(agent_acted=True)
    assert note == limit_note(sandbox, recovery.limits) == messages.wall_time_passed(5)
    assert "wall-time limit (5 s) has passed" in note
    assert not kernel.alive and kernel.restarts == 0  # nothing more starts once a limit ended the task
    assert recovery.settle(agent_acted=True) == ""
    assert not kernel.alive and recovery.broken is None


def test_a_kernel_the_disk_limit_stopped_gets_the_disk_limits_note(
    start: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(disk.WATCH, "interval", 0.2)
    recovery = start(disk_limit="16m", disk_enforcement="watch")
    kernel, sandbox = recovery.kernel, recovery.sandbox
    fill = "with open('big', 'wb') as f:\n    f.write(b'0' * (32 << 20))\nimport time\ntime.sleep(60)"
    assert kernel.execute(fill, 30).state == "died"
    assert sandbox.ended and not sandbox.expired
    note = recovery.replace_dead(agent_acted=True)
    assert note == limit_note(sandbox, recovery.limits)
    assert "The task's disk limit (16 MiB) was passed; all the task ran was stopped." in note
    assert not kernel.alive and kernel.restarts == 0
