"""Where a replay parts from its recording (``super_bench.divergence``): the first step that ended
differently, its kind, and whether a run that submitted nothing failed the same way."""

from __future__ import annotations

import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.support.helpers import REFERENCE_TRAJECTORIES

from super_bench.actions import Action
from super_bench.divergence import (
    SHOWN_CHARS,
    describe,
    divergence,
    ended_alike,
    failed_alike,
    first_difference,
    replayed_steps,
)
from super_bench.runner.importer import METRICS_FILE, import_trajectories, recorded_metrics
from super_bench.runner.rundir import RunDir
from super_bench.scoring import submission_of
from super_bench.trajectory import Step, Trajectory

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
    # A recorded failure the replay did not meet is classed by what the recording printed.
    broke = not changed and "No module" in steps[at].observation
    assert found.step == at and found.kind == ("environment" if broke else "agent")
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
    assert (found.step, found.kind) == (1, "agent")
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


# A recording read as it is: the paper's notebooks hold no exit status.
PIP_OFFLINE = (
    "WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) after connection "
    "broken by 'NewConnectionError(\"Failed to establish a new connection: [Errno 101] Network is unreachable\")'\n"
    "ERROR: Could not find a version that satisfies the requirement sympy==1.12 (from versions: none)\n"
    "ERROR: No matching distribution found for sympy==1.12"
)


def test_an_exit_status_the_recording_lacks_is_unknown_not_a_difference() -> None:
    recorded = [step(0, "Cloning into 'repo'..."), step(1, "README.md  train.py")]
    replay = [step(0, "Cloning into 'repo'...", exit_code=0), step(1, "README.md  train.py", exit_code=0)]
    assert first_difference(recorded, replay) is None
    assert divergence(recorded, replay).step is None
    # A shell step that failed quietly, where the recording cannot say whether it did, is not a difference
    # either; one that printed an error the recording does not have is.
    assert first_difference([step(0, "done")], [step(0, "done", exit_code=2)]) is None
    assert first_difference([step(0, "done")], [step(0, PIP_OFFLINE, exit_code=1)]) == 0


def test_the_first_error_the_recording_did_not_have_is_named_with_its_class() -> None:
    """The paper's UHSR run replayed without the network: its steps 0 and 1 end as recorded (no exit status
    recorded, 0 replayed); pip fails at step 2, then the import at step 3: step 2 is named, as network."""
    recorded = [
        step(0, "Cloning into 'UHSR'..."),
        step(1, "/content/UHSR"),
        step(2, "Collecting sympy==1.12\nSuccessfully installed sympy-1.12"),
        step(3, ""),
    ]
    replay = [
        step(0, "Cloning into 'UHSR'...", exit_code=0),
        step(1, "/content/UHSR"),
        step(2, "Collecting sympy==1.12\n" + PIP_OFFLINE, exit_code=1),
        step(3, MISSING, "error"),
    ]
    found = divergence(recorded, replay)
    assert (found.step, found.kind) == (2, "network")
    assert found.recorded == "ok: Successfully installed sympy-1.12"
    assert found.replayed is not None and found.replayed.startswith("ok, exit status 1: ERROR: No matching")
    # The same step failing on a missing package (no network trouble) is the environment's; an error of the
    # actions' own, the agent's.
    replay[2] = step(2, "ERROR: No matching distribution found for sympy==1.12", exit_code=1)
    assert (divergence(recorded, replay).step, divergence(recorded, replay).kind) == (2, "environment")
    # A step that timed out here, not there (a 5 GB install through a cold cache): the environment's too.
    replay[2] = step(2, "Collecting torch==2.1.2\n  Downloading torch-2.1.2 (670.2 MB)", "timeout")
    assert (divergence(recorded, replay).step, divergence(recorded, replay).kind) == (2, "environment")
    replay[2] = step(2, "Successfully installed sympy-1.12", exit_code=0)
    replay[3] = step(3, "Traceback (most recent call last):\nKeyError: 'lr'", "error")
    assert (divergence(recorded, replay).step, divergence(recorded, replay).kind) == (3, "agent")


def test_a_step_with_no_difference_before_the_error_is_passed_for_the_error() -> None:
    """An earlier step that only ended otherwise (a recorded failure the replay did not meet) is not named
    before a later error the recording did not have."""
    recorded = [step(0, "ZeroDivisionError: division by zero", "error"), step(1, "ok")]
    replay = [step(0, "0.5"), step(1, PIP_OFFLINE, exit_code=1)]
    assert divergence(recorded, replay).step == 1


