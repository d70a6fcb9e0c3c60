"""The shipped conformance suite as a plug-in's author meets it: the plug-in of docs/sandboxes.md, taken from
the page's code blocks, installed in a fresh virtual environment and registered through the entry-point
group, passes it with one command; a broken backend fails it, with messages that say what was seen, and the
command exits non-zero; a backend that says it isolates yet applies no process limit fails that check. (The
built-in backends run the suite in tests/sandbox/test_sandbox_conformance.py.)"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from tests.support.sandboxes import tiny_wheel

import super_bench
from super_bench.conformance import run_conformance
from super_bench.sandbox import CommandResult, ProcessSandbox, SandboxConfig
from super_bench.sandbox.conformance import check_conformance

DOC = Path(__file__).parents[2] / "docs" / "sandboxes.md"


class LeakySandbox(ProcessSandbox):
    """Broken: a command's exit status is lost."""

    name = "leaky"

    def run(self, command: list[str], timeout: float = 600) -> CommandResult:
        result = super().run(command, timeout)
        return CommandResult(returncode=0, stdout=result.stdout, stderr=result.stderr)


def test_a_broken_backend_fails_with_a_clear_message(tmp_path: Path) -> None:
    report = check_conformance(LeakySandbox, SandboxConfig(backend="leaky", root=tmp_path))
    assert not report.passed
    failures = {failure.name: failure.detail for failure in report.failures()}
    assert failures["commands run in the work directory"] == "exit status 3 came back as 0"
    assert list(tmp_path.iterdir()) == []


class BoastfulSandbox(ProcessSandbox):
    """Broken: it says it isolates agent code, yet applies no process limit."""

    name = "boastful"
    isolates = True


@pytest.mark.slow
def test_a_backend_that_overstates_its_isolation_fails_the_notebook_checks(tmp_path: Path) -> None:
    report = run_conformance(BoastfulSandbox, SandboxConfig(backend="boastful", root=tmp_path))
    failures = {failure.name: failure.detail for failure in report.failures()}
    assert "the process limit contains a fork bomb" in failures, report.checks
    assert "100 forks under a limit of 32 processes showed" in failures["the process limit contains a fork bomb"]
    assert "forked 100" in failures["the process limit contains a fork bomb"]
    assert "the memory limit contains a memory bomb" not in failures
    assert list(tmp_path.iterdir()) == []


def doc_blocks() -> tuple[str, str]:
    """The Python and TOML code blocks of the section "Writing a backend" of docs/sandboxes.md."""
    section = DOC.read_text().split("## Writing a backend", 1)[1].split("\n## ", 1)[0]
    python = re.search(r"```python\n(.*?)```", section, re.S)
    toml = re.search(r"```toml\n(.*?)```", section, re.S)
    assert python and toml, "the section lost its plug-in's code blocks"
    return python.group(1), toml.group(1)


def test_the_docs_plugin_imports_only_the_sandboxs_face() -> None:
    source, _ = doc_blocks()
    imported = {node.module for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom)}
    imported |= {
        alias.name for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Import) for alias in node.names
    }
    assert imported == {"super_bench.sandbox"}


BROKEN = """from super_bench.errors import SandboxError
from super_bench.sandbox import ProcessSandbox


class BrokenSandbox(ProcessSandbox):
    name = "broken"

    @classmethod
    def check(cls, config):
        raise SandboxError("the frobnicator is not installed")
"""


@pytest.fixture(scope="module")
def plugin_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment that sees the harness as an editable install does (a .pth file naming its
    source folder, and the packages it depends on) and has the docs' plug-in installed by pip, registered by
    the docs' entry-point table."""
    tomllib = pytest.importorskip("tomllib")
    source, table = doc_blocks()
    entry_points = tomllib.loads(table)["project"]["entry-points"]
    (group,) = entry_points
    assert group == "super_bench.sandboxes"
    (name, target), *_ = entry_points[group].items()
    module, _, _ = target.partition(":")
    package, _, file = module.partition(".")
    assert name == "plain"
    root = tmp_path_factory.mktemp("plugin")
    venv = root / "venv"
    subprocess.run([sys._base_executable, "-m", "venv", "--system-site-packages", "--without-pip", venv], check=True)
    (site,) = venv.glob("lib/python*/site-packages")
    # The harness's own dependencies come from the environment running the tests, not from the base
    # interpreter's packages, which need not have them (a .pth "import" line runs site.addsitedir there).
    deps = sysconfig.get_paths()["purelib"]
    (site / "super_bench_source.pth").write_text(
        f"{Path(super_bench.__file__).parents[1]}\nimport site; site.addsitedir({deps!r})\n"
    )
    wheel = tiny_wheel(
        root,
        package,
        modules={f"{file}.py": source, "broken.py": BROKEN},
        entry_points=f"[{group}]\n{name} = {target}\nbroken = {package}.broken:BrokenSandbox\n",
    )
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install"]
    subprocess.run([*pip, "--quiet", "--no-deps", "--no-index", str(wheel)], check=True)
    return venv


def check_command(venv: Path, backend: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``super-bench sandbox check --conformance BACKEND`` in the plug-in's environment."""
    env = {**os.environ, "COLUMNS": "200", "TMPDIR": str(tmp_path)}
    command = [str(venv / "bin" / "python"), "-m", "super_bench", "sandbox", "check", "--conformance", backend]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)


@pytest.mark.slow
def test_the_plugin_written_from_the_docs_passes_with_one_command(plugin_venv: Path, tmp_path: Path) -> None:
    done = check_command(plugin_venv, "plain", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith(("pass ", "FAIL "))]
    assert len(lines) >= 25 and all(line.startswith("pass ") for line in lines), done.stdout
    assert f"The plain sandbox passes all {len(lines)} conformance checks." in done.stdout
    assert "pass the memory limit contains a memory bomb" in done.stdout
    assert "pass an edit of a FIFO gives up instead of hanging" in done.stdout


def test_a_failing_plugin_makes_the_command_fail(plugin_venv: Path, tmp_path: Path) -> None:
    done = check_command(plugin_venv, "broken", tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAIL it can run here (check): SandboxError: the frobnicator is not installed" in done.stdout
    assert "passes" not in done.stdout
