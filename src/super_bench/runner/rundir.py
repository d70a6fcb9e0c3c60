"""The run directory: the on-disk record of a run, written as it goes.

::

    RUN_DIR/
      run.json                     manifest: what was run, how
      tasks.jsonl                  the task records, so the run can be re-scored offline
      results.jsonl                one line per finished task, appended as tasks finish
      summary.json                 means and counts
      tasks/<task_id>/trajectory.json, trajectory.ipynb
      tasks/<task_id>/steps.jsonl  only while the task runs: its steps so far
"""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from super_bench.errors import RunDirError
from super_bench.runner.results import Summary, TaskResult
from super_bench.tasks.model import Task
from super_bench.trajectory import atomic_write

log = logging.getLogger(__name__)


def task_dirname(task_id: str) -> str:
    """A file-system-safe directory name for a task id."""
    name = re.sub(r"[/\\\x00]", "_", task_id)
    return "_" + name if name.startswith(".") or not name else name


class RunDir:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    @property
    def results_path(self) -> Path:
        return self.path / "results.jsonl"

    def task_dir(self, task_id: str) -> Path:
        return self.path / "tasks" / task_dirname(task_id)

    def create(self) -> None:
        try:
            (self.path / "tasks").mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise RunDirError(f"cannot create the run directory {self.path}: {e}") from e

    # -- tasks ---------------------------------------------------------------------------------
    def write_tasks(self, tasks: list[Task]) -> None:
        atomic_write(self.path / "tasks.jsonl", "".join(t.model_dump_json() + "\n" for t in tasks))

    def read_tasks(self) -> list[Task]:
        path = self.path / "tasks.jsonl"
        if not path.is_file():
            raise RunDirError(f"{self.path} has no tasks.jsonl; pass the task source with --tasks")
        return [Task.model_validate_json(line) for line in path.read_text().splitlines() if line.strip()]

    # -- results -------------------------------------------------------------------------------
    def append_result(self, result: TaskResult) -> None:
        """Append one result durably: a crash loses at most the tasks still running."""
        line = result.model_dump_json() + "\n"
        with open(self.results_path, "a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())

    def read_results(self) -> list[TaskResult]:
        """Finished results, the last one per task winning; a torn last line is ignored."""
        if not self.results_path.is_file():
            return []
        by_id: dict[str, TaskResult] = {}
        for lineno, line in enumerate(self.results_path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                result = TaskResult.model_validate_json(line)
            except ValidationError:
                # Typically a line cut short by a crash: the task counts as unfinished and reruns.
                log.warning("%s:%d: unreadable result line skipped", self.results_path, lineno)
                continue
            by_id[result.task_id] = result
        return list(by_id.values())

    def write_results(self, results: list[TaskResult]) -> None:
        atomic_write(self.results_path, "".join(r.model_dump_json() + "\n" for r in results))

    # -- summary and manifest ------------------------------------------------------------------
    def write_summary(self, summary: Summary) -> None:
        atomic_write(self.path / "summary.json", summary.model_dump_json(indent=2))

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        atomic_write(self.path / "run.json", json.dumps(manifest, indent=2, default=str))

    def read_manifest(self) -> dict[str, Any]:
        path = self.path / "run.json"
        if not path.is_file():
            return {}
        data: dict[str, Any] = json.loads(path.read_text())
        return data
