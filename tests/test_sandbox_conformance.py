"""One conformance suite, run against every sandbox backend that works here (the others are
skipped, saying why): the same notebook behaviour and the same clean stop everywhere."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from tests.helpers import make_task
from tests.sandboxes import BACKENDS, backend_settings, tiny_wheel, token

from super_bench import Action, Environment
from super_bench.sandbox.conformance import pids_with, wait_for


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


@pytest.mark.slow
def test_state_persists_and_shell_and_magics_work(start: Any) -> None:
    env = start()
    run(env, "x = 41")
    assert run(env, "print(x + 1)").observation == "42\n"
    step = run(env, "!echo from the shell; exit 3")
    assert "from the shell" in step.observation and step.exit_code == 3
    step = run(env, "!mkdir -p sub && touch sub/marker\n%cd sub\nimport os\nprint(sorted(os.listdir('.')))")
    assert "['marker']" in step.observation
    assert env.kernel.cwd == f"{env.sandbox.workdir}/sub"


@pytest.mark.slow
def test_agent_code_sees_its_own_directory_and_no_secrets(start: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-conformance-secret")
    env = start()
    step = run(env, "import os\nprint(os.getcwd()); print(os.environ.get('OPENAI_API_KEY'))\n!touch ~/writable")
    cwd, key = step.observation.split()
    assert cwd == env.sandbox.workdir
    assert key == "None"
    assert run(env, "!ls ~/writable").exit_code == 0


@pytest.mark.slow
def test_files_in_and_out(start: Any) -> None:
    env = start()
    env.sandbox.write_file("data/in.txt", b"from the harness\n")
    assert run(env, "print(open('data/in.txt').read(), end='')").observation == "from the harness\n"
    run(env, "open('out.bin', 'wb').write(bytes(range(256)))")
    assert env.sandbox.read_file("out.bin") == bytes(range(256))
    assert env.sandbox.read_file(f"{env.sandbox.workdir}/out.bin") == bytes(range(256))
    with pytest.raises(FileNotFoundError):
        env.sandbox.read_file("missing.txt")


@pytest.mark.slow
def test_edits_read_and_write_as_agent_code_would(start: Any) -> None:
    env = start()
    run(
        env,
        "open('m.py', 'w').write('a = 1\\nb = 2\\n')\n!mkdir -p sub && printf 'x\\n' > sub/n.txt && chmod a-w sub/n.txt",
    )
    step = env.step(Action(type="edit", content="m.py\n<<<BEFORE_EDIT>>>\nb = 2\n<<<AFTER_EDIT>>>\nb = 3"))
    assert step.outcome == "ok", step.observation
    assert env.sandbox.read_file("m.py") == b"a = 1\nb = 3\n"
    refused = env.step(Action(type="edit", content="m.py\n<<<BEFORE_EDIT>>>\nc = 4\n<<<AFTER_EDIT>>>\nc = 5"))
    assert refused.outcome == "invalid"
    assert env.sandbox.read_file("m.py") == b"a = 1\nb = 3\n"
    missing = env.step(Action(type="edit", content="nope.py\n<<<BEFORE_EDIT>>>\na\n<<<AFTER_EDIT>>>\nb"))
    assert (missing.outcome, "does not exist" in missing.observation) == ("invalid", True)
    # A file agent code may not write in place is replaced, as agent code could (it owns the directory).
    step = env.step(Action(type="edit", content="sub/n.txt\n<<<BEFORE_EDIT>>>\nx\n<<<AFTER_EDIT>>>\ny"))
    assert step.outcome == "ok", step.observation
    assert env.sandbox.read_file("sub/n.txt") == b"y\n"


@pytest.mark.slow
def test_installs_land_in_the_task_layer(start: Any, tmp_path: Path) -> None:
    env = start()
    wheel = tiny_wheel(tmp_path)
    env.sandbox.write_file(wheel.name, wheel.read_bytes())
    step = run(env, f"!pip install -q --no-index --no-deps {wheel.name}")
    assert step.exit_code == 0, step.observation
    assert run(env, "import sbtinypkg; print(sbtinypkg.VALUE)").observation == "42\n"
    with pytest.raises(ImportError):
        __import__("sbtinypkg")


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_hundred_megabyte_output(start: Any) -> None:
    env = start(cell_timeout=120)
    step = run(env, "import sys\nfor _ in range(100):\n    sys.stdout.write('#' * 1_000_000)\nprint('\\ndone')")
    assert step.outcome == "ok"
    assert len(step.raw_output) >= 100_000_000
    assert step.observation.endswith("done\n")


@pytest.mark.slow
def test_a_memory_bomb_is_contained(start: Any) -> None:
    env = start(sandbox={"memory_limit": "512m"})
    step = run(env, "chunks = []\nwhile True:\n    chunks.append(bytearray(50 * 2**20))")
    assert step.outcome == "kernel_died" or (step.outcome == "error" and "MemoryError" in step.observation)
    assert run(env, "chunks = None\nprint('alive')").observation == "alive\n"


@pytest.mark.slow
def test_the_file_size_limit(start: Any) -> None:
    env = start(sandbox={"max_file_size": "1m"})
    assert "File too large" in run(env, "open('big', 'wb').write(b' ' * 2**21)").observation
    assert run(env, "!head -c 500000 /dev/zero > small && ls -l small").exit_code == 0


@pytest.mark.slow
def test_the_wall_time_limit_ends_the_episode(start: Any, backend: dict[str, Any]) -> None:
    # The clock runs from the sandbox's start: a container's kernel can take seconds more than 3 to start.
    slow = backend["backend"] == "docker"
    env = start(cell_timeout=40 if slow else 5, sandbox={"wall_time_limit": 15 if slow else 3})
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


# The kernel's own machinery, pinned old by the task (as old requirements files do), installed here as empty
# shells: were the kernel to import any of them, it could not start.
KERNEL_MACHINERY = {
    "typing_extensions": ("typing_extensions", "4.9.0"),
    "traitlets": ("traitlets", "5.0.5"),
    "tornado": ("tornado", "6.1"),
    "pyzmq": ("zmq", "1.0"),
    "jupyter_client": ("jupyter_client", "1.0"),
}
# ... and what cells talk to the running notebook through: user code keeps the kernel's own, live copy.
NOTEBOOK = {"ipykernel": ("ipykernel", "1.0"), "ipython": ("IPython", "1.0")}


@pytest.mark.slow
def test_the_kernel_survives_whatever_the_agent_installs(start: Any, tmp_path: Path) -> None:
    env = start()
    for name, (module, version) in {**KERNEL_MACHINERY, **NOTEBOOK}.items():
        wheel = tiny_wheel(tmp_path, name, version=version, module=module)
        env.sandbox.write_file(f"wheels/{wheel.name}", wheel.read_bytes())
    step = run(env, "!pip install -q --no-index --no-deps wheels/*.whl")
    assert step.exit_code == 0, step.observation
    assert run(env, "import os\nos._exit(1)").outcome == "kernel_died"
    modules = ", ".join(module for module, _ in KERNEL_MACHINERY.values())
    step = run(env, f"import {modules}\nprint(*(m.__version__ for m in ({modules},)))\n!echo the shell works")
    assert step.observation == f"{' '.join(v for _, v in KERNEL_MACHINERY.values())}\nthe shell works\n"
    assert env.kernel.restarts == 1
    # The notebook's own packages are the kernel's: display() reaches the notebook.
    step = run(
        env,
        "import IPython, ipykernel\nfrom IPython.display import display\ndisplay({'shown': IPython.__version__ != '1.0'})",
    )
    assert step.observation == "{'shown': True}\n"
    # Magics, tracebacks and interrupts still work on the kernel's own machinery.
    step = run(env, "%cd /tmp\n1 / 0")
    assert step.outcome == "error" and "ZeroDivisionError" in step.observation
    assert run(env, "import traitlets, json\nprint(json.dumps([traitlets.VALUE]))").observation == "[42]\n"


@pytest.mark.slow
def test_agent_code_cannot_import_the_harness(start: Any) -> None:
    env = start()
    step = run(env, "import super_bench")
    assert step.outcome == "error" and "No module named 'super_bench'" in step.observation
    # Nor the harness's own dependencies that SUPER's environment lacks.
    assert "No module named 'openai'" in run(env, "import openai").observation


@pytest.mark.slow
def test_a_kernel_outlives_the_thread_that_started_it(start: Any) -> None:
    # Servers, Inspect and Ray start environments in worker threads that retire long before the episode ends.
    started: list[Environment] = []
    thread = threading.Thread(target=lambda: started.append(start()))
    thread.start()
    thread.join()
    (env,) = started
    # A parent-death signal (bubblewrap's --die-with-parent) fires as the thread exits: a kernel killed by it
    # would be gone well within this wait.
    time.sleep(1)
    assert run(env, "print('alive')").observation == "alive\n"
    assert env.kernel.restarts == 0


@pytest.mark.slow
def test_harness_files_cannot_be_turned_against_the_host(start: Any, tmp_path: Path) -> None:
    """The kernel's connection file and sockets lie where agent code can write: replace them all with links to
    a host file and a host socket, kill the kernel, and the harness neither reads, writes nor connects there."""
    secret = tmp_path / "secret.txt"
    secret.write_text("host-secret-9d1c\n")
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched\n")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(tmp_path / "host.sock"))
    listener.listen()
    listener.settimeout(0.2)
    env = start()
    # The kernel's command line names its connection file, in the directory of its sockets.
    sockets_dir = run(env, "import os, sys\nprint(os.path.dirname(sys.argv[sys.argv.index('-f') + 1]))")
    attack = (
        "import os, signal\n"
        f"d = {sockets_dir.observation.strip()!r}\n"
        "for name in os.listdir(d):\n"
        "    path = os.path.join(d, name)\n"
        "    os.unlink(path)\n"
        f"    os.symlink({str(secret)!r} if name.endswith('.json') else {str(tmp_path / 'host.sock')!r}, path)\n"
        "for name in ['kernel.log', 'k2.json'] + [f'k2-{port}' for port in range(1, 6)]:\n"
        f"    os.symlink({str(victim)!r}, os.path.join(d, name))\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    step = run(env, attack)
    assert step.outcome == "kernel_died"
    step = run(env, "print('after the attack')")
    assert step.observation == "after the attack\n"
    seen = "".join(s.observation for s in env.trajectory.steps)
    assert "host-secret" not in seen
    assert victim.read_text() == "untouched\n"
    with pytest.raises(TimeoutError):
        listener.accept()  # the harness never connected to the host's socket
    listener.close()


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["bwrap", "local", "docker"])
def test_an_edit_of_a_fifo_gives_up_instead_of_hanging(
    env_factory: Any, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    from super_bench.sandbox.backends import bwrap

    monkeypatch.setattr(bwrap, "FILE_TIMEOUT", 2.0)
    env: Environment = env_factory(sandbox=backend_settings(backend))
    env.reset(make_task())
    run(env, "import os\nos.mkfifo('pipe.py')")
    started = time.monotonic()
    step = env.step(Action(type="edit", content="pipe.py\n<<<BEFORE_EDIT>>>\na\n<<<AFTER_EDIT>>>\nb"))
    assert step.outcome == "invalid" and time.monotonic() - started < 30
    assert run(env, "print('still here')").observation == "still here\n"
