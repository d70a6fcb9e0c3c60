"""Importing a folder of published trajectories (``<task_id>/history.ipynb`` + ``metrics.json``) as a run
directory, keeping the metrics the authors' harness recorded, or re-scoring against gold tasks.

Every metric ``metrics.json`` records is kept (``checkpoints`` are landmarks), the entrypoint of Expert
tasks included; the rows are marked ``mode: recorded``. The notebooks record times of day and step
durations only: a row's ``started_at`` and ``finished_at`` are null rather than an invented date, and
its ``wall_time`` is the sum of the recorded step durations, as is its ``execution_time``."""

from __future__ import annotations

import json
import logging
import re
import sys
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from super_bench._files import read_regular
from super_bench._names import TASK_SETS
from super_bench.errors import RunDirError, SuperBenchError, TrajectoryImportError
from super_bench.notebook import save_notebook
from super_bench.runner.paper_notebooks import notebook_trajectory
from super_bench.runner.records import RUN_SCHEMA_VERSION, RunManifest
from super_bench.runner.rescore import rescore, with_provenance
from super_bench.runner.results import RECORDED_MODE, TaskResult, summarize
from super_bench.runner.rundir import RunDir, RunOutcome
from super_bench.scoring import Metrics, ScoreMode, note_provenance
from super_bench.tasks.model import MASKED_CATEGORIES, Task
from super_bench.trajectory import Trajectory

log = logging.getLogger(__name__)

NOTEBOOK = "history.ipynb"
METRICS_FILE = "metrics.json"
# The published folders are named <model>_<agent>_<set>, e.g. gpt-4o-2024-08-06_react-super_expert.
_RUN_NAME = re.compile(r"^(?:(?P<model>.+)_)?(?P<agent>[A-Za-z0-9-]+)_(?P<set>expert|masked|auto)$")


@dataclass
class ImportOutcome:
    run: RunOutcome
    imported: int
    failed: list[str] = field(default_factory=list)  # "path: reason" per notebook or folder not imported
    unmatched: list[str] = field(default_factory=list)  # imported task ids with no gold task (left as recorded)


def find_notebooks(source: Path) -> list[Path]:
    """The task notebooks of one published run folder."""
    if not source.is_dir():
        raise TrajectoryImportError(f"{source} is not a directory of trajectories")
    notebooks = sorted(source.glob(f"*/{NOTEBOOK}"))
    if not notebooks and (source / NOTEBOOK).is_file():
        notebooks = [source / NOTEBOOK]
    if not notebooks:
        runs = sorted({p.parent.parent.name for p in source.glob(f"*/*/{NOTEBOOK}")})
        hint = f"; it holds several runs, import each one: {', '.join(runs)}" if runs else ""
        raise TrajectoryImportError(f"no <task_id>/{NOTEBOOK} under {source}{hint}")
    return notebooks


