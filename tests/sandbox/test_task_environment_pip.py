"""Every run's ``task_environment`` records the pip that tasks run (``pip --version`` inside a task environment):
the paper's 24.0 over the default base and over the one ``sandbox build`` makes (which installs the list with a
newer pip, then ends with 24.0), and another version, with a note, where the base holds another."""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pytest
from tests.support.sandboxes import venv_with_this_pip

from super_bench import EnvConfig, RunConfig, SandboxConfig
from super_bench.runner.manifest import add_task_environment
from super_bench.runner.records import RunManifest
from super_bench.runner.rundir import RunDir
from super_bench.sandbox.pyenv.paper_pip import PAPER_PIP, install_papers_pip, paper_pip_wheel
from super_bench.sandbox.pyenv.super_base import BUILT_MARKER, BaseEnvRecord, task_base
from super_bench.sandbox.pyenv.task_env import create_task_env


def _recorded(tmp_path: Path, sandbox: SandboxConfig) -> dict[str, object]:
    """The task_environment of the manifest a run with ``sandbox`` writes."""
    run_dir = RunDir(tmp_path / "run")
    run_dir.path.mkdir(parents=True)
    add_task_environment(RunManifest(), RunConfig(out=run_dir.path, env=EnvConfig(sandbox=sandbox)), run_dir)
    recorded: dict[str, object] = json.loads((run_dir.path / "run.json").read_text())["task_environment"]
    return recorded


def _task_pip(tmp_path: Path, sandbox: SandboxConfig) -> str:
    """The version ``pip --version`` gives inside a task environment of ``sandbox``."""
    bin_dir = create_task_env(tmp_path / "task-env", task_base(sandbox.task_python))
    out = subprocess.run([bin_dir / "pip", "--version"], capture_output=True, text=True, check=True).stdout
    return out.split()[1]


def test_the_default_base_records_the_pip_tasks_run_the_papers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUPER_BENCH_BASE_ENV", str(tmp_path / "never-built"))
    sandbox = SandboxConfig(backend="local")
    recorded = _recorded(tmp_path, sandbox)
    assert recorded["kind"] == "default"
    assert recorded["pip"] == _task_pip(tmp_path, sandbox) and recorded["paper_pip"] == PAPER_PIP
    if paper_pip_wheel() is None:
        pytest.skip(f"pip {PAPER_PIP} could not be fetched here: tasks get the harness's own pip")
    assert recorded["pip"] == PAPER_PIP
    assert not any("pip" in str(n) for n in recorded["notes"])  # type: ignore[attr-defined]


def test_another_pip_in_the_base_shows_in_the_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    python = Path(venv_with_this_pip(tmp_path / "other"))  # this process's pip, not the paper's
    from importlib.metadata import version

    assert version("pip") != PAPER_PIP
    sandbox = SandboxConfig(backend="local", task_python=python)
    recorded = _recorded(tmp_path, sandbox)
    assert recorded["kind"] == "custom" and recorded["pip"] == version("pip") == _task_pip(tmp_path, sandbox)
    assert f"pip {version('pip')}, not {PAPER_PIP} as in the paper's environment" in recorded["notes"]  # type: ignore[operator]


def test_the_built_base_ends_with_the_papers_pip_and_records_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if paper_pip_wheel() is None:
        pytest.skip(f"pip {PAPER_PIP} could not be fetched here")
    base = tmp_path / "base-env"
    python = venv_with_this_pip(base)  # the newer pip that installs the list (upload-time filter)
    assert install_papers_pip(python) is None
    # As a docker task lists it: no path of this machine's as where pip came from.
    freeze = subprocess.run([python, "-m", "pip", "freeze", "--all"], capture_output=True, text=True).stdout
    assert f"pip=={PAPER_PIP}" in freeze.splitlines() and "file://" not in freeze, freeze
    record = BaseEnvRecord(python=python, version="3.11.7", requirements="r.txt", built_at=datetime.now(timezone.utc))
    (base / BUILT_MARKER).write_text(record.model_dump_json())
    monkeypatch.setenv("SUPER_BENCH_BASE_ENV", str(base))
    sandbox = SandboxConfig(backend="local")
    recorded = _recorded(tmp_path, sandbox)
    assert recorded["kind"] == "built" and recorded["pip"] == PAPER_PIP == _task_pip(tmp_path, sandbox)
