"""A run's summary is counted as its rows arrive (``Tally``), never by keeping them, and comes out the same
whatever order the tasks finished in (docs/runner.md#resume)."""

from __future__ import annotations

import gc
import random
import weakref

from hypothesis import given, settings
from hypothesis import strategies as st

from super_bench.runner.results import Tally, TaskResult, summarize
from super_bench.runner.waste import Waste
from super_bench.scoring import Metrics
from super_bench.stats import ExactSum
from super_bench.trajectory import Usage

SCORES = st.sampled_from([None, 0.0, 0.1, 1 / 3, 0.5, 0.7, 1.0])


@st.composite
def rows(draw: st.DrawFn) -> list[TaskResult]:
    made = []
    for i in range(draw(st.integers(0, 12))):
        for epoch in range(1, draw(st.integers(1, 3)) + 1):
            made.append(
                TaskResult(
                    task_id=f"t{i}",
                    task_set="expert",
                    epoch=epoch,
                    status=draw(st.sampled_from(["completed", "completed", "agent_error", "infra_error"])),
                    stop_reason=draw(st.sampled_from([None, "submitted", "max_steps"])),
                    metrics=Metrics(output_match=draw(SCORES), landmarks=draw(SCORES), submitted=draw(SCORES)),
                    usage=Usage(model_calls=draw(st.integers(0, 9)), cost=draw(st.floats(0, 3))),
                    execution_time=draw(st.floats(0, 1e4)),
                    waited=draw(st.floats(0, 100)),
                    waste=draw(st.none() | st.builds(Waste, idle_sandbox=st.floats(0, 1e3))),
                    answer_provenance=draw(st.sampled_from([None, "observed", "given"])),
                )
            )
    return made


@settings(max_examples=60, deadline=None)
@given(made=rows(), seed=st.integers(0, 1000))
def test_the_summary_is_the_same_whatever_order_the_rows_come_in(made: list[TaskResult], seed: int) -> None:
    order = {f"t{i}": i for i in range(12)}
    shuffled = random.Random(seed).sample(made, len(made))
    first, second = Tally("corrected", order), Tally("corrected", order)
    for row in made:
        first.add(row)
    for row in shuffled:
        second.add(row)
    assert first.summary() == second.summary()
    assert summarize(made) == first.summary()  # rows in the run's order: the tasks' order is that order


def test_exact_sums_are_exact_and_keep_counts_whole() -> None:
    total = ExactSum()
    for value in [1e100, 0.1, -1e100, 0.2, 0.3]:
        total.add(value)
    assert total.value == 0.6  # a plain sum gives 0.6000000000000001 or 0.5 depending on the order
    counts = ExactSum()
    for value in [3, 4]:
        counts.add(value)
    assert counts.value == 7 and isinstance(counts.value, int)


def test_the_tally_keeps_no_row() -> None:
    tally = Tally()
    refs = []
    for i in range(200):
        row = TaskResult(task_id=f"t{i}", task_set="expert", status="completed", details={"big": "x" * 10_000})
        tally.add(row)
        refs.append(weakref.ref(row))
        del row
    gc.collect()
    assert all(ref() is None for ref in refs)
    assert tally.summary().n_tasks == 200
