"""Reproducing a run (``super-bench verify``): each task's agent actions replayed, without the submission,
in a fresh sandbox configured as the run's was, and the submitted answer looked for in the reproduced
outputs the way scoring looks for it in the original ones (``scoring.provenance``).

::

    RUN_DIR/
      verify.jsonl            one row per task (and epoch), appended and fsync'ed as each replay ends (VerifyResult)
      verify-summary.json     how many answers were reproduced (VerifySummary)
      verify/<name>/          the reproduced episode: trajectory.json, trajectory.ipynb (names as under tasks/)
      verify/.lock            only while a verification runs

A verification resumes like a run: rows of finished replays are kept, the rest run (again).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from super_bench._files import UnsafeFileError, open_append
from super_bench.agents import AgentOptions
from super_bench.divergence import Divergence, divergence, ended_alike, failed_alike, replayed_steps
from super_bench.environment import EnvConfig
from super_bench.errors import RunDirError
from super_bench.runner.episode import Cancellation, Cancelled, run_episode
from super_bench.runner.results import TaskResult
from super_bench.runner.rundir import RunDir
from super_bench.runner.verify_env import replay_environment
from super_bench.runner.verify_records import (
    VERIFY_DIR,
    VERIFY_ROWS,
    VERIFY_SUMMARY,
    VerifyEnvironment,
    VerifyResult,
    VerifySummary,
    read_rows,
    summarize_verification,
)
from super_bench.sandbox import (
    check_backend,
    clear_scratch,
    describe_backend,
    remove_tree,
    sandbox_class,
    scratch_dir,
)
from super_bench.scoring import ScoreMode, submission_of, trace_answer
from super_bench.tasks.model import Task
from super_bench.trajectory import Trajectory, atomic_write


@dataclass
class VerifyOutcome:
    rows: list[VerifyResult]
    summary: VerifySummary


def verify(
    path: Path,
    *,
    task_ids: list[str] | None = None,
    workers: int = 1,
    redo: bool = False,
    sandbox: dict[str, Any] | None = None,
    on_row: Callable[[VerifyResult], None] | None = None,
    on_environment: Callable[[VerifyEnvironment], None] | None = None,
) -> VerifyOutcome:
    """Replay the run at ``path`` task by task and check its answers against the reproduced outputs.

    The run directory is data: the replays keep the run's budgets, timeouts and sandbox limits, and run
    where the caller's ``sandbox`` settings say (by default bwrap, the network off); what else the run
    asked for is refused and recorded (``runner.verify_env``; ``on_environment`` is told before any replay)."""
    run_dir = RunDir(path)
    if not run_dir.path.is_dir():
        raise RunDirError(f"no run directory at {path}")
    run_dir.check_links()
    results = run_dir.read_results()
    chosen = [r for r in results if task_ids is None or r.task_id in task_ids]
    if not chosen:
        missing = f" (none of the task ids {', '.join(task_ids)})" if task_ids else ""
        raise RunDirError(f"{path} has no results to verify{missing}")
    env, mode, environment = replay_environment(run_dir, sandbox or {})
    environment.task_environment = describe_backend(env.sandbox).task_environment
    if on_environment is not None:
        on_environment(environment)
    check_backend(env.sandbox)
    tasks = _tasks(run_dir)
    home = RunDir(run_dir.path / VERIFY_DIR)
    home.path.mkdir(exist_ok=True)
    scratch = scratch_dir(home.path, env.sandbox.root)
    env = env.model_copy(update={"sandbox": env.sandbox.model_copy(update={"root": scratch})})
    with home.lock():
        clear_scratch(scratch, sandbox_class(env.sandbox).runs_containers)
        if redo and task_ids is None:
            for child in home.path.iterdir():
                if child.is_dir() and not child.is_symlink():
                    remove_tree(str(child))
                elif child.name != ".lock":
                    child.unlink()
        again = {r.key for r in chosen}
        # Kept: the rows of other tasks, and the chosen tasks' finished replays unless they are to be redone.
        kept = {r.key: r for r in read_rows(run_dir) if r.key not in again or (r.replayed and not redo)}
        rows_path = run_dir.path / VERIFY_ROWS
        atomic_write(rows_path, "".join(r.model_dump_json() + "\n" for r in kept.values()))
        pending = [r for r in chosen if r.key not in kept]
        rows = dict(kept)
        for row in _drive(run_dir, pending, tasks, env, mode, workers):
            _append(rows_path, row)
            rows[row.key] = row
            if on_row is not None:
                on_row(row)
        _remove_if_empty(scratch)
        order = {r.key: i for i, r in enumerate(results)}
        ordered = sorted((r for r in rows.values() if r.key in order), key=lambda r: order[r.key])
        summary = summarize_verification(ordered, environment)
        atomic_write(run_dir.path / VERIFY_SUMMARY, summary.model_dump_json(indent=2))
    return VerifyOutcome(ordered, summary)


def _tasks(run_dir: RunDir) -> dict[str, Task]:
    if not os.path.lexists(run_dir.path / "tasks.jsonl"):
        return {}
    return {t.task_id: t for t in run_dir.read_tasks()}


def _drive(
    run_dir: RunDir, pending: list[TaskResult], tasks: dict[str, Task], env: EnvConfig, mode: ScoreMode, workers: int
) -> Iterator[VerifyResult]:
    """Each pending task's row as it is done; Ctrl-C stops the replays in flight and goes on up."""
    cancellation = Cancellation()

    def one(result: TaskResult) -> VerifyResult:
        return _verify_one(run_dir, result, tasks, env, mode, cancellation)

    if workers == 1:  # in this thread, so that Ctrl-C reaches the replay at once
        for result in pending:
            try:
                yield one(result)
            except Cancelled:
                return
        return
    with ThreadPoolExecutor(workers, thread_name_prefix="super-bench-verify") as pool:
        running: set[Future[VerifyResult]] = set()
        queue = list(reversed(pending))
        try:
            while queue or running:
                while queue and len(running) < workers:
                    running.add(pool.submit(one, queue.pop()))
                done, running = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    try:
                        yield future.result()
                    except Cancelled:
                        continue
        except BaseException:
            cancellation.cancel()
            queue.clear()
            raise


