"""The shipped conformance check: the built-in backends pass it (docker where an engine and an image exist), a plug-in written as docs/sandboxes.md
says passes it, and a broken backend fails it with a message that says what went wrong."""

from __future__ import annotations

import subprocess
import sys

import pytest
from tests.sandboxes import backend_settings

from super_bench.sandbox import SANDBOXES, CommandResult, SandboxConfig
from super_bench.sandbox.backends.host import HostSandbox
from super_bench.sandbox.conformance import check_conformance


class PlainSandbox(HostSandbox):
    """The minimal plug-in of docs/sandboxes.md: host processes run plainly, in a task directory of their own."""

    name = "plain"


class LeakySandbox(PlainSandbox):
    """Broken: a command's exit status is lost."""

    name = "leaky"

    def run(self, command: list[str], timeout: float = 600) -> CommandResult:
        result = super().run(command, timeout)
        return CommandResult(returncode=0, stdout=result.stdout, stderr=result.stderr)


@pytest.mark.parametrize("name", ["local", "bwrap", "docker"])
def test_builtin_backends_pass(name: str) -> None:
    settings = backend_settings(name)
    report = check_conformance(SANDBOXES.get(name), SandboxConfig(**settings))
    assert report.passed, report.failures()


def test_a_plugin_written_from_the_docs_passes() -> None:
    report = check_conformance(PlainSandbox, SandboxConfig(backend="plain"))
    assert report.passed, report.failures()
    assert len(report.checks) == 9


def test_a_broken_backend_fails_with_a_clear_message() -> None:
    report = check_conformance(LeakySandbox, SandboxConfig(backend="leaky"))
    assert not report.passed
    failures = {failure.name: failure.detail for failure in report.failures()}
    assert failures["commands run in the work directory"] == "exit status 3 came back as 0"


def test_the_command_line_runs_it() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "super_bench", "sandbox", "check", "--conformance", "local"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "passes every conformance check" in done.stdout
