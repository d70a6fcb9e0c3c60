"""``super-bench analyze``: the primary cause of every failed task of a saved run, read again from its
trajectories (``TaskResult.diagnosed``), for any run directory, imported ones included. The metrics stay as
they were scored; only the rows' ``failure`` and the summary's counts of causes are written, all or nothing."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from super_bench.analysis import judge_failure
from super_bench.errors import RunDirError
from super_bench.runner.rescore import read_trajectory, trajectory_files
from super_bench.runner.results import TaskResult, summarize
from super_bench.runner.rundir import RunDir, RunOutcome, tolerated

if TYPE_CHECKING:
    from super_bench.models import ChatModel

log = logging.getLogger(__name__)


def analyze_run(path: Path, judge: ChatModel | None = None) -> RunOutcome:
    """Compute the failure cause of each row of the run at ``path`` from its trajectory, and rewrite its
    results.jsonl and summary.json. Trajectories are read inside the run directory only (``trajectory_files``:
    no link is followed). A row whose trajectory cannot be read keeps no cause, with a warning. With a
    ``judge``, each cause the rules found goes to that model for a second opinion (``judge_failure``): the
    row records whose verdict it keeps (``by``)."""
    run_dir = RunDir(path)
    if not run_dir.path.is_dir():
        raise RunDirError(f"no run directory at {path}")
    run_dir.check_links()
    with run_dir.lock():
        rows = run_dir.read_results()
        if not rows:
            raise RunDirError(f"{path} has no results (no readable results.jsonl lines); is it a run directory?")
        results = {r.key: r for r in rows}
        by_path = {r.trajectory: r.key for r in rows if r.trajectory}
        analyzed: set[tuple[str, int]] = set()
        for relative, full in trajectory_files(run_dir.path):
            try:
                trajectory = read_trajectory(full)
            except (FileNotFoundError, NotADirectoryError):
                continue  # a task folder without a trajectory
            except (OSError, ValidationError, ValueError) as e:
                log.warning("%s: unreadable trajectory, not analyzed: %s", relative, str(e).splitlines()[0][:200])
                continue
            epoch = int(trajectory.metadata.get("epoch", 1))
            key = (trajectory.task_id, epoch) if (trajectory.task_id, epoch) in results else by_path.get(relative)
            if key is None:
                log.warning("%s: no result row for task %r; not analyzed", relative, trajectory.task_id)
                continue
            row = results[key].diagnosed(trajectory)
            if judge is not None and row.failure is not None:
                row = row.model_copy(update={"failure": judge_failure(trajectory, row.failure, judge)})
            results[key] = row
            analyzed.add(key)
        for key, row in results.items():
            if key not in analyzed:
                if row.in_means:
                    log.warning("%s: no readable trajectory in the run directory; no cause", row.task_id)
                results[key] = row.model_copy(update={"failure": None})
        ordered = list(results.values())
        summary = summarize(ordered, run_dir.summary_mode())
        summary.task_environment = _environment(run_dir)
        run_dir.write_scores(ordered, summary, None)
    return RunOutcome(run_dir, ordered, summary)


def failed(results: list[TaskResult]) -> list[TaskResult]:
    """The rows with a failure cause, by task and epoch."""
    return sorted((r for r in results if r.failure is not None), key=lambda r: r.key)


def _environment(run_dir: RunDir) -> str | None:
    manifest = tolerated(run_dir.read_manifest, "the task environment is not shown")
    return manifest.task_environment_line if manifest is not None else None
