"""What a run says around it: at its end, where it is and the command that shows it; before it, the warning
that SUPER's environment was never built, only where the tasks need it (not for the bundled demo), and once
for a command that makes several runs."""

from __future__ import annotations

import importlib
import logging
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.helpers import make_task

from super_bench import EnvConfig, RunConfig, SandboxConfig, run
from super_bench.sandbox import describe_backend

ENVIRONMENT_WARNING = "the task environment is"


def test_a_demo_run_ends_with_the_command_that_shows_it_and_no_environment_warning(tmp_path: Path) -> None:
    env = {**os.environ, "COLUMNS": "80"}
    args = ["run", "--sandbox", "local", "--task-ids", "tinyreg"]
    done = subprocess.run(
        [sys.executable, "-m", "super_bench", *args], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr
    assert ENVIRONMENT_WARNING not in done.stderr and "WARNING" not in done.stderr, done.stderr
    *_, where, look = done.stdout.strip().splitlines()
    found = re.fullmatch(r"Run directory: (runs/\S+)", where)
    assert found, done.stdout
    assert look == f"See every step: super-bench view {found.group(1)}"
    # ... and the command works as printed, from where the run was started.
    viewed = subprocess.run(
        [sys.executable, "-m", "super_bench", *shlex.split(look.split(": ", 1)[1])[1:]],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert viewed.returncode == 0 and (tmp_path / found.group(1) / "view.html").is_file(), viewed.stderr


def test_the_environment_warning_is_said_once_for_tasks_that_need_supers_environment(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(importlib.import_module("super_bench.runner.run"), "_SAID", set())  # as in a new process
    task = make_task("own", github_repo="https://github.com/example/research", solution="print(1)", answer=1)
    sandbox = SandboxConfig(backend="local", root=tmp_path / "sandboxes")
    expected = describe_backend(sandbox).warning  # None where SUPER's environment was built on this machine
    caplog.set_level(logging.WARNING, logger="super_bench.runner.run")
    for out in ("first", "second"):
        config = RunConfig(out=tmp_path / out, env=EnvConfig(cell_timeout=60, sandbox=sandbox))
        run(config, tasks=[task], progress=False)
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith(ENVIRONMENT_WARNING)]
    assert said == ([] if expected is None else [expected])