@pytest.mark.parametrize(
    ("recorded", "replayed", "alike"),
    [
        ("max_tokens", "agent_stopped", True),  # the paper's runs that spent their tokens
        ("submitted", "agent_stopped", True),  # our own agent's empty submission, left out of the replay
        ("format_error", "agent_stopped", True),
        ("agent_stopped", "agent_stopped", True),
        ("max_wall_time", "max_wall_time", True),
        ("max_compute", "agent_stopped", True),  # a budget the imported run is replayed without
        ("max_wall_time", "agent_stopped", True),
        ("agent_stopped", "max_compute", False),
        ("agent_stopped", "max_steps", False),  # the replay stopped before its actions ran out
        ("max_steps", "agent_stopped", True),
        ("environment_broken", "agent_stopped", False),
    ],
)
def test_a_replay_ends_alike_when_its_actions_ran_out_where_the_recording_stopped(
    recorded: str, replayed: str, alike: bool
) -> None:
    assert ended_alike(recorded, replayed) is alike


def _as_replayed(step: Step) -> Step:
    """A recorded step of the paper's as a replay records it: shell commands with an exit status, a cell
    whose own code raised (a traceback, no shell command) with outcome ``error``."""
    shell = "!" in str(step.action.content)
    raised = step.outcome == "ok" and not shell and "Traceback (most recent call last)" in step.raw_output
    update: dict[str, object] = {"exit_code": (1 if "Traceback" in step.raw_output else 0) if shell else None}
    if raised:
        update["outcome"] = "error"
    return step.model_copy(update=update)


def test_every_published_run_that_submitted_nothing_fails_alike_with_an_exact_replay(tmp_path: Path) -> None:
    """Each of the paper's published runs with nothing submitted, replayed exactly (its shell steps now
    with exit statuses, the replay ending when its actions ran out), is judged reproduced; one whose replay
    meets an error the recording did not have is not."""
    if not REFERENCE_TRAJECTORIES.is_dir():
        pytest.skip(f"the paper's trajectories are not at {REFERENCE_TRAJECTORIES}")
    checked = 0
    for folder in sorted(p for p in REFERENCE_TRAJECTORIES.iterdir() if p.is_dir()):
        # Only the notebooks whose recorded metrics say nothing was submitted are imported (a run of the same
        # name, so that the importer reads it as the published one): the others are passed over below anyway.
        source = tmp_path / "published" / folder.name
        for task in sorted(p for p in folder.iterdir() if (p / METRICS_FILE).is_file()):
            if not recorded_metrics(task / METRICS_FILE)[0].submitted:
                shutil.copytree(task, source / task.name)
        out = tmp_path / folder.name
        import_trajectories(source, out)
        for result in RunDir(out).read_results():
            recording = Trajectory.load(out / str(result.trajectory))
            if submission_of(recording) is not None or recording.stop_reason == "submitted":
                continue
            recorded = replayed_steps(recording.steps)
            exact = [_as_replayed(s) for s in recorded]
            assert failed_alike(recorded, exact, (recording.stop_reason, "agent_stopped")), result.task_id
            assert divergence(recorded, exact).kind in ("nondeterminism", "answer_not_reproduced")
            if not recorded:
                continue
            broken = list(exact)
            new = "Traceback (most recent call last):\nReplayOnlyError: not in any recording"
            broken[0] = broken[0].model_copy(update={"observation": new, "outcome": "error", "output": None})
            assert not failed_alike(recorded, broken, (recording.stop_reason, "agent_stopped")), result.task_id
            assert divergence(recorded, broken).step == recorded[0].index
            checked += 1
    assert checked >= 26, checked


@given(runs, st.lists(st.sampled_from([0, 1, 2, 127]), min_size=6, max_size=6))
def test_an_exit_status_never_recorded_is_never_a_difference_by_itself(steps: list[Step], codes: list[int]) -> None:
    """Whatever status the replay's shell steps exit with, where the recording holds none and the replay's
    output is the recording's, the replay ended as recorded and failed alike."""
    recorded = [s.model_copy(update={"exit_code": None}) for s in steps]
    replay = [s.model_copy(update={"exit_code": code}) for s, code in zip(recorded, codes)]
    assert first_difference(recorded, replay) is None
    assert failed_alike(recorded, replay, ("max_tokens", "agent_stopped"))
    assert divergence(recorded, replay).kind in ("nondeterminism", "answer_not_reproduced")
