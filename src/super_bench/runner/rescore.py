"""Re-scoring a saved run offline, from its trajectories alone."""

from __future__ import annotations

import logging
from pathlib import Path

from pydantic import ValidationError

from super_bench.errors import RunDirError
from super_bench.runner.results import RunOutcome, TaskResult, summarize
from super_bench.runner.rundir import RunDir
from super_bench.scoring import ScoreMode, score_trajectory, submission_of
from super_bench.tasks.model import Task
from super_bench.trajectory import Trajectory

log = logging.getLogger(__name__)


def rescore(path: Path, mode: ScoreMode = "corrected", tasks: list[Task] | None = None) -> RunOutcome:
    """Score every trajectory of the run at ``path`` again; rewrites results.jsonl and summary.json.

    ``tasks`` defaults to the run's own ``tasks.jsonl``. Trajectories with no result line (an
    imported run, or a run that crashed before writing one) get a result too.
    """
    run_dir = RunDir(path)
    if not run_dir.path.is_dir():
        raise RunDirError(f"no run directory at {path}")
    by_id = {t.task_id: t for t in (tasks if tasks is not None else run_dir.read_tasks())}
    results = {r.key: r for r in run_dir.read_results()}
    for traj_path in sorted((run_dir.path / "tasks").glob("*/trajectory.json")):
        try:
            trajectory = Trajectory.load(traj_path)
        except (OSError, ValidationError, ValueError) as e:
            log.warning("%s: unreadable trajectory, left unscored: %s", traj_path, e)
            continue
        task = by_id.get(trajectory.task_id)
        if task is None:
            log.warning("%s: task %r is not among the tasks; left unscored", traj_path, trajectory.task_id)
            continue
        metrics, details = score_trajectory(trajectory, task, mode)
        epoch = int(trajectory.metadata.get("epoch", 1))
        relative = str(traj_path.relative_to(run_dir.path))
        found = results.get((task.task_id, epoch))
        if found is None:
            result = TaskResult.from_trajectory(trajectory, task.task_set, epoch=epoch, trajectory=relative)
        else:
            result = found.model_copy(update={"submission": submission_of(trajectory), "trajectory": relative})
        result.metrics, result.details = metrics, details.model_dump()
        results[result.key] = result
    ordered = list(results.values())
    run_dir.write_results(ordered)
    summary = summarize(ordered, mode)
    run_dir.write_summary(summary)
    return RunOutcome(run_dir, ordered, summary)
