"""Starting the next task's environment ahead (``--prestart``): the decision (an idle core, measured), the
results of runs that prepared tasks ahead against runs that did not, the wall clock held while a prepared
sandbox waits, a failure to start ahead met as the task's own, and nothing left of what a stopped run had
prepared."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.runner.test_runner import FOUR, config, processes_with_home_under
from tests.support.flaky_sandbox import FlakySandbox
from tests.support.helpers import make_task

from super_bench import EnvConfig, SandboxConfig, run
from super_bench.agents import AGENTS
from super_bench.agents.gold import GoldAgent
from super_bench.environment import Environment
from super_bench.errors import EnvironmentClosedError
from super_bench.runner import prestart
from super_bench.runner.prestart import Prestart, core_idle, cpu_times, idle_cores
from super_bench.tasks.model import Task
from super_bench.trajectory import utcnow

# -- the decision ------------------------------------------------------------------------------------
CPU_FIELDS = st.lists(st.integers(0, 2**40), min_size=4, max_size=10)


@given(st.dictionaries(st.integers(0, 63), CPU_FIELDS, max_size=8), st.sets(st.integers(0, 63)))
def test_cpu_times_sums_idle_and_iowait_over_the_cpus_asked_for(per_cpu: dict[int, list[int]], cpus: set[int]) -> None:
    total_line = "cpu  " + " ".join(str(sum(v[i] for v in per_cpu.values() if len(v) > i)) for i in range(4))
    lines = [total_line, *(f"cpu{n} " + " ".join(map(str, v)) for n, v in per_cpu.items()), "intr 5 6 7", "ctxt 9"]
    idle, total = cpu_times("\n".join(lines) + "\n", cpus)
    asked = [v for n, v in per_cpu.items() if n in cpus]
    assert idle == sum(v[3] + (v[4] if len(v) > 4 else 0) for v in asked)
    assert total == sum(sum(v[:8]) for v in asked)  # guest and guest_nice are counted in user and nice already
    assert 0 <= idle <= total


@given(st.text(alphabet="0123456789 abx-", max_size=30))
def test_a_cpu_line_that_is_not_numbers_is_refused_not_misread(rest: str) -> None:
    stat = f"cpu0 {rest}\n"
    try:
        fields = [int(x) for x in rest.split()]
    except ValueError:
        with pytest.raises(ValueError, match=r"invalid literal"):
            cpu_times(stat, [0])
        return
    if len(fields) < 4:
        with pytest.raises(ValueError, match="fields"):
            cpu_times(stat, [0])
    else:
        assert cpu_times(stat, [0])[0] == fields[3] + (fields[4] if len(fields) > 4 else 0)


@given(
    st.tuples(st.integers(0, 10**9), st.integers(0, 10**9)),
    st.tuples(st.integers(-(10**6), 10**9), st.integers(-(10**6), 10**9)),
    st.integers(0, 256),
)
def test_idle_cores_is_between_none_and_every_core(before: tuple[int, int], moved: tuple[int, int], cpus: int) -> None:
    after = (before[0] + moved[0], before[1] + moved[1])
    idle = idle_cores(before, after, cpus)
    assert 0.0 <= idle <= cpus
    if moved[1] <= 0:
        assert idle == 0.0  # no time passed: nothing is known to be idle
    elif 0 <= moved[0] <= moved[1]:
        assert idle == pytest.approx(cpus * moved[0] / moved[1])


def test_no_core_counts_as_idle_while_every_core_computes() -> None:
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(len(os.sched_getaffinity(0)))]
    try:
        time.sleep(0.3)
        assert not core_idle()
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


def test_where_the_cpu_accounts_cannot_be_read_no_core_counts_as_idle(tmp_path: Path) -> None:
    assert not core_idle(window=0.01, stat=str(tmp_path / "no-such-file"))
    garbled = tmp_path / "stat"
    garbled.write_text("".join(f"cpu{n} 1 2\n" for n in os.sched_getaffinity(0)))
    assert not core_idle(window=0.01, stat=str(garbled))


class Made:
    def __init__(self, item: str) -> None:
        self.item, self.discarded = item, False

    def discard(self) -> None:
        self.discarded = True


def test_nothing_is_prepared_while_no_core_is_idle() -> None:
    looked, prepared = threading.Semaphore(0), []

    def busy() -> bool:
        looked.release()
        return False

    ahead: Prestart[str, Made] = Prestart(1, lambda item: prepared.append(item) or Made(item), idle=busy)
    ahead.begin()
    ahead.upcoming(["next"])
    for _ in range(3):
        assert looked.acquire(timeout=30), "the probe was not asked"
    assert ahead.take("next") is None
    ahead.close()
    assert prepared == []


def test_nothing_is_prepared_while_a_worker_is_free_or_no_task_waits() -> None:
    looked = threading.Event()

    def idle() -> bool:
        looked.set()
        return True

    ahead: Prestart[str, Made] = Prestart(2, Made, idle=idle)
    ahead.upcoming(["next"])
    ahead.begin()  # one of two workers busy: the task would start at once, not be prepared
    assert not looked.wait(0.5)
    ahead.begin()
    ahead.upcoming([])
    assert not looked.wait(0.5)
    ahead.close()


def wait_for(condition: Any) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, "not prepared in 30 s"
        time.sleep(0.01)


def test_prepared_items_go_to_their_workers_at_most_ahead_at_a_time_and_the_rest_is_discarded() -> None:
    ahead: Prestart[str, Made] = Prestart(2, Made, idle=lambda: True)
    assert ahead.ahead == 2  # one per worker
    ahead.begin()
    ahead.begin()
    ahead.upcoming(["a", "b", "c"])
    wait_for(lambda: len(ahead._ready) == 2)
    assert [item for item, _ in ahead._ready] == ["a", "b"]  # in order, and no more than two
    assert ahead.take("c") is None  # not prepared: it starts as it is
    ahead.end()  # a worker frees, and begins a
    ahead.begin()
    made = ahead.take("a")
    assert made is not None and made.item == "a" and not made.discarded
    ahead.upcoming(["b", "d"])
    wait_for(lambda: len(ahead._ready) == 2)  # a was taken: room for d
    left = [ready for _, ready in ahead._ready]
    assert [m.item for m in left] == ["b", "d"]
    ahead.close()  # the run stops: b and d are never taken
    assert all(m.discarded for m in left) and ahead.take("b") is None and not made.discarded


def test_an_item_whose_preparation_failed_is_not_tried_again() -> None:
    tried: list[str] = []

    def prepare(item: str) -> Made:
        tried.append(item)
        if item == "a":
            raise OSError("no room for the sandboxes")
        return Made(item)

    ahead: Prestart[str, Made] = Prestart(1, prepare, idle=lambda: True, ahead=2)
    ahead.begin()
    ahead.upcoming(["a", "b"])
    wait_for(lambda: len(ahead._ready) == 1)
    assert ahead.take("a") is None  # its worker starts it as it is
    made = ahead.take("b")
    assert made is not None and made.item == "b"
    ahead.close()
    assert tried == ["a", "b"]


# -- real runs -------------------------------------------------------------------------------------
@pytest.fixture
def prepares(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Every core counts as idle; counts the tasks whose environment was prepared ahead."""
    counts: Counter[str] = Counter()
    original = Environment.prepare

    def prepare(self: Environment, task: Task) -> None:
        counts[task.task_id] += 1
        original(self, task)

    monkeypatch.setattr(prestart, "core_idle", lambda: True)
    monkeypatch.setattr(Environment, "prepare", prepare)
    return counts


