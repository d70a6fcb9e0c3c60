"""Re-scoring a saved run offline, from its trajectories alone."""

from __future__ import annotations

import gc
import logging
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from pydantic import ValidationError

from super_bench._files import MAX_RECORD_BYTES, is_regular, read_regular
from super_bench.errors import RunDirError, UnscorableError
from super_bench.runner.manifest import identity_sha256
from super_bench.runner.records import RUN_SCHEMA_VERSION, Rescoring, RunManifest
from super_bench.runner.results import RECORDED_MODE, Summary, TaskResult, summarize
from super_bench.runner.rundir import RunDir, RunOutcome, read_run_file
from super_bench.scoring import AnswerProvenance, ScoreMode, answer_provenance, score_trajectory, submission_of
from super_bench.scoring.submission import json_safe
from super_bench.tasks.model import Task
from super_bench.trajectory import Trajectory, atomic_write

log = logging.getLogger(__name__)

# What a copy of a run takes along; results.jsonl and summary.json are written anew.
_COPIED = ("run.json", "tasks.jsonl", "results.jsonl")


def rescore(
    path: Path, mode: ScoreMode = "corrected", tasks: list[Task] | None = None, *, out: Path | None = None
) -> RunOutcome:
    """Score every trajectory of the run at ``path`` again, in ``mode``.

    With ``out``, the run is copied there (trajectories hard-linked where the file system allows) and
    the copy is scored, leaving ``path`` as it was; without, ``path``'s results.jsonl and summary.json
    are rewritten. ``tasks`` defaults to the run's own ``tasks.jsonl``. A task counts when its row is in
    ``results.jsonl``, as for every command (view, analyze, leaderboard) and for a resume: a trajectory with
    no readable row (a run cut short, its last line torn) is of a task the run has not finished, which a
    resume runs again; it is left out, and said. A trajectory that cannot be read, or whose task is
    missing, leaves its row *unscored*: kept, with the reason, out of the means. Imported rows with no gold
    task keep their recorded metrics.
    """
    source = RunDir(path)
    if not source.path.is_dir():
        raise RunDirError(f"no run directory at {path}")
    source.check_links()
    tasks = tasks if tasks is not None else source.read_tasks()  # before any copy: a run without tasks fails here
    if out is None:
        with source.lock():
            return _rescore(source, mode, tasks, source.read_results())
    # All or nothing: the copy is scored in a folder beside ``out`` and takes its place only when complete.
    target = RunDir(out)
    check_target(source, target)
    staging = RunDir(target.path.parent / f".{target.path.name}.scoring-{os.getpid()}")
    shutil.rmtree(staging.path, ignore_errors=True)
    try:
        # The rows read from the run itself, so that a line a crash cut short is reported where it is.
        rows = source.read_results()
        outcome = _rescore(copy_run(source, staging), mode, tasks, rows, copied_from=source.path)
        _swap_in(staging.path, target.path)
    finally:
        shutil.rmtree(staging.path, ignore_errors=True)
    outcome.run_dir = target
    return outcome


def _swap_in(staging: Path, target: Path) -> None:
    """Put the finished copy at ``target``, replacing an earlier re-scoring there only once the new one is whole."""
    if target.exists() and not any(target.iterdir()):
        target.rmdir()
    if not target.exists():
        os.rename(staging, target)
        return
    old = target.parent / f".{target.name}.replaced-{os.getpid()}"
    os.rename(target, old)
    os.rename(staging, target)
    shutil.rmtree(old, ignore_errors=True)


def check_target(source: RunDir, target: RunDir) -> None:
    """Refuse a ``target`` that is the run itself, or a non-empty directory that is not a re-scoring of it."""
    if target.path.resolve() == source.path.resolve():
        raise RunDirError(f"{target.path} is the run itself; to rewrite it, score it in place (--in-place)")
    if target.path.exists() and any(target.path.iterdir()) and not _rescoring_of(target, source):
        raise RunDirError(
            f"{target.path} already exists and is not a re-scoring of {source.path}; give another --out, "
            f"or --in-place to rewrite {source.path} itself"
        )


def copy_run(source: RunDir, target: RunDir) -> RunDir:
    """A copy of the run at ``source`` in ``target``: a new or empty directory, or an earlier re-scoring of
    the same run (which it replaces)."""
    check_target(source, target)
    if target.path.exists() and any(target.path.iterdir()):
        target.clear()
    target.create()
    for name in _COPIED:
        data = read_run_file(source.path / name)  # a link, a FIFO or a huge file stops the copy, said why
        if data is not None:
            atomic_write(target.path / name, data)
    if (source.path / "tasks").is_dir():
        # Links are copied as links (and then not read, as in the run itself), never followed into a copy.
        shutil.copytree(
            source.path / "tasks", target.path / "tasks", symlinks=True, copy_function=_link, dirs_exist_ok=True
        )
    return target


