"""Where a replay parts from its recording (``super_bench.divergence``): the first step that ended
differently, its kind, and whether a run that submitted nothing failed the same way."""

from __future__ import annotations

from datetime import datetime, timezone

from hypothesis import given
from hypothesis import strategies as st

from super_bench.actions import Action
from super_bench.divergence import (
    SHOWN_CHARS,
    describe,
    divergence,
    failed_alike,
    first_difference,
    replayed_steps,
)
from super_bench.trajectory import Step

T = datetime(2026, 1, 1, tzinfo=timezone.utc)
MISSING = "Traceback (most recent call last):\nModuleNotFoundError: No module named 'faiss'"


def step(i: int, output: str = "", outcome: str = "ok", exit_code: int | None = None) -> Step:
    action = Action(type="execute", content=f"cell {i}")
    return Step(
        index=i, action=action, observation=output, outcome=outcome, exit_code=exit_code, start_time=T, end_time=T
    )  # type: ignore[arg-type]


endings = st.tuples(
    st.sampled_from(["ok", "error", "timeout", "interrupted"]),
    st.sampled_from(["", "done", "loss 0.5", "ValueError: bad", "KeyError: 'x'", MISSING]),
    st.sampled_from([None, 0, 1, 2]),
)
runs = st.lists(endings, min_size=1, max_size=6).map(lambda xs: [step(i, o, c, e) for i, (c, o, e) in enumerate(xs)])


@given(runs)
def test_a_replay_that_ends_every_step_as_recorded_has_no_differing_step(steps: list[Step]) -> None:
    assert first_difference(steps, list(steps)) is None
    assert failed_alike(steps, list(steps), ("agent_stopped", "agent_stopped"))
    assert divergence(steps, list(steps)).model_dump() == {
        "kind": "answer_not_reproduced",
        "step": None,
        "recorded": None,
        "replayed": None,
    }


@given(runs, st.data())
def test_the_first_step_that_ended_otherwise_is_named(steps: list[Step], data: st.DataObject) -> None:
    at = data.draw(st.integers(0, len(steps) - 1))
    replay = list(steps)
    changed = steps[at].outcome != "error"
    replay[at] = step(at, "OSError: disk", "error") if changed else step(at, "fine")
    assert first_difference(steps, replay) == at
    found = divergence(steps, replay)
    assert found.step == at and found.kind == "answer_not_reproduced"
    assert found.recorded == describe(steps[at]) and found.replayed == describe(replay[at])


@given(runs, st.data())
def test_an_import_that_fails_only_in_the_replay_is_the_environment(steps: list[Step], data: st.DataObject) -> None:
    recorded = [s for s in steps if "No module" not in s.observation] or [step(0)]
    recorded = [step(i, s.observation, s.outcome, s.exit_code) for i, s in enumerate(recorded)]
    at = data.draw(st.integers(0, len(recorded) - 1))
    replay = list(recorded)
    replay[at] = step(at, MISSING, "error")
    if recorded[at].outcome == "error" and "ModuleNotFoundError" in recorded[at].observation:
        return
    found = divergence(recorded, replay)
    assert found.kind == "environment" and found.step == at
    assert found.replayed == "error: ModuleNotFoundError: No module named 'faiss'"


def test_a_failed_pip_install_is_the_environment_and_its_exit_status_is_shown() -> None:
    recorded = [step(0, "Successfully installed tornado-6.1", exit_code=0)]
    replay = [step(0, "ERROR: No matching distribution found for tornado==6.1", exit_code=1)]
    found = divergence(recorded, replay)
    assert found.kind == "environment"
    assert found.replayed == "ok, exit status 1: ERROR: No matching distribution found for tornado==6.1"


@given(st.floats(0, 100, allow_nan=False), st.floats(0, 100, allow_nan=False))
def test_same_endings_with_other_numbers_is_nondeterminism(a: float, b: float) -> None:
    recorded = [step(0, "loading"), step(1, f"epoch 1\ntest MSE: {a}")]
    replay = [step(0, "loading"), step(1, f"epoch 1\ntest MSE: {b}")]
    found = divergence(recorded, replay)
    if str(a) == str(b):
        assert found.step is None and found.kind == "answer_not_reproduced"
    else:
        assert (found.kind, found.step) == ("nondeterminism", 1)
        assert (found.recorded, found.replayed) == (f"test MSE: {a}", f"test MSE: {b}")


def test_a_step_the_replay_never_reached_is_where_it_diverged() -> None:
    found = divergence([step(0), step(1, "done")], [step(0)], "max_wall_time")
    assert (found.step, found.kind) == (1, "answer_not_reproduced")
    assert found.replayed == "not run: the replay stopped before it (max_wall_time)"


@given(st.text(max_size=2000))
def test_texts_are_shortened(text: str) -> None:
    found = divergence([step(0, text)], [step(0, "KeyError: 'x'\n" + text, "error")])
    assert len(found.recorded or "") <= SHOWN_CHARS and len(found.replayed or "") <= SHOWN_CHARS


def test_a_failure_is_reproduced_by_the_same_stop_and_the_same_first_error() -> None:
    recorded = [step(0, "ok"), step(1, "ZeroDivisionError: division by zero", "error"), step(2, "1")]
    later = [step(0, "ok"), step(1, "ZeroDivisionError: division by zero", "error"), step(2, "2")]
    assert failed_alike(recorded, later, ("agent_stopped", "agent_stopped"))
    assert not failed_alike(recorded, later, ("agent_stopped", "max_steps"))
    other = [step(0, "ok"), step(1, "NameError: name 'x' is not defined", "error"), step(2, "1")]
    assert not failed_alike(recorded, other, ("agent_stopped", "agent_stopped"))


def test_submissions_and_pre_executed_cells_are_not_compared() -> None:
    given_cell = step(0).model_copy(update={"pre_executed": True})
    submit = step(2).model_copy(update={"action": Action(type="submit", content={"a": 1})})
    assert replayed_steps([given_cell, step(1), submit]) == [step(1)]
