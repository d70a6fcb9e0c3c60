"""The whole conformance suite of a sandbox backend: what ``super-bench sandbox check --conformance NAME`` runs.

It is the sandbox's own checks (``super_bench.sandbox.conformance``: commands, files, a kernel, credentials,
the network off, a clean stop) and the notebook's behaviour on the backend, through a real ``Environment``:
state between cells, shell commands, ``%cd``, files both ways, the edit action (applied, refused, a
read-only file, a FIFO that must not hang it), the kernel's exit status and death reported and the kernel
replaced, a soft timeout and an interrupt that reaches a shell command, a kernel outliving the thread that
started it, agent code unable to import the harness, links planted over the kernel's files, the memory,
file-size, process and wall-time limits, and a close that leaves nothing. One environment is shared by the
checks that do not disturb each other; the limits get one each. The checks hold for any backend: where a
backend is not isolating (``Sandbox.isolates`` false), the process and wall-time limits are checked as far as
the contract asks of it (the processes end with the task; the episode ends at the limit).
"""

from __future__ import annotations

import functools
import os
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from super_bench.actions import Action
from super_bench.environment import EnvConfig, Environment
from super_bench.sandbox import Sandbox, SandboxConfig
from super_bench.sandbox.conformance import (
    CheckFailed,
    Checklist,
    ConformanceReport,
    backend_name,
    expect,
    sandbox_checks,
)
from super_bench.tasks.model import Task
from super_bench.trajectory import Step


def run_conformance(cls: type[Sandbox], config: SandboxConfig | None = None) -> ConformanceReport:
    """Run every check of the suite on backend ``cls``, made from ``config`` (default: its defaults)."""
    config = config or SandboxConfig(backend=backend_name(cls))
    checklist = Checklist()
    if sandbox_checks(checklist, cls, config):
        notebook_checks(checklist, cls, config)
    return ConformanceReport(backend=backend_name(cls), checks=checklist.results)


def notebook_checks(checklist: Checklist, cls: type[Sandbox], config: SandboxConfig) -> None:
    """Add the notebook's checks on backend ``cls`` to ``checklist``."""
    made: list[Environment] = []

    def start(cell_timeout: float = 30, **limits: object) -> Environment:
        env = Environment(
            EnvConfig(cell_timeout=cell_timeout, sandbox=config.model_copy(update=limits)),
            sandbox_factory=cls,
        )
        made.append(env)
        env.reset(Task(task_id="conformance", query="conformance"))
        return env

    try:
        shared: list[Environment] = []
        if not checklist.check("a notebook starts on it", lambda: shared.append(_started_in_a_thread(start))):
            return
        (env,) = shared
        for title, body in _SHARED:
            checklist.check(title, functools.partial(body, env))
        checklist.check("closing the notebook leaves no directory", lambda: _close(env))
        checklist.check("the memory limit contains a memory bomb", lambda: _memory(start))
        checklist.check("the file-size limit stops a large write", lambda: _file_size(start))
        checklist.check("the process limit contains a fork bomb", lambda: _processes(cls, start))
        checklist.check("the wall-time limit ends the episode", lambda: _wall_time(cls, start))
    finally:
        for made_env in made:
            made_env.close()


def run(env: Environment, code: str) -> Step:
    return env.step(Action.execute(code))


def edit(env: Environment, path: str, before: str, after: str) -> Step:
    return env.step(Action(type="edit", content=f"{path}\n<<<BEFORE_EDIT>>>\n{before}\n<<<AFTER_EDIT>>>\n{after}"))


def shown(env: Environment, code: str, expected: str) -> None:
    step = run(env, code)
    expect(step.observation == expected, f"{code!r} showed {step.observation!r}, not {expected!r}")


def _started_in_a_thread(start: Callable[..., Environment]) -> Environment:
    """Servers, Inspect and Ray start environments in worker threads that retire long before the episode
    ends: the kernel must not die with the thread (a parent-death signal would fire as it exits)."""
    started: list[Environment] = []
    failed: list[BaseException] = []

    def body() -> None:
        try:
            started.append(start(cell_timeout=5))
        except BaseException as e:
            failed.append(e)

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
    time.sleep(1)
    shown(started[0], "print('alive')", "alive\n")
    expect(started[0]._kernel.restarts == 0, "the kernel died when the thread that started it ended")
    return started[0]


def _state(env: Environment) -> None:
    run(env, "x = 41")
    shown(env, "print(x + 1)", "42\n")


def _shell(env: Environment) -> None:
    step = run(env, "!echo from the shell; exit 3")
    expect("from the shell" in step.observation, f"a shell command showed {step.observation!r}")
    expect(step.exit_code == 3, f"a shell command's exit status 3 came back as {step.exit_code}")


def _cd(env: Environment) -> None:
    try:
        step = run(env, "!mkdir -p sub && touch sub/marker\n%cd sub\nimport os\nprint(sorted(os.listdir('.')))")
        expect(step.observation.endswith("['marker']\n"), f"after %cd sub a cell showed {step.observation!r}")
        expect(env.cwd == f"{env._sandbox.workdir}/sub", f"after %cd sub the notebook is in {env.cwd}")
    finally:
        run(env, f"%cd {env._sandbox.workdir}")


