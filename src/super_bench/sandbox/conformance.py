"""The checks every sandbox backend must pass on its own, shipped so that a plug-in's author can run them.

``check_conformance(cls, config)`` starts one sandbox of the backend and checks, in a few seconds: that it
says it can run here, that commands run in the work directory with their exit status and output and are
stopped at their timeout, that credentials of the host do not reach agent code, that files go in and out
(a missing one is ``FileNotFoundError``), that a kernel starts, runs code and is killed, that it describes
itself and tells its usage as records, that the network is off where asked (or the backend refuses to
start without it), and that ``stop`` leaves no process, daemons included, and no runtime directory behind.

These are the sandbox's own checks. The whole suite, which adds the notebook's behaviour on the backend
(limits, the kernel's exit status, edits, the adversarial cases), is ``super_bench.conformance``, and
``super-bench sandbox check --conformance BACKEND`` runs it on a registered backend. Each check's result is
reported; a check that fails says what it saw.
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from collections.abc import Callable
from pathlib import Path
from queue import Empty
from typing import Any

from super_bench._pydantic import Model
from super_bench.errors import SandboxError
from super_bench.sandbox.base import KernelLaunch, Sandbox, SandboxDescription, Usage
from super_bench.sandbox.config import SandboxConfig

_SECRET = "SUPER_BENCH_CONFORMANCE_TOKEN"


class CheckResult(Model):
    """One conformance check: its name, whether it passed, and what was seen where it did not."""

    name: str
    passed: bool
    detail: str = ""


class ConformanceReport(Model):
    """Every check run on one backend, in the order they ran."""

    backend: str
    checks: list[CheckResult]

    @property
    def passed(self) -> bool:
        return all(check.passed for check in self.checks)

    def failures(self) -> list[CheckResult]:
        return [check for check in self.checks if not check.passed]


class CheckFailed(Exception):
    """A check saw something other than what the contract says; its message says what."""


def expect(condition: object, detail: str) -> None:
    """Fail the running check, saying ``detail``, unless ``condition`` holds."""
    if not condition:
        raise CheckFailed(detail)


class Checklist:
    """Runs checks one after another and keeps their results: a check passes unless it raises."""

    def __init__(self) -> None:
        self.results: list[CheckResult] = []

    def check(self, title: str, body: Callable[[], object]) -> bool:
        try:
            body()
        except CheckFailed as e:
            self.results.append(CheckResult(name=title, passed=False, detail=str(e)))
            return False
        except Exception as e:  # a plug-in's own failure is a failed check, said as it was raised
            self.results.append(CheckResult(name=title, passed=False, detail=f"{type(e).__name__}: {e}"))
            return False
        self.results.append(CheckResult(name=title, passed=True))
        return True


def backend_name(cls: type[Sandbox]) -> str:
    return str(getattr(cls, "name", cls.__name__))


def check_conformance(cls: type[Sandbox], config: SandboxConfig | None = None) -> ConformanceReport:
    """Run the sandbox's own checks on a sandbox of ``cls`` made from ``config`` (default: the defaults, with
    this backend)."""
    config = config or SandboxConfig(backend=backend_name(cls))
    checklist = Checklist()
    sandbox_checks(checklist, cls, config)
    return ConformanceReport(backend=backend_name(cls), checks=checklist.results)


def sandbox_checks(checklist: Checklist, cls: type[Sandbox], config: SandboxConfig) -> bool:
    """Add the sandbox's own checks to ``checklist``; whether the backend could run here and start at all."""
    if not checklist.check("it can run here (check)", lambda: cls.check(config)):
        return False
    sandbox = cls(config, "conformance")
    os.environ[_SECRET] = secrets.token_hex(8)
    try:
        if not checklist.check("it starts", sandbox.start):
            return False
        checklist.check("commands run in the work directory", lambda: _commands(sandbox))
        checklist.check("a command is stopped at its timeout", lambda: _timeout(sandbox))
        checklist.check("credentials of the host do not reach agent code", lambda: _no_secrets(sandbox))
        checklist.check("files go in and out", lambda: _files(sandbox))
        checklist.check("reading a missing file raises FileNotFoundError", lambda: _missing(sandbox))
        checklist.check("a kernel starts, runs code and is killed", lambda: _kernel(sandbox))
        checklist.check("it describes itself and its usage as records", lambda: _records(cls, sandbox, config))
        checklist.check("stop leaves no process, daemons included, and no directory", lambda: _stop(sandbox))
    finally:
        os.environ.pop(_SECRET, None)
        sandbox.stop()
    checklist.check("the network is off where asked", lambda: _network_off(cls, config))
    return True


