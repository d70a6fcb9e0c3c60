"""The run directory: the on-disk record of a run, written as it goes.

::

    RUN_DIR/
      run.json                     manifest: what was run, how, with which versions (RunManifest)
      tasks.jsonl                  the task records, so the run can be re-scored offline
      results.jsonl                one line per finished task (and epoch), appended as tasks finish (TaskResult)
      summary.json                 means, confidence intervals and counts (Summary)
      tasks/<name>/trajectory.json, trajectory.ipynb
      tasks/<name>/steps.jsonl     only while the task runs: its steps so far
      tasks/<name>/outputs/<n>.txt a step's output too long to hold in memory (Step.output_file)
      tasks/<name>@<k>/            epoch k (from 2 on) of a run with --epochs
                                   (<name>: the task id, or a readable form of it and a hash; task_dirname)
      verify.jsonl, verify-summary.json, verify/<name>/   written by `super-bench verify` (runner.verify)
      .lock                        only while a process writes the run: which one
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from super_bench._files import UnsafeFileError, open_regular, read_regular
from super_bench.errors import RunDirError
from super_bench.runner import guard
from super_bench.runner.records import NewerRecordError, RunManifest, read_lines
from super_bench.runner.results import Summary, TaskResult
from super_bench.tasks.model import Task
from super_bench.trajectory import atomic_write

log = logging.getLogger(__name__)
_Record = TypeVar("_Record", RunManifest, Summary)
_T = TypeVar("_T")

# What a run writes at the top of its directory (and its verification: runner.verify_records); --redo
# removes exactly these.
RUN_FILES = (
    "run.json",
    "tasks.jsonl",
    "results.jsonl",
    "summary.json",
    "view.html",
    "tasks",
    "verify.jsonl",
    "verify-summary.json",
    "verify",
    guard.RESERVE_NAME,
)


# Task ids that are their own directory name: lower case (so that no two differ only in case, which
# a case-insensitive file system would merge), no path syntax, no '@' (epochs) or '~' (below), short.
_PLAIN_ID = re.compile(r"[a-z0-9_][a-z0-9_.,+-]{0,99}")


def _same_file(f: Any, path: Path) -> bool:
    try:
        here, there = os.fstat(f.fileno()), os.lstat(path)
    except FileNotFoundError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def read_run_file(path: Path) -> bytes | None:
    """The bytes of one file of a run directory, None where it is missing; ``RunDirError`` where it is a link,
    not a regular file (a FIFO is refused at once, never waited on) or larger than any run writes."""
    try:
        return read_regular(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise RunDirError(f"{path} cannot be read: {e}" if not isinstance(e, UnsafeFileError) else str(e)) from None


def write_run_file(path: Path, text: str) -> None:
    """Replace one file of a run directory whole (``atomic_write``: a link in its place is replaced, never
    written through); ``RunDirError`` that names it where it cannot be (a folder in its place, no room)."""
    try:
        atomic_write(path, text)
    except OSError as e:
        raise RunDirError(f"cannot write {path}: {e.strerror or e}") from None


def task_dirname(task_id: str) -> str:
    """The directory name of a task: distinct task ids always get distinct names.

    An id such as ``tinyreg`` or ``colbert_data,cpu`` is its own name (so were they before). Any other
    id (``a/b``, ``..``, ``Task``, ``x@2``, unicode, very long) is named by a readable form of it (other
    characters as ``_``, at most 60) and ``~`` with 16 hex digits of the SHA-256 of the exact id: plain
    names hold no ``~``, so the two kinds never meet, and ids that differ only in what the readable form
    drops (``a/b`` and ``a_b``, ``é`` and ``e``, or letter case) differ in the hash."""
    if _PLAIN_ID.fullmatch(task_id):
        return task_id
    readable = re.sub(r"[^A-Za-z0-9_.,+-]+", "_", task_id)[:60].lstrip(".")
    digest = hashlib.sha256(task_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{readable}~{digest}"


def inside(root: Path, relative: str | os.PathLike[str]) -> Path:
    """``relative`` (a path a run directory's records name) as a path inside ``root``, symbolic links
    followed; ``RunDirError`` when it leaves ``root`` (an absolute path, ``..``, a link pointing out).
    A run directory is anyone's data: what it names is read only where it lies inside it."""
    try:
        base = root.resolve()
        path = (base / relative).resolve()
    except (OSError, RuntimeError) as e:  # a loop of links (RuntimeError before Python 3.13), a name too long
        raise RunDirError(f"{relative!r} in the run directory {root} cannot be followed ({e}): not read") from None
    if not path.is_relative_to(base):
        raise RunDirError(f"{relative!r} is outside the run directory {root}: not read")
    return path


class RunDir:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    @property
    def results_path(self) -> Path:
        return self.path / "results.jsonl"

    def inside(self, relative: str | os.PathLike[str]) -> Path:
        """A path the run's records name, inside the run directory only (``inside``)."""
        return inside(self.path, relative)

    def check_links(self) -> None:
        """Raise ``RunDirError`` when a file or folder of the run (``RUN_FILES``) is a link that leads out
        of the run directory: readers never read, and a verification never writes or removes, through one."""
        for name in RUN_FILES:
            if (self.path / name).is_symlink():
                self.inside(name)

    def task_dir(self, task_id: str, epoch: int = 1) -> Path:
        return self.path / "tasks" / (task_dirname(task_id) + (f"@{epoch}" if epoch > 1 else ""))

    def create(self) -> None:
        if (
            self.path.is_dir()
            and not any((self.path / name).exists() for name in RUN_FILES)
            and any(not p.name.startswith(".") for p in self.path.iterdir())
        ):
            raise RunDirError(
                f"{self.path} is not empty and holds no run (no run.json or results.jsonl); "
                "give --out a new or empty directory"
            )
        try:
            (self.path / "tasks").mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise RunDirError(f"cannot create the run directory {self.path}: {e}") from e

    def clear(self) -> None:
        """Remove what a run wrote (for a fresh start), and nothing else."""
        for name in RUN_FILES:
            path = self.path / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the run directory for this process; another run on it fails at once. The ``.lock`` file
        is removed when the run ends; if the process dies first, the operating system releases the
        lock and the file left behind holds nothing. A ``.lock`` that is a link or not a regular file is refused,
        never followed: a run directory is anyone's data, and truncating the lock must not truncate a file
        elsewhere."""
        path = self.path / ".lock"
        while True:
            try:
                fd = open_regular(path, os.O_RDWR | os.O_CREAT)
            except OSError as e:
                raise RunDirError(
                    f"{e}; a run's lock is always a plain file: remove {path} if no run is writing {self.path}"
                    if isinstance(e, UnsafeFileError)
                    else f"cannot lock {self.path}: {e}"
                ) from None
            f = open(fd, "r+", encoding="utf-8")  # noqa: SIM115 (closed below, or kept open while held)
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                f.seek(0)
                holder = f.read().strip() or "another process"
                f.close()
                raise RunDirError(
                    f"{self.path} is in use by another super-bench run ({holder}); wait for it to end, "
                    "or give another --out"
                ) from None
            # The holder before us may have removed the file between our open and our lock: then we
            # hold a file no one else will open, and must lock the one now at the path instead.
            if _same_file(f, path):
                break
            f.close()
        with f:
            f.seek(0)
            f.truncate()
            f.write(f"pid {os.getpid()}\n")
            f.flush()
            try:
                yield
            finally:
                path.unlink(missing_ok=True)  # while still holding it, so no one locks a removed file
                fcntl.flock(f, fcntl.LOCK_UN)

    # -- tasks ---------------------------------------------------------------------------------
    def write_tasks(self, tasks: list[Task]) -> None:
        write_run_file(self.path / "tasks.jsonl", "".join(t.model_dump_json() + "\n" for t in tasks))

    def read_tasks(self) -> list[Task]:
        path = self.path / "tasks.jsonl"
        data = read_run_file(path)
        if data is None:
            raise RunDirError(f"{self.path} has no tasks.jsonl; pass the task source with --tasks")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise RunDirError(f"{path} cannot be read: {e}") from None
        tasks = []
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            # Python's JSON reader, not pydantic's: a gold answer may hold what only it reads back (NaN,
            # Infinity, a lone surrogate's escape).
            try:
                tasks.append(Task.model_validate(json.loads(line)))
            except ValidationError as e:
                problems = "; ".join(
                    f"{'.'.join(map(str, err['loc'])) or 'the row'}: {err['msg']}" for err in e.errors()
                )
                raise RunDirError(f"{path}:{lineno} is not a valid task ({problems})") from None
            except (ValueError, RecursionError) as e:
                raise RunDirError(f"{path}:{lineno} cannot be read: {e}") from None
        return tasks

    # -- results -------------------------------------------------------------------------------
    def append_result(self, result: TaskResult) -> None:
        """Append one result durably: a crash loses at most the tasks still running. The row is written whole
        or not at all: a write that fails is cut back to where it began. When the disk is full, the reserve
        (``guard``) is given up so that the row fits, and ``RunDirWriteError`` then stops the run, the row kept;
        without room even so, the row is not kept (its task runs again on resume) and the run stops."""
        line = (result.model_dump_json() + "\n").encode("utf-8")
        try:
            self._append(line)
        except UnsafeFileError as e:
            raise RunDirError(str(e)) from None
        except OSError as e:
            if guard.disk_error(e) is None:
                raise
            if not guard.give_up_reserve(self.path):
                raise guard.write_error(self.path, e) from e
            try:
                self._append(line)
            except OSError as again:
                raise guard.write_error(self.path, again) from again
            raise guard.write_error(self.path, e) from e

    def _append(self, line: bytes) -> None:
        fd = open_regular(self.results_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            start = os.lseek(fd, 0, os.SEEK_END)
            try:
                view = memoryview(line)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            except BaseException as e:
                # A torn row is cut back, so that no reader ever sees half of it, and so is a row whose sync
                # failed (the write is retried). A row written whole stays when a stop (Ctrl-C, SIGTERM) comes
                # during its sync: the task finished, and a reader may have seen the row already.
                if isinstance(e, OSError) or os.fstat(fd).st_size != start + len(line):
                    os.ftruncate(fd, start)
                raise
        finally:
            os.close(fd)

    def read_results(self) -> list[TaskResult]:
        """Finished results, one per task and epoch; a torn last line is ignored. Rows of earlier versions are
        read as the current version; a row of a later version is refused. A run writes one row per task and
        epoch, so a second row of one is no result of the run (a line copied in, a file joined by hand): the
        first is kept, with a warning, and a resume rewrites the file without the others."""
        data = read_run_file(self.results_path)
        if data is None:
            return []
        # A line a crash cut short is skipped: its task counts as unfinished and runs again.
        by_key: dict[tuple[str, int], TaskResult] = {}
        for result in read_lines(self.results_path, TaskResult, data):
            if result.key in by_key:
                task_id, epoch = result.key
                log.warning(
                    "%s: a second row of %s (epoch %d) is ignored; the first is kept", self.results_path, task_id, epoch
                )
                continue
            by_key[result.key] = result
        return list(by_key.values())

    def write_results(self, results: list[TaskResult]) -> None:
        write_run_file(self.results_path, "".join(r.model_dump_json() + "\n" for r in results))

    def write_scores(self, results: list[TaskResult], summary: Summary, manifest: RunManifest | None) -> None:
        """Write a scoring's results, summary and (when given) manifest: each is encoded before any is written,
        so that a value that cannot be written leaves the files as they were, not half of them new."""
        texts = [
            (self.results_path, "".join(r.model_dump_json() + "\n" for r in results)),
            (self.path / "summary.json", summary.model_dump_json(indent=2)),
        ]
        if manifest is not None:
            texts.append((self.path / "run.json", manifest.to_json()))
        for path, text in texts:
            write_run_file(path, text)

    # -- summary and manifest ------------------------------------------------------------------
    def write_summary(self, summary: Summary) -> None:
        write_run_file(self.path / "summary.json", summary.model_dump_json(indent=2))

    def read_summary(self) -> Summary | None:
        """``summary.json`` (None without one), in the current version."""
        return self._read(self.path / "summary.json", Summary)

    def summary_mode(self) -> str:
        """The mode the summary gives for rows that do not say theirs (corrected, without a readable summary)."""
        summary = tolerated(self.read_summary, "rows that do not record their scoring mode count as corrected")
        return summary.mode if summary is not None else "corrected"

    def write_manifest(self, manifest: RunManifest) -> None:
        write_run_file(self.path / "run.json", manifest.to_json())

    def read_manifest(self) -> RunManifest | None:
        """``run.json`` (None without one), in the current version."""
        return self._read(self.path / "run.json", RunManifest)

    @staticmethod
    def _read(path: Path, model: type[_Record]) -> _Record | None:
        """A record from a JSON file (None where it is missing); a file that cannot be read as one is a
        ``RunDirError`` that says why."""
        data = read_run_file(path)
        if data is None:
            return None
        try:
            return model.from_json(data)
        except NewerRecordError as e:
            raise NewerRecordError(f"{path}: {e}") from None
        except ValidationError as e:
            problems = "; ".join(f"{'.'.join(map(str, err['loc'])) or 'the file'}: {err['msg']}" for err in e.errors())
            raise RunDirError(f"{path} is not a valid {path.name} ({problems})") from None
        except (OSError, ValueError, RecursionError) as e:
            raise RunDirError(f"{path} cannot be read: {e}") from None


@dataclass
class RunOutcome:
    """What a run or a re-scoring returns: where it is, its results and their summary."""

    run_dir: RunDir
    results: list[TaskResult]
    summary: Summary


def tolerated(read: Callable[[], _T | None], consequence: str) -> _T | None:
    """``read()`` of a record a run can do without (its summary, its manifest): None, with a warning that says
    the ``consequence``, where it is unreadable. One written by a newer version still raises: reading on would
    lose what that version recorded."""
    try:
        return read()
    except NewerRecordError:
        raise
    except RunDirError as e:
        log.warning("%s; %s", e, consequence)
        return None
