"""The longest tasks first: task durations remembered across runs, and the order they give a run with workers."""

from __future__ import annotations

import fcntl
import json
import logging
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.support.helpers import make_task

from super_bench import EnvConfig, RunConfig, SandboxConfig, run
from super_bench.runner import durations as durations_module
from super_bench.runner.durations import Durations, task_key
from super_bench.runner.executors import WorkItem
from super_bench.runner.results import TaskResult
from super_bench.tasks.model import Task

FOUR = ["tinyreg", "tinyreg-lr", "spkmeans-news", "kneser-wikitext"]


def finished(
    task_id: str, wall: float, *, status: str = "completed", waited: float = 0.0, epoch: int = 1
) -> TaskResult:
    return TaskResult(task_id=task_id, task_set="expert", epoch=epoch, status=status, wall_time=wall, waited=waited)  # type: ignore[arg-type]


def tasks(*ids: str) -> dict[str, Task]:
    return {task_id: make_task(task_id) for task_id in ids}


def order(durations: Durations, known: dict[str, Task], ids: list[str]) -> list[str]:
    return [item.task.task_id for item in durations.order([WorkItem(known[i]) for i in ids], 2)]


def test_untimed_tasks_go_first_in_the_order_given_then_the_longest(tmp_path: Path) -> None:
    known = tasks("a", "b", "c", "d", "e")
    durations = Durations("gold", tmp_path / "durations.json")
    durations.learn(known, [finished("a", 1.0), finished("c", 5.0), finished("e", 3.0)])
    assert order(durations, known, ["a", "b", "c", "d", "e"]) == ["b", "d", "c", "e", "a"]
    assert durations.estimate(known["c"]) == 5.0 and durations.estimate(known["b"]) is None


def test_what_counts_is_the_wall_time_less_the_wait_for_room_and_the_longest_epoch(tmp_path: Path) -> None:
    known = tasks("a", "b", "c")
    durations = Durations("gold", tmp_path / "durations.json")
    durations.learn(
        known,
        [
            finished("a", 10.0, waited=8.0),
            finished("b", 1.0, epoch=1),
            finished("b", 4.0, epoch=2),
            finished("b", 2.0, epoch=3),
            finished("c", 100.0, status="infra_error"),  # the infrastructure's failure says nothing of the task
            finished("z", 50.0),  # not a task of this run
        ],
    )
    assert durations.estimate(known["a"]) == 2.0
    assert durations.estimate(known["b"]) == 4.0
    assert durations.estimate(known["c"]) is None