def what_counts(result: Any, run_dir: Path) -> tuple[Any, ...]:
    """What a task's result and steps say, but git's transfer rates (``9.76 MiB/s``), which vary run to run."""
    steps = json.loads((run_dir / result.trajectory).read_text())["steps"]
    for step in steps:
        step["observation"] = re.sub(r"[\d.]+ [KMG]?i?B/s", "RATE", step["observation"])
    return (
        result.status,
        result.stop_reason,
        result.metrics,
        result.submission,
        result.n_steps,
        [(s["action"], s["outcome"], s["observation"], s["exit_code"]) for s in steps],
    )


@pytest.mark.slow
def test_results_with_tasks_prepared_ahead_are_those_without(tmp_path: Path, prepares: Counter[str]) -> None:
    off = run(config(tmp_path, task_ids=FOUR, workers=2, prestart="off", out=tmp_path / "off"), progress=False)
    assert not prepares
    on = run(config(tmp_path, task_ids=FOUR, workers=2, out=tmp_path / "on"), progress=False)
    assert sum(prepares.values()) >= 1, "no task was prepared ahead"
    assert {r.task_id: what_counts(r, tmp_path / "on") for r in on.results} == {
        r.task_id: what_counts(r, tmp_path / "off") for r in off.results
    }
    assert all(r.status == "completed" and r.metrics.output_match == 1.0 for r in on.results)
    assert not list((tmp_path / "sandboxes").iterdir()), "a sandbox was left behind"


