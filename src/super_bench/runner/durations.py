"""How long each task took in earlier runs, so that a run with several workers starts the longest first.

A run of tasks of very different lengths on a few workers ends when its last task ends: started last, one long
task keeps one worker busy while the others idle. Started first (longest processing time first), it runs beside
the short ones (and the plan then evens the workers' shares: ``schedule``). The runner cannot know a task's length
before it runs it, so it remembers: each finished task's wall time, per task and agent, in ``durations.json`` in
the user's cache directory. Tasks never timed go first (any of them may be long), in the order given.

The file is data, read with a schema: a missing, unreadable or malformed file gives no estimates and the given
order, never an error (one malformed entry makes the whole file unknown); nothing in it is run. Runs that end at
once may each write it: each reads it again under a lock and replaces it whole, so none loses another's entries.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ConfigDict, Field, ValidationError

from super_bench._paths import cache_dir, file_lock
from super_bench._pydantic import Model
from super_bench.runner.schedule import plan

if TYPE_CHECKING:
    from super_bench.runner.executors import WorkItem
    from super_bench.runner.results import TaskResult
    from super_bench.tasks.model import Task

log = logging.getLogger(__name__)

VERSION = 1
KEEP = 20_000  # tasks remembered; the ones timed longest ago are forgotten first
# A save holds the lock for milliseconds: a run waits this long for another's, then goes without recording (a
# holder stopped rather than dead would otherwise keep every run on the machine from ending).
_LOCK_WAIT = 10.0


class Timing(Model):
    model_config = ConfigDict(frozen=True)

    seconds: float = Field(ge=0, allow_inf_nan=False)
    at: float = Field(allow_inf_nan=False)  # when it was measured (Unix time), to forget the oldest first


class _File(Model):
    version: int
    # task key -> agent key -> its last finished run
    tasks: dict[str, dict[str, Timing]] = Field(default_factory=dict)


def task_key(task: Task) -> str:
    """A task's identity across runs: what it asks of which repository, not where it was loaded from."""
    what = [task.task_set, task.task_id, task.query, task.github_repo, task.git_commit]
    return hashlib.sha256(json.dumps(what).encode()).hexdigest()[:24]


def default_path() -> Path:
    return cache_dir() / "durations.json"


class Durations:
    """Task durations remembered across runs, for one agent (its name and model)."""

    def __init__(self, agent: str, path: Path | None = None) -> None:
        self.agent = agent
        self.path = path or default_path()
        self._known = _read(self.path)
        self._new: dict[str, Timing] = {}

    def estimate(self, task: Task) -> float | None:
        """Seconds the task took this agent when it last finished; else the mean over the other agents that
        ran it; else None."""
        key = task_key(task)
        if key in self._new:
            return self._new[key].seconds
        by_agent = self._known.get(key, {})
        if self.agent in by_agent:
            return by_agent[self.agent].seconds
        if by_agent:
            return sum(t.seconds for t in by_agent.values()) / len(by_agent)
        return None

    def learn(self, tasks: dict[str, Task], results: Iterable[TaskResult]) -> None:
        """Take the wall time of every finished result (not an infrastructure failure), less what it waited
        for room on the machine. A task run for several epochs keeps the longest."""
        now = time.time()
        for result in results:
            task = tasks.get(result.task_id)
            if task is None or result.status == "infra_error":
                continue
            seconds = max(0.0, result.wall_time - result.waited)
            key = task_key(task)
            if key not in self._new or self._new[key].seconds < seconds:
                self._new[key] = Timing(seconds=seconds, at=now)

    def order(self, items: list[WorkItem], workers: int) -> list[WorkItem]:
        """``items`` in the order to hand them out to ``workers``: those never timed first, in the order given;
        then the rest longest first, balanced between the workers by their estimates (``schedule.plan``)."""
        estimates = [self.estimate(item.task) for item in items]
        untimed = [item for item, seconds in zip(items, estimates, strict=True) if seconds is None]
        timed = [(item, seconds) for item, seconds in zip(items, estimates, strict=True) if seconds is not None]
        return untimed + [timed[i][0] for i in plan([seconds for _, seconds in timed], workers)]

    def save(self) -> None:
        """Add what was learnt to the file (read again under its lock, so that other runs' entries stay)."""
        if not self._new:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with file_lock(self.path.with_name(self.path.name + ".lock"), timeout=_LOCK_WAIT):
                known = _read(self.path)
                for key, timing in self._new.items():
                    known.setdefault(key, {})[self.agent] = timing
                _write(self.path, _forget_oldest(known))
        except OSError as e:  # a read-only or full cache: the next run starts in the given order, nothing worse
            log.warning("could not record the tasks' durations in %s: %s", self.path, e)


def _read(path: Path) -> dict[str, dict[str, Timing]]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as e:
        log.warning("could not read the tasks' durations from %s: %s", path, e)
        return {}
    try:
        data = _File.model_validate_json(raw)
    except ValidationError as e:
        log.warning("ignoring %s, which is not a file of task durations: %s", path, _first_error(e))
        return {}
    if data.version != VERSION:
        return {}
    return data.tasks


def _first_error(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "the top level"
    return f"{where}: {first['msg']}"


def _forget_oldest(known: dict[str, dict[str, Timing]]) -> dict[str, dict[str, Timing]]:
    if len(known) <= KEEP:
        return known
    newest = sorted(known, key=lambda key: max(t.at for t in known[key].values()) if known[key] else 0.0)
    return {key: known[key] for key in newest[-KEEP:]}


def _write(path: Path, known: dict[str, dict[str, Timing]]) -> None:
    data = _File(version=VERSION, tasks=known).model_dump_json()
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".durations-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