def test_times_outlive_the_run_per_agent_and_another_agents_mean_stands_in(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "durations.json"
    known = tasks("a", "b")
    gold = Durations("gold", path)
    gold.learn(known, [finished("a", 2.0), finished("b", 6.0)])
    gold.save()
    react = Durations("react openai/gpt-4o", path)
    react.learn(known, [finished("a", 40.0)])
    react.save()
    later = Durations("gold", path)
    assert later.estimate(known["a"]) == 2.0 and later.estimate(known["b"]) == 6.0
    other = Durations("swe-agent openai/gpt-4o", path)
    assert other.estimate(known["a"]) == pytest.approx(21.0)  # the mean of gold's 2 s and react's 40 s
    assert other.estimate(known["b"]) == 6.0
    # Two runs that saved at once both keep their entries: each save reads the file again under its lock.
    assert set(json.loads(path.read_text())["tasks"][task_key(known["a"])]) == {"gold", "react openai/gpt-4o"}


def test_a_task_is_the_same_task_wherever_it_was_loaded_from_and_another_when_it_asks_otherwise() -> None:
    assert task_key(make_task("a", "train it")) == task_key(make_task("a", "train it"))
    assert task_key(make_task("a", "train it")) != task_key(make_task("a", "train it twice"))
    assert task_key(make_task("a", "train it")) != task_key(make_task("a", "train it", task_set="masked"))


def test_the_file_keeps_the_newest_tasks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(durations_module, "KEEP", 3)
    path = tmp_path / "durations.json"
    for i in range(5):
        known = tasks(f"t{i}")
        durations = Durations("gold", path)
        durations.learn(known, [finished(f"t{i}", float(i))])
        durations.save()
    kept = Durations("gold", path)
    assert [kept.estimate(make_task(f"t{i}")) for i in range(5)] == [None, None, 2.0, 3.0, 4.0]


@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_file_gives_the_order_given_or_estimates_never_an_error(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "durations.json"
    path.write_bytes(data)
    known = tasks("a", "b", "c")
    durations = Durations("gold", path)
    estimates = [durations.estimate(t) for t in known.values()]
    assert all(e is None or e >= 0 for e in estimates)
    assert sorted(order(durations, known, ["a", "b", "c"])) == ["a", "b", "c"]
    durations.learn(known, [finished("a", 1.5)])
    durations.save()
    assert Durations("gold", path).estimate(known["a"]) == 1.5


@pytest.mark.parametrize(
    "content",
    [
        {"version": 1, "tasks": {"k": {"gold": {"seconds": -1, "at": 0}}}},
        {"version": 1, "tasks": {"k": {"gold": {"seconds": "NaN", "at": 0}}}},
        {"version": 1, "tasks": ["not", "a", "mapping"]},
        {"version": 99, "tasks": {}},
        ["nothing"],
    ],
)
def test_a_malformed_file_is_named_and_ignored(tmp_path: Path, caplog: pytest.LogCaptureFixture, content: Any) -> None:
    path = tmp_path / "durations.json"
    path.write_text(json.dumps(content))
    known = tasks("a")
    with caplog.at_level(logging.WARNING):
        assert Durations("gold", path).estimate(known["a"]) is None
    if content != {"version": 99, "tasks": {}}:  # a later version's file is no error, only unknown here
        assert str(path) in caplog.text


def test_a_cache_that_cannot_be_written_warns_and_loses_nothing_else(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "a-file"  # where the cache directory should be, a file: no one can write there, root neither
    blocked.write_text("")
    durations = Durations("gold", blocked / "durations.json")
    durations.learn(tasks("a"), [finished("a", 1.0)])
    with caplog.at_level(logging.WARNING):
        durations.save()
    assert "could not record the tasks' durations" in caplog.text
    assert blocked.read_text() == ""


def test_a_lock_held_too_long_is_waited_for_a_bounded_time_then_the_run_goes_without(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process that holds the lock and is stopped (not dead: death releases it) never keeps a run from
    ending; a save after it lets go records as ever."""
    monkeypatch.setattr(durations_module, "_LOCK_WAIT", 0.3)
    path = tmp_path / "durations.json"
    durations = Durations("gold", path)
    durations.learn(tasks("a"), [finished("a", 1.0)])
    holder = os.open(path.with_name("durations.json.lock"), os.O_RDWR | os.O_CREAT)  # another open file: another holder
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        with caplog.at_level(logging.WARNING):
            durations.save()
        assert "stayed locked by another process for 0.3 s" in caplog.text and not path.exists()
    finally:
        os.close(holder)
    durations.save()
    assert Durations("gold", path).estimate(make_task("a")) == 1.0


def test_a_link_planted_as_the_lock_file_is_not_followed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "durations.json"
    victim = tmp_path / "victim"
    path.with_name("durations.json.lock").symlink_to(victim)
    durations = Durations("gold", path)
    durations.learn(tasks("a"), [finished("a", 1.0)])
    with caplog.at_level(logging.WARNING):
        durations.save()
    assert "could not record the tasks' durations" in caplog.text
    assert not victim.exists() and not path.exists()


class StartOrder:
    """A reporter that keeps the order the runner starts tasks in."""

    def __init__(self) -> None:
        self.started: list[str] = []

    def begin(self, total: int, finished: list[TaskResult]) -> None:
        pass

    def task_started(self, task: Task) -> None:
        self.started.append(task.task_id)

    def task_retried(self, result: TaskResult) -> None:
        pass

    def task_finished(self, result: TaskResult) -> None:
        pass


@pytest.mark.slow
def test_a_run_with_workers_starts_the_longest_first_and_records_every_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "durations.json"
    monkeypatch.setattr(durations_module, "default_path", lambda: path)
    from super_bench import load_tasks

    demo = {t.task_id: t for t in load_tasks("demo", "expert", task_ids=FOUR)}
    earlier = Durations("gold", path)
    # The first task given is said to be the shortest, the last the longest; spkmeans-news was never timed.
    earlier.learn(demo, [finished("tinyreg", 1.0), finished("tinyreg-lr", 2.0), finished("kneser-wikitext", 9.0)])
    earlier.save()

    def started(**settings: Any) -> list[str]:
        reporter = StartOrder()
        sandbox = SandboxConfig(root=tmp_path / "sandboxes")
        config = RunConfig(env=EnvConfig(cell_timeout=60, sandbox=sandbox), task_ids=FOUR, **settings)
        outcome = run(config, reporter=reporter)
        assert all(r.status == "completed" and r.metrics.output_match == 1.0 for r in outcome.results)
        assert [r.task_id for r in outcome.results] == FOUR  # results keep the task set's order
        return reporter.started

    assert started(workers=2, out=tmp_path / "two") == ["spkmeans-news", "kneser-wikitext", "tinyreg-lr", "tinyreg"]
    assert started(workers=2, order="given", out=tmp_path / "given") == FOUR
    assert started(workers=1, out=tmp_path / "one") == FOUR  # one worker: nothing to share out
    timed = Durations("gold", path)
    assert all(timed.estimate(task) is not None for task in demo.values())
    assert timed.estimate(demo["kneser-wikitext"]) != 9.0  # the runs' own times replaced the planted ones