def _files(env: Environment) -> None:
    env._sandbox.write_file("data/in.txt", b"from the harness\n")
    shown(env, "print(open('data/in.txt').read(), end='')", "from the harness\n")
    run(env, "open('out.bin', 'wb').write(bytes(range(256)))")
    expect(env._sandbox.read_file("out.bin") == bytes(range(256)), "the harness read back other bytes than written")


def _home(env: Environment) -> None:
    expect(run(env, "!touch ~/writable && ls ~/writable").exit_code == 0, "agent code cannot write its home")


def _edits(env: Environment) -> None:
    run(env, "open('m.py', 'w').write('a = 1\\nb = 2\\n')")
    step = edit(env, "m.py", "b = 2", "b = 3")
    expect(step.outcome == "ok", f"an edit was not applied: {step.observation}")
    expect(env._sandbox.read_file("m.py") == b"a = 1\nb = 3\n", "the edited file does not hold the edit")


def _refused_edits(env: Environment) -> None:
    step = edit(env, "m.py", "c = 4", "c = 5")
    expect(step.outcome == "invalid", f"an edit of text the file lacks came back {step.outcome}")
    expect(env._sandbox.read_file("m.py") == b"a = 1\nb = 3\n", "a refused edit changed the file")
    step = edit(env, "nope.py", "a", "b")
    expect(step.outcome == "invalid" and "does not exist" in step.observation, f"a missing file: {step.observation}")


def _read_only_edit(env: Environment) -> None:
    # A file agent code may not write in place is replaced, as agent code could (it owns the directory).
    run(env, "!mkdir -p ro && printf 'x\\n' > ro/n.txt && chmod a-w ro/n.txt")
    step = edit(env, "ro/n.txt", "x", "y")
    expect(step.outcome == "ok", f"an edit of a read-only file of the task failed: {step.observation}")
    expect(env._sandbox.read_file("ro/n.txt") == b"y\n", "the read-only file does not hold the edit")


def _fifo_edit(env: Environment) -> None:
    run(env, "import os\nos.mkfifo('pipe.py')")
    step = edit(env, "pipe.py", "a", "b")
    expect(step.outcome == "invalid", f"an edit of a FIFO came back {step.outcome}: {step.observation}")
    shown(env, "print('still here')", "still here\n")


def _no_harness(env: Environment) -> None:
    # Nor the harness's own dependencies that SUPER's environment lacks (openai).
    for module in ("super_bench", "openai"):
        step = run(env, f"import {module}")
        expect(f"No module named '{module}'" in step.observation, f"agent code imported {module}: {step!r}")


def _interrupt(env: Environment) -> None:
    run(env, "kept = 'still here'")
    step = run(env, "!sleep 60")
    expect(step.outcome == "timeout", f"`!sleep 60` past the cell timeout came back {step.outcome}")
    step = env.step(Action(type="interrupt"))
    expect(step.outcome == "interrupted", f"an interrupt of `!sleep 60` came back {step.outcome}")
    shown(env, "print(kept)", "still here\n")


def _died(env: Environment, code: str, cause: str) -> None:
    restarts = env._kernel.restarts
    run(env, "lost = 1\nopen('kept.txt', 'w').write('on disk')")
    step = run(env, code)
    expect(step.outcome == "kernel_died", f"{code!r} came back {step.outcome}")
    expect(cause in step.observation and "state was lost" in step.observation, f"it said {step.observation!r}")
    shown(env, "print('lost' in globals(), open('kept.txt').read())", "False on disk\n")
    expect(env._kernel.restarts == restarts + 1, "the kernel was not replaced once")


def _planted_links(env: Environment) -> None:
    """The kernel's connection file and sockets lie where agent code can write: replaced with links to a host
    file and a host socket, and the kernel killed, the harness neither reads, writes nor connects there."""
    # A unix socket's path holds at most 107 bytes: under /tmp, not a (deep) temporary directory of the caller's.
    short = "/tmp" if os.path.isdir("/tmp") else None
    with tempfile.TemporaryDirectory(prefix="sbc-", dir=short) as host:
        secret, victim = Path(host, "secret.txt"), Path(host, "victim.txt")
        secret.write_text("host-secret-9d1c\n")
        victim.write_text("untouched\n")
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(os.path.join(host, "host.sock"))
        listener.listen()
        listener.settimeout(0.2)
        try:
            where = run(env, "import os, sys\nprint(os.path.dirname(sys.argv[sys.argv.index('-f') + 1]))")
            step = run(
                env, _PLANT.format(d=where.observation.strip(), secret=str(secret), victim=str(victim), sock=host)
            )
            expect(step.outcome == "kernel_died", f"the attack came back {step.outcome}: {step.observation[-300:]}")
            shown(env, "print('after the attack')", "after the attack\n")
            seen = "".join(s.observation for s in env.trajectory.steps)
            expect("host-secret" not in seen, "the harness read a host file through a planted link")
            expect(victim.read_text() == "untouched\n", "the harness wrote a host file through a planted link")
            try:
                listener.accept()[0].close()
            except TimeoutError:
                return
            raise CheckFailed("the harness connected to a host socket through a planted link")
        finally:
            listener.close()