class LateGold(GoldAgent):
    """The gold agent, after a pause before its episode begins (as an agent setting itself up): its worker is
    busy for that long, while the next task's environment is prepared and waits."""

    name = "late-gold"
    pause = 4.0

    def __init__(self, arg: str | None = None, options: Any = None) -> None:
        super().__init__(arg, options)
        time.sleep(self.pause)


@pytest.fixture
def late_gold() -> Iterator[None]:
    AGENTS.register("late-gold", "tests.runner.test_prestart:LateGold")
    yield
    AGENTS.unregister("late-gold")


def quick_tasks(n: int) -> list[Task]:
    return [
        make_task(f"quick-{i}", answer=i, solution=[f"x = {i}", {"type": "submit", "content": i}]) for i in range(n)
    ]


def test_a_prepared_sandbox_waits_past_the_wall_time_limit_and_its_task_still_runs(
    tmp_path: Path, prepares: Counter[str], late_gold: None
) -> None:
    # One worker: quick-1 is prepared while quick-0's agent pauses, then waits for it (4 s, and 4 s more for its
    # own agent) past a wall-time limit of 5 s, which its episode alone does not reach.
    settings = config(tmp_path, agent="late-gold", workers=1, sandbox={"wall_time_limit": 5})
    outcome = run(settings, tasks=quick_tasks(2), progress=False)
    assert prepares["quick-1"] == 1
    for result in outcome.results:
        assert (result.status, result.stop_reason, result.metrics.output_match) == ("completed", "submitted", 1.0)
    assert not list((tmp_path / "sandboxes").iterdir())


def test_the_wall_clock_of_a_prepared_environment_starts_at_reset(tmp_path: Path) -> None:
    env = Environment(EnvConfig(sandbox=SandboxConfig(root=tmp_path, wall_time_limit=2)))
    task = make_task("held", pre_execute_cells=[{"type": "execute", "content": "y = 5"}])
    env.prepare(task)
    with pytest.raises(EnvironmentClosedError):
        env.trajectory  # noqa: B018 (no episode yet: nothing was run, nothing recorded)
    time.sleep(2.5)
    before, reset_at = time.monotonic(), utcnow()
    env.reset(task)
    try:
        left = env.budget_left().wall_seconds
        assert left is not None and left > 2 - (time.monotonic() - before) - 0.01
        trajectory = env.trajectory
        assert trajectory.started_at >= reset_at
        assert [s.pre_executed for s in trajectory.steps] == [True]  # run at reset, not ahead
        assert trajectory.steps[0].start_time >= reset_at
        step = env.step({"type": "execute", "content": "print(6 * 7 + y - 5)"})
        assert (step.outcome, step.observation.strip()) == ("ok", "42")
        assert not env._sandbox.ended
    finally:
        env.close()
    assert not list(tmp_path.iterdir())


