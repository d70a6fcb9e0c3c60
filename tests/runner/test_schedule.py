"""The order a run with several workers hands its tasks out in: longest first, balanced by the estimates."""

from __future__ import annotations

import random
import statistics
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.support.helpers import make_task

from super_bench.runner.durations import Durations
from super_bench.runner.executors import WorkItem
from super_bench.runner.results import TaskResult
from super_bench.runner.schedule import _assign, finish, plan

# The demo Expert set's nine tasks alone, as a 1-worker run timed them (seconds).
NINE = [0.87, 0.86, 0.58, 0.57, 0.50, 0.50, 0.41, 0.41, 0.37]


def longest(seconds: list[float]) -> list[int]:
    return sorted(range(len(seconds)), key=lambda i: -seconds[i])


def test_nine_similar_tasks_on_two_workers_end_with_the_best_split_not_longest_firsts() -> None:
    order = plan(NINE, 2)
    assert finish(longest(NINE), NINE, 2) == 2.72  # a 0.37 s task left to one worker while the other idles
    assert round(finish(order, NINE, 2), 2) == 2.55  # the sum over two is 2.535: no order ends before
    shares = _assign(order, NINE, 2)  # what two workers taking the queue as they free each get
    assert sorted(round(sum(NINE[i] for i in share), 2) for share in shares) == [2.52, 2.55]
    for share in shares:  # each worker still takes its own longest first
        assert [NINE[i] for i in share] == sorted((NINE[i] for i in share), reverse=True)
    assert order[:2] == [0, 1]  # and the run starts with the two longest


def test_one_worker_or_no_more_tasks_than_workers_is_longest_first() -> None:
    assert plan(NINE, 1) == longest(NINE)
    assert plan([1.0, 3.0, 2.0], 3) == [1, 2, 0]
    assert plan([], 4) == []


durations_lists = st.lists(st.floats(min_value=0, max_value=1e4, allow_nan=False), max_size=40)


@given(durations_lists, st.integers(min_value=1, max_value=8))
def test_the_plan_is_every_task_once_and_never_ends_after_longest_first(seconds: list[float], workers: int) -> None:
    order = plan(seconds, workers)
    assert sorted(order) == list(range(len(seconds)))
    end = finish(order, seconds, workers)
    assert end <= finish(longest(seconds), seconds, workers) + 1e-6
    assert end >= max([sum(seconds) / workers, *seconds], default=0.0) - 1e-6


@pytest.mark.parametrize("off", [0.1, 0.2, 0.4])
def test_times_that_differ_from_the_estimates_leave_the_plan_no_worse_than_longest_first(off: float) -> None:
    # A task's time varies from run to run. Over random sets (fixed seed), each run's times off their estimates by
    # up to ``off``: the plan is no worse than longest first on average, and seldom worse in a run; it is used
    # only where it gains enough by the estimates (``GAIN``). The nine demo tasks still gain.
    draw = random.Random(7)
    ratios = []
    for _ in range(400):
        tasks, workers = draw.randint(4, 40), draw.randint(2, 8)
        estimates = [draw.expovariate(1.0) for _ in range(tasks)]
        actual = [s * draw.uniform(1 - off, 1 + off) for s in estimates]
        ratios.append(finish(longest(estimates), actual, workers) / finish(plan(estimates, workers), actual, workers))
    assert statistics.mean(ratios) >= 1.0
    assert sum(r < 0.999 for r in ratios) <= 0.05 * len(ratios)
    assert plan(NINE, 2) != longest(NINE)


def test_a_run_of_timed_tasks_gets_the_plan_and_untimed_ones_still_go_first(tmp_path: Path) -> None:
    names = [f"t{i}" for i in range(len(NINE))]
    known = {name: make_task(name) for name in names}
    durations = Durations("gold", tmp_path / "durations.json")
    rows = [TaskResult(task_id=n, task_set="expert", status="completed", wall_time=s) for n, s in zip(names, NINE)]
    durations.learn(known, rows)
    given = names[::-1]  # ties keep the order given
    items = [WorkItem(known[n]) for n in given]
    planned = [given[i] for i in plan(NINE[::-1], 2)]
    assert [item.task.task_id for item in durations.order(items, 2)] == planned
    new = make_task("new")
    assert [item.task.task_id for item in durations.order([*items, WorkItem(new)], 2)] == ["new", *planned]