def trajectory_files(run: Path) -> list[tuple[str, str]]:
    """Where each task folder's ``trajectory.json`` is, relative to the run and in full, in the folders' order.
    Listed by name alone: whether the file is there is found when it is read (one system call fewer)."""
    tasks = os.path.join(run, "tasks")
    if os.path.islink(tasks):
        raise RunDirError(f"{tasks} is a symbolic link: a run's trajectories are read inside its directory only")
    try:
        # A task folder that is a link may point anywhere on this machine: it is not read (a run directory
        # is anyone's data). The entry's type comes with the listing, at no extra cost.
        names = sorted(entry.name for entry in os.scandir(tasks) if not entry.is_symlink())
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as e:
        raise RunDirError(f"cannot list the trajectories in {tasks}: {e}") from None
    return [(f"tasks/{name}/trajectory.json", os.path.join(tasks, name, "trajectory.json")) for name in names]


def read_trajectory(path: str) -> Trajectory:
    """The trajectory at ``path`` (one of ``trajectory_files``). Not Trajectory.load: it first asks whether the
    path is a folder. A trajectory.json that is a link, a FIFO or larger than any run writes is refused at once
    (``UnsafeFileError``, an ``OSError``), never followed, waited on or read whole. The outputs its steps keep in
    files are read from beside it."""
    return Trajectory.model_validate_json(read_regular(path)).kept_in(Path(path).parent)


def _rescoring_of(target: RunDir, source: RunDir) -> bool:
    try:
        manifest = target.read_manifest()
    except RunDirError:
        return False
    last = manifest.rescored[-1] if manifest is not None and manifest.rescored else None
    return last is not None and last.copied_from == str(source.path.resolve())


def _link(src: str, dst: str) -> None:
    # Trajectories are only ever replaced whole (written atomically), never changed in place: a hard
    # link shares them safely and costs no space.
    # Across file systems, only what a reader would read is copied: a regular file no larger than a run
    # writes; a FIFO, a device or a huge sparse file is left out (copying it would wait or fill the disk).
    try:
        os.link(src, dst, follow_symlinks=False)
    except OSError:
        if is_regular(Path(src)) and os.lstat(src).st_size <= MAX_RECORD_BYTES:
            shutil.copy2(src, dst, follow_symlinks=False)
        else:
            log.warning("%s is not a regular file of at most %d bytes: not copied", src, MAX_RECORD_BYTES)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector paused while trajectories are read and scored. They hold no reference cycles
    (each is freed as the next is read), yet their many objects set the collector off again and again, and
    each time it walks the rows kept so far: a seventh of re-scoring's time, for nothing. The pause is the
    process's (Python has no other), so other threads' cyclic garbage waits until re-scoring ends."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _rescore(
    run_dir: RunDir, mode: ScoreMode, tasks: list[Task], rows: list[TaskResult], copied_from: Path | None = None
) -> RunOutcome:
    with _collector_paused():
        outcome, unfinished = _rescore_all(run_dir, mode, tasks, rows, copied_from)
    if unfinished:
        log.warning(
            "%s: %d trajectory(ies) without a row in results.jsonl (the run was cut short) left out, as every "
            "command leaves them: %s; to finish those tasks, resume the run (run again with --out %s)",
            copied_from or run_dir.path,
            len(unfinished),
            ", ".join(unfinished[:5]) + (", ..." if len(unfinished) > 5 else ""),
            copied_from or run_dir.path,
        )
    return outcome