def _commands(sandbox: Sandbox) -> None:
    result = sandbox.run(["sh", "-c", "pwd; echo out; echo err >&2; exit 3"], timeout=60)
    expect(result.returncode == 3, f"exit status 3 came back as {result.returncode}")
    lines = result.stdout.split()
    expect(lines[:1] == [sandbox.workdir], f"ran in {lines[:1]}, not the work directory {sandbox.workdir}")
    expect(lines[1:] == ["out"] and result.stderr.strip() == "err", f"output came back as {result!r}")


def _timeout(sandbox: Sandbox) -> None:
    started = time.monotonic()
    result = sandbox.run(["sleep", "30"], timeout=1)
    expect(result.timed_out, f"`sleep 30` with a timeout of 1 s was not reported as timed out: {result!r}")
    expect(time.monotonic() - started < 15, "`sleep 30` with a timeout of 1 s ran on past 15 s")


def _no_secrets(sandbox: Sandbox) -> None:
    result = sandbox.run(["env"], timeout=60)
    expect(result.returncode == 0, f"`env` failed: {result!r}")
    expect(_SECRET not in result.stdout, f"{_SECRET}, a credential's name, reached agent code")


def _files(sandbox: Sandbox) -> None:
    data = bytes(range(256))
    sandbox.write_file("conformance/in.bin", data)
    expect(sandbox.read_file("conformance/in.bin") == data, "a file read back differs from what was written")
    absolute = f"{sandbox.workdir}/conformance/in.bin"
    expect(sandbox.read_file(absolute) == data, f"{absolute} is not the file written as conformance/in.bin")
    seen = sandbox.run(["test", "-f", "conformance/in.bin"], timeout=60)
    expect(seen.returncode == 0, f"agent code does not see a file the harness wrote: {seen!r}")
    made = sandbox.run(["sh", "-c", "printf made > conformance/out.txt"], timeout=60)
    expect(made.returncode == 0, f"agent code could not write in its work directory: {made!r}")
    expect(sandbox.read_file("conformance/out.txt") == b"made", "the harness does not see what agent code wrote")


def _missing(sandbox: Sandbox) -> None:
    try:
        sandbox.read_file("conformance/missing.txt")
    except FileNotFoundError:
        return
    raise CheckFailed("reading a missing file did not raise FileNotFoundError")


def _kernel(sandbox: Sandbox) -> None:
    launch = sandbox.launch_kernel([], timeout=60)
    expect(isinstance(launch, KernelLaunch), f"launch_kernel returned {type(launch).__name__}, not a KernelLaunch")
    try:
        expect(launch.process.poll() is None, "the kernel exited right after it started")
        shown = _execute(sandbox, launch, "import os; print(6 * 7, os.getcwd())")
        expect(shown.split() == ["42", sandbox.workdir], f"the kernel printed {shown!r}")
    finally:
        launch.process.kill()
    expect(launch.process.poll() is not None, "the kernel still runs after kill()")


def _execute(sandbox: Sandbox, launch: KernelLaunch, code: str) -> str:
    """What ``code`` printed in the kernel of ``launch``."""
    from jupyter_client.blocking.client import BlockingKernelClient

    client = BlockingKernelClient()
    shown: list[str] = []

    def output(msg: dict[str, Any]) -> None:
        if msg["msg_type"] == "stream":
            shown.append(msg["content"]["text"])

    try:
        client.load_connection_info(launch.connection)  # type: ignore[arg-type]  # a TypedDict of the same keys
        client.start_channels()
        client.wait_for_ready(timeout=60)
        reply = client.execute_interactive(code, timeout=60, output_hook=output)
    except (Empty, TimeoutError, RuntimeError) as e:
        raise CheckFailed(
            f"the kernel did not answer: {e or type(e).__name__}; its log: {sandbox.kernel_log_tail()}"
        ) from e
    finally:
        client.stop_channels()
    expect(reply["content"]["status"] == "ok", f"the kernel answered {reply['content']}")
    return "".join(shown)