_PLANT = (
    "import os, signal\n"
    "d = {d!r}\n"
    "for name in os.listdir(d):\n"
    "    path = os.path.join(d, name)\n"
    "    os.unlink(path)\n"
    "    os.symlink({secret!r} if name.endswith('.json') else {sock!r} + '/host.sock', path)\n"
    "for name in ['kernel.log', 'k2.json'] + [f'k2-{{port}}' for port in range(1, 6)]:\n"
    "    os.symlink({victim!r}, os.path.join(d, name))\n"
    "os.kill(os.getpid(), signal.SIGKILL)\n"
)

_SHARED: list[tuple[str, Callable[[Environment], None]]] = [
    ("state persists between cells", _state),
    ("shell commands run, with their output and exit status", _shell),
    ("%cd moves the notebook", _cd),
    ("files go between the harness and cells", _files),
    ("agent code can write its home", _home),
    ("an edit is applied", _edits),
    ("an edit of missing text or a missing file is refused and changes nothing", _refused_edits),
    ("an edit of a read-only file of the task is applied", _read_only_edit),
    ("an edit of a FIFO gives up instead of hanging", _fifo_edit),
    ("agent code cannot import the harness or its dependencies", _no_harness),
    ("a soft timeout, then an interrupt reaches a shell command", _interrupt),
    (
        "the kernel's exit status is reported and it is replaced",
        lambda e: _died(e, "import os\nos._exit(7)", "exited with status 7"),
    ),
    (
        "a kernel killed by a signal is reported and replaced",
        lambda e: _died(e, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", "SIGKILL"),
    ),
    ("links planted over the kernel's files do not reach the host", _planted_links),
]


def _close(env: Environment) -> None:
    runtime = Path(env._sandbox.runtime_dir)
    env.close()
    expect(not runtime.exists(), f"closing left the runtime directory {runtime}")


def _memory(start: Callable[..., Environment]) -> None:
    env = start(memory_limit=512 << 20)
    step = run(env, "chunks = []\nwhile True:\n    chunks.append(bytearray(50 * 2**20))")
    contained = step.outcome == "kernel_died" or (step.outcome == "error" and "MemoryError" in step.observation)
    expect(contained, f"a memory bomb under a 512 MiB limit came back {step.outcome}: {step.observation[-300:]}")
    shown(env, "chunks = None\nprint('alive')", "alive\n")


def _file_size(start: Callable[..., Environment]) -> None:
    env = start(max_file_size=1 << 20)
    step = run(env, "open('big', 'wb').write(b' ' * 2**21)")
    expect("File too large" in step.observation, f"a 2 MiB write under a 1 MiB limit showed {step.observation!r}")
    expect(run(env, "!head -c 500000 /dev/zero > small").exit_code == 0, "a write under the limit failed")


_FORK = (
    "import os, time\nforked = 0\ntry:\n    for _ in range(100):\n        if os.fork() == 0:\n"
    "            time.sleep(3)\n            os._exit(0)\n        forked += 1\n"
    "except OSError as e:\n    print('refused:', e.strerror)\nprint('forked', forked)"
)


def _processes(cls: type[Sandbox], start: Callable[..., Environment]) -> None:
    env = start(max_processes=32)
    step = run(env, _FORK)
    forked = int(step.observation.rsplit("forked", 1)[-1]) if "forked" in step.observation else -1
    if cls.isolates:  # an isolating backend enforces the limit; a plain one only ends the processes with the task
        expect(0 <= forked < 32, f"100 forks under a limit of 32 processes showed {step.observation!r}")
    else:
        expect(forked >= 0, f"100 forks showed {step.observation!r}")
    # Threads count too: until its children exit, the kernel itself may not start one, and cells fail with a
    # clear error (the episode goes on); then it works again. On a busy machine the children take a while.
    deadline = time.monotonic() + 30
    while (step := run(env, "print('still working')")).observation != "still working\n":
        if time.monotonic() > deadline:
            break
        time.sleep(1)
    expect(step.observation == "still working\n", f"30 s after the fork bomb the kernel showed {step.observation!r}")


def _wall_time(cls: type[Sandbox], start: Callable[..., Environment]) -> None:
    # The clock runs from the sandbox's start: room for a container's kernel to start first.
    env = start(cell_timeout=15, wall_time_limit=10)
    step = run(env, "import time\ntime.sleep(60)")
    expect(env.trajectory.stop_reason == "max_wall_time", f"the episode ended as {env.trajectory.stop_reason}")
    if cls.isolates:  # isolating backends kill at the limit; a plain one is checked between steps
        expect(step.outcome == "kernel_died" and "wall-time limit" in step.observation, f"it said {step!r}")


__all__ = ["notebook_checks", "run_conformance"]