def test_a_stopped_run_leaves_nothing_of_the_task_it_prepared(
    tmp_path: Path, prepares: Counter[str], late_gold: None
) -> None:
    class StopAtFirstResult:
        def begin(self, total: int, finished: list[Any]) -> None: ...
        def task_started(self, task: Task) -> None: ...
        def task_retried(self, result: Any) -> None: ...

        def task_finished(self, result: Any) -> None:
            raise KeyboardInterrupt  # as Ctrl-C: quick-2 was prepared while quick-0 and quick-1 ran

    settings = config(tmp_path, agent="late-gold", workers=2, order="given")  # quick-2 comes third
    with pytest.raises(KeyboardInterrupt):
        run(settings, tasks=quick_tasks(4), reporter=StopAtFirstResult())
    assert prepares["quick-2"] == 1
    assert not (tmp_path / "sandboxes").exists() or not list((tmp_path / "sandboxes").iterdir())
    assert not processes_with_home_under(tmp_path)
    assert not (tmp_path / "run" / "tasks" / "quick-2").exists()


def test_a_failure_to_start_ahead_is_the_tasks_failure_to_start_retried_as_one(
    tmp_path: Path, prepares: Counter[str], late_gold: None, flaky: type[FlakySandbox]
) -> None:
    flaky.failures.update({"quick-1": 1})
    settings = config(tmp_path, agent="late-gold", workers=1, sandbox={"backend": "flaky"})
    outcome = run(settings, tasks=quick_tasks(2), progress=False)
    assert prepares["quick-1"] >= 1  # the failed start was the one ahead
    assert flaky.starts["quick-1"] == 2  # no second start for the same attempt
    failed = {r.task_id: r for r in outcome.results}["quick-1"]
    assert (failed.status, failed.attempts, failed.metrics.output_match) == ("completed", 2, 1.0)
    assert failed.retry_errors == ["SandboxError: injected failure: the sandbox of quick-1 would not start"]


def test_prestart_off_starts_nothing_ahead_and_docker_may(tmp_path: Path) -> None:
    """Docker's container counts its lifetime from its task's start (its guard held until then), so it may be
    started ahead as the host backends' sandboxes are."""
    from super_bench.runner.executors import EpisodeSpec, LocalExecutor

    settings = config(tmp_path, prestart="off")
    spec = EpisodeSpec("gold", settings.agent_options(), settings.env, settings.mode, tmp_path)
    with LocalExecutor(spec, settings) as executor:
        assert executor._prestart is None
    for settings in (config(tmp_path), config(tmp_path, sandbox={"backend": "docker"})):
        spec = EpisodeSpec("gold", settings.agent_options(), settings.env, settings.mode, tmp_path)
        with LocalExecutor(spec, settings) as executor:
            assert executor._prestart is not None


def test_a_prepared_environment_holds_its_room_on_the_machine_until_discarded(tmp_path: Path) -> None:
    from super_bench.runner.admission import ADMISSION
    from super_bench.runner.episode import prepare_episode

    env = EnvConfig(sandbox=SandboxConfig(root=tmp_path / "sandboxes", backend="local"))
    before = len(ADMISSION._running)
    prepared = prepare_episode(make_task("held"), env, tmp_path / "task")
    assert prepared is not None
    try:
        assert len(ADMISSION._running) == before + 1
        assert prepared.slot.usage is not None  # what the task uses of it is counted, as a running one's
        assert list((tmp_path / "sandboxes").iterdir()), "no sandbox was started"
    finally:
        prepared.discard()
    assert len(ADMISSION._running) == before
    assert not list((tmp_path / "sandboxes").iterdir())
    assert not (tmp_path / "task").exists()  # the step log is opened only once the episode begins
