"""A new user's shell, and the README's long commands run once per test session and shared read-only.

Several modules check the same end-to-end run from different sides (the README's promises, the demo
suite's scores): each such command runs once, in a folder of its own under the session's temporary
root, which all xdist workers of the session share. A file lock makes the first worker that asks run
it; the others wait and read what it left (its exit status, output and run directory). A test that
changes a run copies it first (:func:`copy_run`)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from filelock import FileLock

RUN_DIR = re.compile(r"Run directory: (runs/\S+)")


@dataclass
class Home:
    """The new user's working directory, and what their commands printed."""

    path: Path
    results: dict[str, subprocess.CompletedProcess[str]] = field(default_factory=dict)
    runs: dict[str, str] = field(default_factory=dict)  # README placeholder -> run directory
    prefix: list[str] = field(default_factory=list)  # e.g. a command that cuts the network off

    def sh(self, command: str, stdin: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
        scripts = Path(sys.executable).parent
        # The installed console script, as the README's reader has it; python -m where there is none.
        prelude = (
            ""
            if (scripts / "super-bench").exists()
            else f'super-bench() {{ "{sys.executable}" -m super_bench "$@"; }}; '
        )
        environ = {**os.environ, "COLUMNS": "80", "PATH": f"{scripts}:{os.environ['PATH']}", **env}
        environ.pop("RAY_ADDRESS", None)
        return subprocess.run(
            [*self.prefix, "bash", "-c", prelude + command],
            cwd=self.path,
            input=stdin,
            capture_output=True,
            text=True,
            env=environ,
            timeout=900,
        )


@dataclass(frozen=True)
class SharedRun:
    """What one shared command printed, and the folder it ran in (read only)."""

    home: Path
    result: subprocess.CompletedProcess[str]

    @property
    def run_dir(self) -> Path:
        found = RUN_DIR.search(self.result.stdout)
        assert found, self.result.stdout + self.result.stderr
        return self.home / found.group(1)


class SharedRuns:
    """The commands of this test session run once, whichever worker asks first."""

    def __init__(self, root: Path, prefix: list[str]) -> None:
        self.root = root
        self.prefix = prefix

    def get(self, command: str) -> SharedRun:
        folder = self.root / hashlib.sha256(command.encode()).hexdigest()[:16]
        folder.mkdir(parents=True, exist_ok=True)
        record = folder / "result.json"
        with FileLock(str(folder / "lock")):
            if not record.exists():
                (folder / "home").mkdir(exist_ok=True)
                done = Home(folder / "home", prefix=self.prefix).sh(command)
                fields = {"command": command, "returncode": done.returncode}
                record.write_text(json.dumps({**fields, "stdout": done.stdout, "stderr": done.stderr}))
        saved = json.loads(record.read_text())
        result = subprocess.CompletedProcess(command, saved["returncode"], saved["stdout"], saved["stderr"])
        return SharedRun(folder / "home", result)


def copy_run(shared: SharedRun, home: Path) -> str:
    """The shared run, copied into ``home`` under the same relative name; the name returned."""
    relative = shared.run_dir.relative_to(shared.home)
    shutil.copytree(shared.run_dir, home / relative, symlinks=True)
    return str(relative)


def session_root(factory: pytest.TempPathFactory) -> Path:
    """A folder every xdist worker of this session sees: the parent of the workers' own roots."""
    base = factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared-runs"
