"""The checks every sandbox backend must pass, shipped so that a plug-in's author can run them.

``check_conformance(cls, config)`` starts one sandbox of the backend and checks, in a few seconds: that it
says it can run here, that commands run in the work directory with their exit status and output and are
stopped at their timeout, that credentials of the host do not reach agent code, that files go in and out
(a missing one is ``FileNotFoundError``), that a kernel starts, runs code and is killed, that it describes
itself and tells its usage as records, and that ``stop`` leaves no process and no runtime directory behind.
Each check's result is reported; a check that fails says what it saw. ``super-bench sandbox check
--conformance BACKEND`` runs them on a registered backend.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from queue import Empty
from typing import Any

from super_bench._pydantic import Model
from super_bench.sandbox.base import KernelLaunch, Sandbox, SandboxConfig, SandboxDescription, Usage

_SECRET = "SUPER_BENCH_CONFORMANCE_TOKEN"


class CheckResult(Model):
    """One conformance check: its name, whether it passed, and what was seen where it did not."""

    name: str
    passed: bool
    detail: str = ""


class ConformanceReport(Model):
    backend: str
    checks: list[CheckResult]

    @property
    def passed(self) -> bool:
        return all(check.passed for check in self.checks)

    def failures(self) -> list[CheckResult]:
        return [check for check in self.checks if not check.passed]


class _Failed(Exception):
    pass


def _expect(condition: object, detail: str) -> None:
    if not condition:
        raise _Failed(detail)


def check_conformance(cls: type[Sandbox], config: SandboxConfig | None = None) -> ConformanceReport:
    """Run every check on a sandbox of ``cls`` made from ``config`` (default: the defaults, with this backend)."""
    name = getattr(cls, "name", cls.__name__)
    config = config or SandboxConfig(backend=name)
    results: list[CheckResult] = []

    def check(title: str, body: Callable[[], None]) -> bool:
        try:
            body()
        except _Failed as e:
            results.append(CheckResult(name=title, passed=False, detail=str(e)))
            return False
        except Exception as e:  # a plug-in's own failure is a failed check, said as it was raised
            results.append(CheckResult(name=title, passed=False, detail=f"{type(e).__name__}: {e}"))
            return False
        results.append(CheckResult(name=title, passed=True))
        return True

    if not check("it can run here (check)", lambda: cls.check(config)):
        return ConformanceReport(backend=name, checks=results)
    sandbox = cls(config, "conformance")
    os.environ[_SECRET] = secrets.token_hex(8)
    try:
        if not check("it starts", sandbox.start):
            return ConformanceReport(backend=name, checks=results)
        check("commands run in the work directory", lambda: _commands(sandbox))
        check("a command is stopped at its timeout", lambda: _timeout(sandbox))
        check("credentials of the host do not reach agent code", lambda: _no_secrets(sandbox))
        check("files go in and out", lambda: _files(sandbox))
        check("a kernel starts, runs code and is killed", lambda: _kernel(sandbox))
        check("it describes itself and its usage as records", lambda: _records(cls, sandbox, config))
        check("stop leaves no process and no runtime directory", lambda: _stop(sandbox))
    finally:
        os.environ.pop(_SECRET, None)
        sandbox.stop()
    return ConformanceReport(backend=name, checks=results)


def _commands(sandbox: Sandbox) -> None:
    result = sandbox.run(["sh", "-c", "pwd; echo out; echo err >&2; exit 3"], timeout=60)
    _expect(result.returncode == 3, f"exit status 3 came back as {result.returncode}")
    lines = result.stdout.split()
    _expect(lines[:1] == [sandbox.workdir], f"ran in {lines[:1]}, not the work directory {sandbox.workdir}")
    _expect(lines[1:] == ["out"] and result.stderr.strip() == "err", f"output came back as {result!r}")


def _timeout(sandbox: Sandbox) -> None:
    started = time.monotonic()
    result = sandbox.run(["sleep", "30"], timeout=1)
    _expect(result.timed_out, f"`sleep 30` with a timeout of 1 s was not reported as timed out: {result!r}")
    _expect(time.monotonic() - started < 15, "`sleep 30` with a timeout of 1 s ran on past 15 s")


def _no_secrets(sandbox: Sandbox) -> None:
    result = sandbox.run(["env"], timeout=60)
    _expect(result.returncode == 0, f"`env` failed: {result!r}")
    _expect(_SECRET not in result.stdout, f"{_SECRET}, a credential's name, reached agent code")


def _files(sandbox: Sandbox) -> None:
    data = bytes(range(256))
    sandbox.write_file("conformance/in.bin", data)
    _expect(sandbox.read_file("conformance/in.bin") == data, "a file read back differs from what was written")
    absolute = f"{sandbox.workdir}/conformance/in.bin"
    _expect(sandbox.read_file(absolute) == data, f"{absolute} is not the file written as conformance/in.bin")
    seen = sandbox.run(["test", "-f", "conformance/in.bin"], timeout=60)
    _expect(seen.returncode == 0, f"agent code does not see a file the harness wrote: {seen!r}")
    try:
        sandbox.read_file("conformance/missing.txt")
    except FileNotFoundError:
        return
    raise _Failed("reading a missing file did not raise FileNotFoundError")


def _kernel(sandbox: Sandbox) -> None:
    launch = sandbox.launch_kernel([], timeout=60)
    _expect(isinstance(launch, KernelLaunch), f"launch_kernel returned {type(launch).__name__}, not a KernelLaunch")
    try:
        _expect(launch.process.poll() is None, "the kernel exited right after it started")
        shown = _execute(sandbox, launch, "import os; print(6 * 7, os.getcwd())")
        _expect(shown.split() == ["42", sandbox.workdir], f"the kernel printed {shown!r}")
    finally:
        launch.process.kill()
    _expect(launch.process.poll() is not None, "the kernel still runs after kill()")


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
        raise _Failed(
            f"the kernel did not answer: {e or type(e).__name__}; its log: {sandbox.kernel_log_tail()}"
        ) from e
    finally:
        client.stop_channels()
    _expect(reply["content"]["status"] == "ok", f"the kernel answered {reply['content']}")
    return "".join(shown)


def _records(cls: type[Sandbox], sandbox: Sandbox, config: SandboxConfig) -> None:
    description = cls.describe(config)
    _expect(isinstance(description, SandboxDescription), f"describe() returned {type(description).__name__}")
    usage = sandbox.usage()
    _expect(isinstance(usage, Usage), f"usage() returned {type(usage).__name__}, not a Usage")


def _stop(sandbox: Sandbox) -> None:
    mark = f"1000.{secrets.randbelow(10**9):09d}"
    launch = sandbox.launch_kernel([], timeout=60)
    _execute(sandbox, launch, f"import subprocess\nsubprocess.Popen(['setsid', 'sleep', '{mark}'])")
    _expect(wait_for(lambda: pids_with(mark)), "a daemon started by agent code could not be found")
    runtime = sandbox.runtime_dir
    sandbox.stop()
    _expect(wait_for(lambda: not pids_with(mark)), "a daemon started by agent code outlived stop()")
    _expect(not Path(runtime).exists(), f"stop() left the runtime directory {runtime}")


def pids_with(text: str) -> list[int]:
    """Host PIDs of live (not zombie) processes whose command line contains ``text``."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                    cmdline = f.read()
                with open(f"/proc/{entry.name}/stat") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if text.encode() in cmdline and state != "Z":
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


__all__ = ["CheckResult", "ConformanceReport", "check_conformance", "pids_with", "wait_for"]