def _rescore_all(
    run_dir: RunDir, mode: ScoreMode, tasks: list[Task], rows: list[TaskResult], copied_from: Path | None
) -> tuple[RunOutcome, list[str]]:
    by_id = {t.task_id: t for t in tasks}
    results = {r.key: r for r in rows}
    by_path = {r.trajectory: r for r in rows if r.trajectory}
    done: set[tuple[str, int]] = set()
    unfinished: list[str] = []  # the task folders whose trajectory has no row
    for relative, traj_path in trajectory_files(run_dir.path):
        row = by_path.get(relative)
        try:
            trajectory = read_trajectory(traj_path)
        except (FileNotFoundError, NotADirectoryError):
            continue  # a task folder without a trajectory, or a file beside the folders
        except (OSError, ValidationError, ValueError) as e:
            if row is None:
                unfinished.append(relative.split("/")[1])
                continue
            reason = f"unreadable trajectory {relative}: {_first_line(e)}"
            log.warning("%s; left unscored", reason)
            results[row.key] = _unscored(row, reason, mode)
            done.add(row.key)
            continue
        epoch = int(trajectory.metadata.get("epoch", 1))
        row = results.get((trajectory.task_id, epoch)) or row
        if row is None:
            unfinished.append(relative.split("/")[1])
            continue
        task = by_id.get(trajectory.task_id)
        if task is None:
            if row.mode == RECORDED_MODE:
                # An imported task with no gold task keeps the metrics recorded for it; its answer's
                # provenance needs no gold.
                results[row.key] = with_provenance(row, answer_provenance(trajectory)).diagnosed(trajectory)
                done.add(row.key)
                continue
            reason = f"task {trajectory.task_id!r} is not among the tasks"
            log.warning("%s: %s; left unscored", relative, reason)
            results[row.key] = _unscored(row, reason, mode)
            done.add(row.key)
            continue
        result = _scored(row, trajectory, task, mode, relative)
        results[result.key] = result
        done.add(result.key)
    for key, row in results.items():
        if key in done or row.mode == RECORDED_MODE:
            continue
        if row.status == "infra_error":  # never ran: nothing to score, and out of the means anyway
            results[key] = row.model_copy(update={"mode": mode, "failure": None})
        else:
            results[key] = _unscored(row, f"its trajectory file {row.trajectory or '(none)'} is missing", mode)
    ordered = list(results.values())
    return RunOutcome(run_dir, ordered, _write_scores(run_dir, ordered, mode, copied_from)), unfinished


def _scored(row: TaskResult, trajectory: Trajectory, task: Task, mode: ScoreMode, relative: str) -> TaskResult:
    """``row`` scored again from its trajectory; unscored, with the reason, where scoring cannot score it."""
    try:
        metrics, details = score_trajectory(trajectory, task, mode)
    except UnscorableError as e:
        log.warning("%s: %s; left unscored", relative, e)
        return _unscored(row, str(e), mode)
    except Exception as e:  # a fault of scoring itself: this row unscored, saying so; the others scored
        log.exception("%s: scoring failed; left unscored", relative)
        return _unscored(row, f"scoring failed: {type(e).__name__}: {_first_line(e)}", mode)
    update = {
        "submission": json_safe(submission_of(trajectory)),
        "trajectory": relative,
        "mode": mode,
        "unscored": None,
        "metrics": metrics,
        "details": details.model_dump(),
        "answer_provenance": details.answer_provenance,
    }
    return row.model_copy(update=update).diagnosed(trajectory)


def _write_scores(run_dir: RunDir, results: list[TaskResult], mode: ScoreMode, copied_from: Path | None) -> Summary:
    """Write the results and the summary, with the task environment the run recorded, and note the re-scoring
    in run.json: all encoded before any is written."""
    try:
        manifest = run_dir.read_manifest()
    except RunDirError as e:
        log.warning("the re-scoring is not noted in run.json: %s", e)
        manifest, readable = None, False
    else:
        readable = True
    summary = summarize(results, mode)
    if manifest is not None:
        summary.task_environment = manifest.task_environment_line
    # Nothing is written over a run.json that cannot be read, nor into a directory put together by hand.
    noted = None
    if readable and (manifest is not None or copied_from is not None):
        noted = _rescoring_noted(manifest or RunManifest(schema_version=RUN_SCHEMA_VERSION), mode, copied_from)
        if noted.identity is not None:  # the rows' digest follows the identity's new mode
            digest = identity_sha256(noted.identity)
            results = [
                r if r.identity_sha256 is None else r.model_copy(update={"identity_sha256": digest}) for r in results
            ]
    run_dir.write_scores(results, summary, noted)
    return summary


def with_provenance(row: TaskResult, provenance: AnswerProvenance | None) -> TaskResult:
    """``row`` with its answer's provenance, its metrics as they were."""
    details = {**row.details, "provenance": provenance.model_dump() if provenance is not None else None}
    status = provenance.status if provenance is not None else None
    return row.model_copy(update={"details": details, "answer_provenance": status})


def _unscored(row: TaskResult, reason: str, mode: ScoreMode) -> TaskResult:
    return row.model_copy(update={"unscored": reason, "mode": mode, "failure": None})


def _first_line(error: Exception) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:200]


def _rescoring_noted(manifest: RunManifest, mode: ScoreMode, copied_from: Path | None) -> RunManifest:
    """The manifest with the new mode noted, so that resuming the run scores new tasks the same way."""
    for part in (manifest.identity, manifest.config):
        if part is not None and "mode" in part:
            part["mode"] = mode
    entry = Rescoring(mode=mode, at=datetime.now().astimezone())
    if copied_from is not None:
        entry.copied_from = str(copied_from.resolve())
    manifest.rescored = [*manifest.rescored, entry]
    return manifest
