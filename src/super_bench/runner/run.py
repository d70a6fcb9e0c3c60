"""Running an agent over a set of tasks, writing the run directory as results arrive."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from super_bench.agents import create_agent
from super_bench.demo import DEMO_URL_PREFIX
from super_bench.errors import ConfigError, RunDirError, RunDirWriteError
from super_bench.runner import guard
from super_bench.runner.adopt import previous_manifest
from super_bench.runner.config import Reporter, RunConfig
from super_bench.runner.dispatch import dispatch
from super_bench.runner.durations import Durations
from super_bench.runner.executors import EXECUTORS, EpisodeSpec, ExecutorFactory, WorkItem
from super_bench.runner.manifest import (
    add_task_environment,
    build_manifest,
    identity,
    identity_sha256,
    record_upstreams,
)
from super_bench.runner.results import Tally, TaskResult
from super_bench.runner.rundir import RunDir, RunOutcome
from super_bench.sandbox import (
    SandboxConfig,
    check_backend,
    clear_scratch,
    describe_backend,
    sandbox_class,
    scratch_dir,
)
from super_bench.tasks.model import Task

if TYPE_CHECKING:
    from super_bench.environment import EnvConfig

log = logging.getLogger(__name__)


def run(
    config: RunConfig | None = None,
    *,
    tasks: list[Task] | None = None,
    reporter: Reporter | None = None,
    progress: bool = True,
    **settings: Any,
) -> RunOutcome:
    """Run the configured agent on every task and return the results and their summary.

    Give a ``RunConfig``, or its fields as keywords: ``run(agent="gold", task_set="masked")``.
    Tasks already finished in the run directory (from an interrupted run) are not run again,
    unless ``redo`` is set; a directory that holds a different run is refused. Without a
    ``reporter``, the run directory and a progress bar are shown on stderr (``progress=False``: nothing).
    """
    if config is not None and settings:
        raise TypeError("give either a RunConfig or keyword settings, not both")
    config = config or RunConfig(**settings)
    options = config.agent_options()
    # Fail on a bad agent or executor name (or a missing extra), or a sandbox that cannot run here,
    # now rather than once per task.
    agent = create_agent(config.agent.name, options)
    make_executor = EXECUTORS.get(config.execution.executor)
    tasks = config.load() if tasks is None else tasks
    check_backend(config.env.sandbox, pinned_commits(tasks))  # the mirrors too, before any task starts
    _announce_task_environment(config.env.sandbox, tasks)
    _check_solutions(config, agent, tasks)
    run_dir = RunDir(config.out or config.default_out())
    run_dir.create()
    if reporter is None and progress:
        from super_bench.runner.progress import RunProgress

        header = f"super-bench: {config.agent.name} on {len(tasks)} task(s), writing {run_dir.path}"
        with RunProgress(header=header) as shown:
            return _run(config, tasks, run_dir, make_executor, shown)
    return _run(config, tasks, run_dir, make_executor, reporter)


def pinned_commits(tasks: list[Task]) -> dict[str, set[str]]:
    """Each task repository's commits that tasks pin (checked in its git mirror before a run)."""
    commits: dict[str, set[str]] = {}
    for task in tasks:
        if task.github_repo and task.git_commit:
            commits.setdefault(task.github_repo, set()).add(task.git_commit)
    return commits


def _check_solutions(config: RunConfig, agent: object, tasks: list[Task]) -> None:
    """An agent that replays gold solutions (``needs_solution``) cannot run tasks that have none."""
    if not getattr(agent, "needs_solution", False) or any(task.solution for task in tasks):
        return
    which = (
        "an ad-hoc --query task has none"
        if config.tasks.query is not None
        else f"none of the {len(tasks)} task(s) has one"
    )
    raise ConfigError(
        f"the {config.agent.name} agent replays a task's gold solution, and {which}; choose an agent that works on "
        "its own with --agent, e.g. --agent react-super --model openai/gpt-4o"
    )


def _run(
    config: RunConfig, tasks: list[Task], run_dir: RunDir, make_executor: ExecutorFactory, reporter: Reporter | None
) -> RunOutcome:
    # The run's sandboxes live in a scratch directory of its own, which nobody else uses while it holds the lock.
    sandbox = config.env.sandbox
    scratch = scratch_dir(run_dir.path, sandbox.root)
    given = {"root": scratch, "env": {**_thread_limits(config), **sandbox.env}}
    env = config.env.model_copy(update={"sandbox": sandbox.model_copy(update=given)})
    with run_dir.lock():
        containers = sandbox_class(sandbox).runs_containers
        for leftover in [] if sandbox.keep else clear_scratch(scratch, containers):
            log.info("removed %s, left behind by an earlier attempt at this run", leftover)
        try:
            return _resume(config, tasks, run_dir, make_executor, reporter, env, scratch)
        except (OSError, RunDirError) as e:  # a write of the run directory failed: its disk is full or failing
            # A run file's write (the summary at the end, run.json, tasks.jsonl) says so as a RunDirError.
            if isinstance(e, RunDirWriteError) or (full := guard.disk_error(e)) is None:
                raise
            raise guard.write_error(run_dir.path, full) from e
        finally:
            guard.give_up_reserve(run_dir.path)