def _records(cls: type[Sandbox], sandbox: Sandbox, config: SandboxConfig) -> None:
    description = cls.describe(config)
    expect(isinstance(description, SandboxDescription), f"describe() returned {type(description).__name__}")
    usage = sandbox.usage()
    expect(isinstance(usage, Usage), f"usage() returned {type(usage).__name__}, not a Usage")


# Three ways agent code leaves a process behind: a new session, nohup in the background, a double fork.
_DAEMONS = (
    "import os, subprocess\n"
    "subprocess.Popen(['setsid', 'sleep', '{0}'])\n"
    "os.system('nohup sleep {1} > /dev/null 2>&1 &')\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    if os.fork() == 0:\n"
    "        os.execvp('sleep', ['sleep', '{2}'])\n"
    "    os._exit(0)\n"
)


def _stop(sandbox: Sandbox) -> None:
    marks = [f"1000.{secrets.randbelow(10**9):09d}" for _ in range(3)]
    launch = sandbox.launch_kernel([], timeout=60)
    _execute(sandbox, launch, _DAEMONS.format(*marks))
    expect(wait_for(lambda: all(pids_with(mark) for mark in marks)), "daemons started by agent code were not seen")
    runtime = sandbox.runtime_dir
    sandbox.stop()
    wait_for(lambda: not any(pids_with(mark) for mark in marks))
    left = [mark for mark in marks if pids_with(mark)]
    expect(not left, f"{len(left)} of 3 daemons started by agent code outlived stop()")
    expect(not Path(runtime).exists(), f"stop() left the runtime directory {runtime}")


_CONNECT = (
    "import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=3)\n    print('connected')\n"
    "except OSError as e:\n    print('unreachable', e)"
)


def _network_off(cls: type[Sandbox], config: SandboxConfig) -> None:
    """With ``network=False`` agent code reaches not even the host's loopback; a backend that cannot cut the
    network says so from ``check`` with a ``SandboxError``."""
    offline = config.model_copy(update={"network": False})
    try:
        cls.check(offline)
    except SandboxError:
        return  # refused, as the contract allows, rather than run with the network on
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.5)
    sandbox = cls(offline, "conformance-offline")
    try:
        sandbox.start()
        launch = sandbox.launch_kernel([], timeout=60)
        try:
            shown = _execute(sandbox, launch, _CONNECT.format(port=listener.getsockname()[1]))
        finally:
            launch.process.kill()
        expect(shown.startswith("unreachable"), f"with the network off, agent code reached the host: {shown!r}")
        try:
            listener.accept()[0].close()
        except TimeoutError:
            return
        raise CheckFailed("with the network off, a connection reached a socket of the host")
    finally:
        listener.close()
        sandbox.stop()


def pids_with(text: str, *, environment: bool = False, parent: int | None = None) -> list[int]:
    """Host PIDs of live (not zombie) processes other than this one whose command line contains ``text`` (or,
    with ``environment``, whose command line or environment does: what a run left behind names its folders
    there); with ``parent``, only that process's children."""
    found = []
    needle = text.encode()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                with open(f"/proc/{entry.name}/stat") as f:
                    state, ppid = f.read().rsplit(")", 1)[1].split()[:2]
                if state == "Z" or (parent is not None and int(ppid) != parent):
                    continue
                with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                    named = needle in f.read()
                if not named and environment:
                    with open(f"/proc/{entry.name}/environ", "rb") as f:
                        named = needle in f.read()
            except (OSError, ValueError):
                continue
            if named:
                found.append(int(entry.name))
    return found


def wait_for(condition: Callable[[], object], timeout: float = 10.0) -> bool:
    """Poll ``condition()`` until it is true or ``timeout`` seconds pass; its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = bool(condition())
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


__all__ = [
    "CheckFailed",
    "CheckResult",
    "Checklist",
    "ConformanceReport",
    "check_conformance",
    "expect",
    "pids_with",
    "sandbox_checks",
    "wait_for",
]