def skipped_folders(source: Path, notebooks: list[Path]) -> list[str]:
    """``"path: reason"`` for each folder of ``source`` that holds no notebook (hidden ones aside)."""
    if notebooks == [source / NOTEBOOK]:
        return []
    imported = {nb.parent for nb in notebooks}
    skipped = []
    for folder in sorted(p for p in source.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if folder in imported:
            continue
        has = "has a metrics.json but" if (folder / METRICS_FILE).is_file() else "has"
        skipped.append(f"{folder}: skipped, it {has} no {NOTEBOOK}")
    return skipped


def task_ids(source: Path, notebooks: list[Path]) -> list[str]:
    """Task ids are the notebooks' folder names (the source's own name for a lone notebook)."""
    return [nb.parent.name if nb.parent != source else source.name for nb in notebooks]


def source_set(source: Path) -> str:
    """The task set of a published run folder: from its name, else from its task ids."""
    return infer_set(source, task_ids(source, find_notebooks(source)))


def infer_set(source: Path, ids: list[str]) -> str:
    """The task set from the folder name, else from the ids (Masked ids end in a category)."""
    match = _RUN_NAME.match(source.name)
    if match:
        return match.group("set")
    if ids and all(set(t.rsplit("_", 1)[-1].split(",")) <= set(MASKED_CATEGORIES) for t in ids):
        return "masked"
    return "expert"


def recorded_metrics(path: Path) -> tuple[Metrics, dict[str, Any]]:
    """Our metrics from the harness's ``metrics.json`` (``checkpoints`` are landmarks), and the raw record."""
    if not path.is_file():
        return Metrics(), {}
    try:
        raw = json.loads(read_regular(path, 1 << 20).decode("utf-8"))  # a FIFO or a huge file: refused, said
        values = {k: None if v is None else float(v) for k, v in raw.items()}
    except (OSError, ValueError, TypeError, AttributeError) as e:  # UnicodeDecodeError is a ValueError
        raise TrajectoryImportError(f"{path}: unreadable metrics ({e})") from e
    metrics = Metrics(
        submitted=values.get("submitted") or 0.0,
        output_match=values.get("output_match"),
        landmarks=values.get("checkpoints", values.get("landmarks")),
        entrypoint=values.get("entrypoint"),
    )
    return metrics, raw


def import_trajectories(
    source: Path,
    out: Path,
    *,
    tasks: list[Task] | None = None,
    task_set: str | None = None,
    model: str | None = None,
    mode: ScoreMode = "corrected",
) -> ImportOutcome:
    """Import every ``<task_id>/history.ipynb`` under ``source`` into the run directory ``out``.

    Without ``tasks`` each result carries the metrics recorded beside the notebook. With ``tasks``
    the run is re-scored against them; tasks missing from them keep their recorded metrics.
    """
    notebooks = find_notebooks(source)
    ids = task_ids(source, notebooks)
    if task_set is not None and task_set not in TASK_SETS:
        raise TrajectoryImportError(f"unknown task set {task_set!r}; choose one of {', '.join(TASK_SETS)}")
    task_set = task_set or infer_set(source, ids)
    match = _RUN_NAME.match(source.name)
    model = model or (match.group("model") if match else None)
    run_dir = RunDir(out)
    if run_dir.results_path.exists():
        raise RunDirError(f"{out} already holds a run; choose a new --out directory")
    made = not run_dir.path.exists()
    run_dir.create()
    results: list[TaskResult] = []
    failed = skipped_folders(source, notebooks)
    for problem in failed:
        log.warning("%s", problem)
    agents: set[str] = set()
    for task_id, notebook in zip(ids, notebooks):
        try:
            trajectory = notebook_trajectory(notebook, task_id, model=model)
            metrics, raw = recorded_metrics(notebook.parent / METRICS_FILE)
        except SuperBenchError as e:
            log.warning("%s", e)
            failed.append(str(e))
            continue
        trajectory.metadata["recorded_metrics"] = raw
        agents.add(trajectory.agent or "")
        provenance = note_provenance(trajectory)
        task_dir = run_dir.task_dir(task_id)
        path = trajectory.save(task_dir)
        save_notebook(trajectory, task_dir)
        row = _result(trajectory, task_set, metrics, str(path.relative_to(run_dir.path)))
        results.append(with_provenance(row, provenance).diagnosed(trajectory))
    if not results:
        # Nothing to show: no run directory is left behind to look like an (empty) run.
        run_dir.clear()
        if made:
            run_dir.path.rmdir()
        raise TrajectoryImportError(
            f"nothing imported from {source}: none of its {len(notebooks)} notebook(s) could be read "
            f"(first: {failed[0] if failed else 'no reason given'}); {out} was not written"
        )
    run_dir.write_manifest(_manifest(source, task_set, model, agents, len(results)))
    unmatched: list[str] = []
    if tasks is not None:
        imported = {r.task_id for r in results}
        gold = [t for t in tasks if t.task_id in imported]
        unmatched = sorted(imported - {t.task_id for t in gold})  # re-scoring leaves these as recorded
        sets = {t.task_id: t.task_set for t in gold}  # a gold task knows its set better than a folder name
        for result in results:
            result.task_set = sets.get(result.task_id, result.task_set)
        run_dir.write_results(results)
        run_dir.write_tasks(gold)
        return ImportOutcome(rescore(run_dir.path, mode, gold), len(results), failed, unmatched)
    run_dir.write_results(results)
    summary = summarize(results, RECORDED_MODE)
    run_dir.write_summary(summary)
    return ImportOutcome(RunOutcome(run_dir, results, summary), len(results), failed, unmatched)


def _result(trajectory: Trajectory, task_set: str, metrics: Metrics, path: str) -> TaskResult:
    # Times of day carry no date: no start or end, and the recorded durations as the time taken.
    return TaskResult.from_trajectory(
        trajectory,
        task_set,
        metrics=metrics,
        mode=RECORDED_MODE,
        trajectory=path,
        started_at=None,
        finished_at=None,
        wall_time=trajectory.execution_time,
    )


def _manifest(source: Path, task_set: str, model: str | None, agents: set[str], n_tasks: int) -> RunManifest:
    from super_bench._version import __version__

    agent = ", ".join(sorted(a for a in agents if a)) or None
    return RunManifest(
        schema_version=RUN_SCHEMA_VERSION,
        super_bench_version=__version__,
        command=sys.argv,
        created_at=datetime.now().astimezone(),
        imported_from=str(source.resolve()),
        n_tasks=n_tasks,
        config={"agent": agent, "model": model, "task_set": task_set},
    )