def _resume(
    config: RunConfig,
    tasks: list[Task],
    run_dir: RunDir,
    make_executor: ExecutorFactory,
    reporter: Reporter | None,
    env: EnvConfig,
    scratch: Path,
) -> RunOutcome:
    options = config.agent_options()
    current = identity(config)
    if config.redo:
        run_dir.clear()
        run_dir.create()
        previous = None
    else:
        previous = previous_manifest(run_dir, current, config.adopt)
    kept, finished = _finished(run_dir, tasks, config.execution.epochs)
    guard.check_room(run_dir.path, len(tasks) * config.execution.epochs - len(finished))
    if run_dir.results_path.exists():
        run_dir.write_results(kept)  # without the rows that run again, and a line a crash may have cut
    guard.keep_reserve(run_dir.path)
    record_tasks(run_dir, tasks)
    manifest = build_manifest(config, run_dir, previous)
    run_dir.write_manifest(manifest)
    # Describing the task environment may build the default one (once): it runs while the first
    # tasks start, and the manifest gets it when it is done.
    background = ThreadPoolExecutor(1, thread_name_prefix="manifest")
    packages = background.submit(add_task_environment, manifest, config, run_dir)
    pending = [
        WorkItem(task, epoch, config.seed_for(epoch))
        for epoch in range(1, config.execution.epochs + 1)
        for task in tasks
        if (task.task_id, epoch) not in finished
    ]
    by_id = {task.task_id: task for task in tasks}
    durations = Durations(
        config.agent.name if config.agent.model is None else f"{config.agent.name} {config.agent.model}"
    )
    order = {task.task_id: i for i, task in enumerate(tasks)}
    # The summary is counted as rows arrive, and the rows are not held: the harness's memory stays flat however
    # many tasks the run finishes.
    tally = Tally(config.mode, order)

    def keep(result: TaskResult) -> None:
        tally.add(result)
        durations.learn(by_id, [result])

    for result in finished.values():
        keep(result)
    if reporter is not None:
        reporter.begin(len(tasks) * config.execution.epochs, list(finished.values()))
    del kept, finished
    try:
        if pending:
            spec = EpisodeSpec(config.agent.name, options, env, config.mode, run_dir.path)
            with make_executor(spec, config) as executor:
                if config.execution.order == "longest-first" and executor.capacity > 1:
                    pending = durations.order(pending, executor.capacity)
                stamp = identity_sha256(current)
                dispatch(executor, pending, run_dir, config.execution.infra_retries, reporter, stamp, keep)
    finally:
        _remove_if_empty(scratch)
    durations.save()
    background.shutdown()
    packages.result()
    record_upstreams(manifest, config, run_dir)
    summary = tally.summary()
    summary.task_environment = manifest.task_environment_line
    run_dir.write_summary(summary)
    # The outcome's rows, read back once the run is over.
    wanted = {(task.task_id, epoch) for task in tasks for epoch in range(1, config.execution.epochs + 1)}
    results = sorted((r for r in run_dir.read_results() if r.key in wanted), key=lambda r: (order[r.task_id], r.epoch))
    return RunOutcome(run_dir, results, summary)


# The variables OpenMP, OpenBLAS and MKL read for their thread counts (OpenBLAS reads its own before OpenMP's).
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _thread_limits(config: RunConfig) -> dict[str, str]:
    """The thread counts tasks get (``RunConfig.task_threads``), but for a variable the user gives them or passes."""
    threads = config.task_threads()
    if threads is None:
        return {}
    return {name: str(threads) for name in THREAD_VARIABLES if name not in config.env.sandbox.pass_env}


def _remove_if_empty(directory: Path) -> None:
    try:
        directory.rmdir()
    except OSError:
        pass  # a kept task directory (--keep-workdirs), or never made


# The warnings said by this process: a command that makes several runs (doctor, construct mask) says each once.
_SAID: set[str] = set()


def _announce_task_environment(sandbox: SandboxConfig, tasks: list[Task]) -> None:
    """Say what the sandbox warns of before tasks run (such as SUPER's environment never built), where it
    matters: the bundled demo's repositories need none of SUPER's packages, and an ad-hoc query names none."""
    if all(task.github_repo is None or task.github_repo.startswith(DEMO_URL_PREFIX) for task in tasks):
        return
    warning = describe_backend(sandbox).warning
    if warning is not None and warning not in _SAID:
        _SAID.add(warning)
        log.warning("%s", warning)


def _finished(
    run_dir: RunDir, tasks: list[Task], epochs: int
) -> tuple[list[TaskResult], dict[tuple[str, int], TaskResult]]:
    """The rows ``results.jsonl`` is to keep, and of them the finished results of this run's tasks and epochs.
    Left out, so that their tasks run again: infrastructure failures, a line a crash may have cut, and a row
    whose trajectory is gone (with a warning)."""
    wanted = {(task.task_id, epoch) for task in tasks for epoch in range(1, epochs + 1)}
    kept = [
        r
        for r in run_dir.read_results()
        if not (r.key in wanted and (r.status == "infra_error" or not _trajectory_kept(run_dir, r)))
    ]
    return kept, {r.key: r for r in kept if r.key in wanted}


def _trajectory_kept(run_dir: RunDir, row: TaskResult) -> bool:
    if row.trajectory is None:
        return True  # a row that never had one (written by hand, or imported)
    try:
        if run_dir.inside(row.trajectory).is_file():
            return True
    except RunDirError:
        pass
    log.warning(
        "%s: the trajectory of %s (epoch %d), %s, is missing: the task runs again",
        run_dir.path,
        row.task_id,
        row.epoch,
        row.trajectory,
    )
    return False


def record_tasks(run_dir: RunDir, tasks: list[Task]) -> None:
    """Record this run's tasks beside those of earlier runs into the same directory (a resume with
    other task ids), so that every result can be re-scored."""
    try:
        records = {t.task_id: t for t in run_dir.read_tasks()}
    except (RunDirError, ValidationError, ValueError):
        records = {}
    records.update((t.task_id, t) for t in tasks)
    run_dir.write_tasks(list(records.values()))
