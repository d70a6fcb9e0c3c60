"""A full disk under the run directory stops the run as a Ctrl-C would: one line, exit status 74, every finished
task's row whole, and a resume that ends as a clean run ends; a run without room is refused before it starts
(docs/runner.md#a-full-disk). On a real small file system (tmpfs), so root is needed to mount it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.disks import fill

import super_bench as sb
from super_bench.errors import RunDirWriteError
from super_bench.runner.results import TaskResult
from super_bench.tasks.model import Task

pytestmark = pytest.mark.slow

RUN = [sys.executable, "-m", "super_bench", "run", "--sandbox", "local", "--workers", "2"]
UNWRITABLE = 74


def _mount(path: Path, size: str) -> None:
    path.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Any]:
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root")
    mounted: list[Path] = []

    def mount(size: str) -> Path:
        path = tmp_path / f"disk-{len(mounted)}"
        _mount(path, size)
        mounted.append(path)
        return path

    yield mount
    for path in mounted:
        subprocess.run(["umount", "-l", str(path)], check=False)


def scored(out: Path) -> dict[str, tuple[Any, ...]]:
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len({r["task_id"] for r in rows}) == len(rows)
    return {r["task_id"]: (r["status"], r["stop_reason"], r["metrics"], r["submission"], r["n_steps"]) for r in rows}


def test_a_disk_that_fills_during_a_run_stops_it_cleanly_and_the_resume_ends_as_a_clean_run(
    tmp_path: Path, small_disk: Any
) -> None:
    clean = tmp_path / "clean"
    assert subprocess.run([*RUN, "--out", str(clean)], capture_output=True).returncode == 0
    disk = small_disk("4m")
    out = disk / "run"
    with subprocess.Popen([*RUN, "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as p:
        results = out / "results.jsonl"
        while p.poll() is None and (not results.exists() or len(results.read_bytes().splitlines()) < 2):
            time.sleep(0.05)
        fill(disk)
        _, stderr = p.communicate(timeout=600)
    assert p.returncode == UNWRITABLE, stderr
    assert "Traceback" not in stderr
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert errors == [f"error: cannot write the run directory {out}: no space left on device; the run stopped"]
    kept = [line for line in stderr.splitlines() if " of 9 task(s) finished, kept in " in line]
    assert len(kept) == 1 and "\nresume with: " in stderr
    assert stderr.rstrip().endswith(f"{' '.join(RUN[3:])} --out {out}")
    # Every row written is whole, and its trajectory is in place.
    lines = results.read_bytes().splitlines(keepends=True)
    assert len(lines) >= 2 and all(line.endswith(b"\n") for line in lines)
    assert kept[0].startswith(f"{len(lines)} of 9")
    for row in map(json.loads, lines):
        assert (out / row["trajectory"]).is_file()

    (disk / "filler").unlink()
    resumed = subprocess.run([*RUN, "--out", str(out)], capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{len(lines)} of 9" in resumed.stderr or len(scored(out)) == 9
    assert scored(out) == scored(clean)
    assert not (out / ".reserve").exists()


class _FillAtTheEnd:
    """A reporter that fills the run directory's disk once the last row is written, before the run's end writes its
    summary."""

    def __init__(self, disk: Path, rows: int) -> None:
        self.disk, self.rows = disk, rows

    def begin(self, total: int, finished: list[TaskResult]) -> None: ...
    def task_started(self, task: Task) -> None: ...
    def task_retried(self, result: TaskResult) -> None: ...

    def task_finished(self, result: TaskResult) -> None:
        self.rows -= 1
        if self.rows == 0:
            fill(self.disk)


def test_a_disk_that_fills_before_the_summary_is_written_stops_the_run_as_any_full_disk(small_disk: Any) -> None:
    """The writes at a run's end (summary.json) are guarded as the rows are: the same stop (RunDirWriteError, which
    the command reports with status 74), every row kept, and a resume that writes the summary."""
    disk = small_disk("4m")
    out = disk / "run"
    settings: dict[str, Any] = {"task_ids": ["tinyreg", "tinyreg-lr"], "env": {"sandbox": {"backend": "local"}}}
    with pytest.raises(RunDirWriteError, match="no space left on device; the run stopped"):
        sb.run(out=out, reporter=_FillAtTheEnd(disk, 2), **settings)
    assert len((out / "results.jsonl").read_bytes().splitlines()) == 2 and not (out / "summary.json").exists()
    (disk / "filler").unlink()
    outcome = sb.run(out=out, progress=False, **settings)
    assert [r.task_id for r in outcome.results] == ["tinyreg", "tinyreg-lr"] and (out / "summary.json").is_file()


def test_a_run_without_the_room_it_needs_is_refused_before_it_starts(small_disk: Any) -> None:
    disk = small_disk("1m")
    out = disk / "run"
    refused = subprocess.run([*RUN, "--out", str(out)], capture_output=True, text=True)
    assert refused.returncode == UNWRITABLE
    assert "Traceback" not in refused.stderr
    (error,) = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
    assert f"the run directory {out} has " in error and "the run needs about 3.2 MiB there (9 task(s)" in error
    assert not (out / "results.jsonl").exists() and not (out / "run.json").exists()