def _verify_one(
    run_dir: RunDir, result: TaskResult, tasks: dict[str, Task], env: EnvConfig, mode: ScoreMode, cancel: Cancellation
) -> VerifyResult:
    row = VerifyResult(
        task_id=result.task_id,
        epoch=result.epoch,
        reproduced=None,
        answer_provenance=result.answer_provenance,
        original=result.trajectory,
    )
    if result.status == "infra_error" or not result.trajectory:
        return row.model_copy(update={"reason": "the task never ran (an infrastructure failure): nothing to replay"})
    try:
        original = Trajectory.load(run_dir.inside(result.trajectory))
    except (OSError, ValidationError, ValueError, RunDirError) as e:
        return row.model_copy(update={"reason": f"unreadable trajectory {result.trajectory}: {e}"[:300]})
    submission = submission_of(original)
    wanted = trace_answer(submission, [])
    task = tasks.get(result.task_id) or _task_of(original, result.task_set)
    task_dir = run_dir.path / VERIFY_DIR / run_dir.task_dir(result.task_id, result.epoch).name
    with _actions_file(original, task_dir) as actions:
        replay = run_episode(
            task,
            f"replay:{actions}",
            AgentOptions(),
            env,
            task_dir,
            run_dir=run_dir.path,
            mode=mode,
            epoch=result.epoch,
            cancellation=cancel,
        )
    row = row.model_copy(
        update={
            "status": replay.status,
            "stop_reason": replay.stop_reason,
            "trajectory": replay.trajectory,
            "wall_time": replay.wall_time,
            "finished_at": replay.finished_at,
        }
    )
    if replay.status == "infra_error":
        return row.model_copy(update={"reason": f"the replay failed on the infrastructure: {replay.error}"})
    reproduced_steps = Trajectory.load(task_dir).steps
    recorded, replayed = replayed_steps(original.steps), replayed_steps(reproduced_steps)
    stopped = replay.stop_reason
    if wanted is None or wanted.status is None:
        # Nothing to look for: the run failed (or gave up), and its replay should fail the same way.
        stops = (original.stop_reason, replay.stop_reason)
        if failed_alike(recorded, replayed, stops):
            return row.model_copy(update={"reproduced": True})
        why = "nothing was submitted, and the replay did not fail the same way"
        if not ended_alike(*stops):
            why += f": it stopped with {stops[1]}, the run with {stops[0]}"
        return row.model_copy(
            update={"reproduced": False, "reason": why, "divergence": divergence(recorded, replayed, stopped)}
        )
    reproduced = trace_answer(submission, reproduced_steps)
    assert reproduced is not None  # the submission has values
    fields = reproduced.fields
    missing = [f"{f.field or '(answer)'} = {json.dumps(f.value)}" for f in fields if not f.observed]
    if reproduced.untraced > reproduced.untraced_shown:
        missing.append(f"{reproduced.untraced - reproduced.untraced_shown} later value(s) not shown in order")
    reason: str | None = None
    diverged: Divergence | None = None
    if missing:
        reason = "not shown by the replay's outputs: " + ", ".join(missing)
        if replay.stop_reason not in (None, "agent_stopped"):
            reason += f" (the replay stopped early: {replay.stop_reason})"
        diverged = divergence(recorded, replayed, stopped)
    update = {"reproduced": not missing, "fields": fields, "reason": reason, "divergence": diverged}
    return row.model_copy(update=update)


def _task_of(trajectory: Trajectory, task_set: str) -> Task:
    """A task for a trajectory whose task record the run did not keep (an imported run): its query, and
    its pre-executed cells (a Masked task's) run again before the replay."""
    pre = [s.action for s in trajectory.steps if s.pre_executed]
    return Task(
        task_id=trajectory.task_id,
        query=trajectory.query or trajectory.task_id,
        task_set="masked" if task_set == "masked" else "expert",
        pre_execute_cells=pre,
    )


@contextmanager
def _actions_file(trajectory: Trajectory, task_dir: Path) -> Iterator[Path]:
    """The agent's actions without its submissions, as a replay file (invalid imported steps keep the
    observation they are replayed with), removed after the replay has read it."""
    steps = []
    for step in trajectory.agent_steps:
        if step.action.type == "submit":
            continue
        record: dict[str, Any] = {"action": step.action.model_dump(mode="json"), "thought": step.thought}
        if step.outcome == "invalid" and "notebook_action" in step.metadata:
            record.update(
                outcome="invalid",
                observation=step.observation,
                metadata={"notebook_action": step.metadata["notebook_action"]},
            )
        steps.append(record)
    task_dir.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=".replay-", suffix=".json", dir=task_dir.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"steps": steps}, f)
        yield Path(name)
    finally:
        Path(name).unlink(missing_ok=True)


def _append(path: Path, row: VerifyResult) -> None:
    try:
        f = open_append(path)
    except UnsafeFileError as e:
        raise RunDirError(str(e)) from None
    with f:
        f.write(row.model_dump_json().encode() + b"\n")
        f.flush()
        os.fsync(f.fileno())


def _remove_if_empty(directory: Path) -> None:
    try:
        directory.rmdir()
    except OSError:
        pass
