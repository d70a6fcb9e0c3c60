"""Every scoring rule, in both modes."""

from __future__ import annotations

import random
from typing import Any

import pytest
import regex
from tests.support.helpers import make_task, step, trajectory

from super_bench import Action, Step, score_answer, score_trajectory
from super_bench.scoring.entrypoint import cell_runs_entrypoint, entrypoint_runs
from super_bench.scoring.landmarks import landmark_steps, required_text
from super_bench.tasks.model import compile_landmark


# -- output match ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("submission", "gold", "corrected", "reference"),
    [
        (1, 1.0, 1.0, 1.0),  # ints compare as floats
        (0.505, 0.5, 1.0, 1.0),  # within 1e-2
        (0.52, 0.5, 0.0, 0.0),
        ("  yes ", "yes", 1.0, 1.0),  # strings are stripped
        ("0.5", 0.5, 1.0, 0.0),  # a numeric string is a number (the reference: a type mismatch)
        ("yes", 0.5, 0.0, 0.0),  # type mismatch
        (None, {"a": 1.0}, 0.0, 0.0),  # no submission
        ([1, 2, 3], [1, 2, 3], 1.0, 1.0),
        ([1, 9], [1, 2, 3, 4], 0.25, 0.5),  # lists: over the gold's length vs the submission's
        ([1, 2, 3, 4, 5], [1, 2], 0.4, 0.4),  # extra elements fail
        ({"a": 1.0, "b": 2.0}, {"a": 1.0, "b": 2.0}, 1.0, 1.0),
        ({"a": 1.0}, {"a": 1.0, "b": 2.0}, 0.5, 1.0),  # a partial dict: full marks in the reference
        ({"a": 1.0, "b": 2.0, "c": 3.0}, {"a": 1.0, "b": 2.0}, 1.0, 2 / 3),  # extra keys penalised there
        ({"a": {"x": 1.0, "y": 0.0}}, {"a": {"x": 1.0, "y": 5.0}}, 0.5, 0.5),  # nested dicts
        ({"a": {"x": 1.0}}, {"a": {"x": 1.0, "y": 5.0}}, 0.5, 0.5),  # the orientation flips back inside
        ([], [1.0], 0.0, 0.0),  # the reference raised on an empty submission list
        ({}, {"a": 1.0}, 0.0, 0.0),
        (True, True, 1.0, 0.0),  # the reference raised on booleans
        ({"a": None}, {"b": 1.0}, 0.0, 0.0),  # ... and on a null it could not compare
    ],
)
def test_output_match(submission: Any, gold: Any, corrected: float, reference: float) -> None:
    assert score_answer(submission, gold) == pytest.approx(corrected)
    assert score_answer(submission, gold, mode="reference") == pytest.approx(reference)


def test_unknown_mode() -> None:
    with pytest.raises(ValueError, match="unknown scoring mode"):
        score_answer(1, 1, mode="lenient")  # type: ignore[arg-type]


# -- landmarks -------------------------------------------------------------------------------------
def test_landmarks_search_every_step_with_newlines_as_spaces() -> None:
    steps = [
        step(0, Action.execute("setup"), "Loaded 10\nexamples", pre=True),
        step(1, Action.execute("train"), "epoch 1 done"),
    ]
    landmarks = [r"Loaded 10 examples", r"epoch \d done", "never"]
    assert landmark_steps(landmarks, steps) == [0, 1, None]
    metrics, details = score_trajectory(trajectory(*steps), make_task(answer=1, landmarks=landmarks))
    assert metrics.landmarks == pytest.approx(2 / 3) and details.landmark_steps == [0, 1, None]
    assert score_trajectory(trajectory(*steps), make_task(answer=1))[0].landmarks is None


def test_landmarks_are_graded_on_the_raw_output_not_the_shown_one() -> None:
    shown = "[... 9,000 characters omitted ...]\nfinal line"
    s = step(0, Action.execute("x"), shown, raw="epoch 1/3\r" + "x" * 9000 + "\nfinal line")
    assert score_trajectory(trajectory(s), make_task(landmarks=[r"epoch 1/3"]))[0].landmarks == 1.0


@pytest.mark.timeout(120)
def test_a_landmark_that_backtracks_catastrophically_cannot_hang_scoring(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from super_bench.scoring import landmarks

    monkeypatch.setattr(landmarks, "SEARCH_TIMEOUT", 0.5)
    steps = [step(0, Action.execute("x"), "a" * 80 + "!"), step(1, Action.execute("y"), "done " + "a" * 80)]
    task = make_task(landmarks=[r"(a|aa)+$", "done", r"(?:a|aa)+!"])
    metrics, details = score_trajectory(trajectory(*steps), task)
    # The first search gives up and counts as no match; the others are found as ever.
    assert details.landmark_steps == [None, 1, 0] and metrics.landmarks == pytest.approx(2 / 3)
    assert "landmark 0 ('(a|aa)+$') searched the output of step 0 for more than 0.5 s" in caplog.text


def test_landmarks_match_as_pythons_re_does() -> None:
    # The scoring engine runs in its re-compatible mode: no full case-folding (ß is not SS), no set operations.
    s = step(0, Action.execute("x"), "Straße bx loss:] 0.5")
    assert landmark_steps([r"(?i)STRASSE", r"[[a-z]--[aeiou]]+x", r"loss[[:]+\] \d"], [s]) == [None, None, 0]


@pytest.mark.parametrize(
    ("pattern", "required"),
    [
        (r"test MSE: \d+\.\d+", "test MSE: "),
        (r"\*\*\*\*\* eval metrics \*\*\*\*\*", "***** eval metrics *****"),
        (r"(a|b)foo bar", "foo bar"),
        (r"colou?r", "colo"),
        (r"a{2,3}bc", "bc"),
        (r"[abc]xyz[^]q]", "xyz"),
        # No text is sure: an alternative at the top, case-folding, verbose syntax, escapes with arguments,
        # classes that engines read differently.
        (r"accuracy|loss", ""),
        (r"(?i)accuracy", ""),
        (r"(?x)a b", ""),
        (r"\x41ccuracy", ""),
        (r"[[:alpha:]xyz]", ""),
    ],
)
def test_the_text_every_match_contains_is_read_from_the_pattern(pattern: str, required: str) -> None:
    assert required_text(compile_landmark(pattern)) == required


def test_outputs_passed_over_for_lacking_that_text_never_hide_a_match() -> None:
    pieces = ["a", "b", "ab", r"\.", ".", r"\d", r"\w+", "x?", "b*", "(a|b)", "(?:ab)+", "[ab]", "[^a]", "{2}", "|"]
    pieces += ["^", "$", r"\b", "(?=a)", "(?<!b)", " ", r"\ ", "[]a]", "(?i:a)", r"\s", "ba{1,2}"]
    rng = random.Random(0)
    for _ in range(3000):
        pattern = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 6)))
        try:
            compiled = compile_landmark(pattern)
        except regex.error:
            continue
        outputs = ["".join(rng.choice("ab. cAB1\n") for _ in range(rng.randint(0, 12))) for _ in range(3)]
        steps = [step(i, Action.execute("x"), out) for i, out in enumerate(outputs)]
        searched = next((i for i, out in enumerate(outputs) if compiled.search(out.replace("\n", " "))), None)
        assert landmark_steps([pattern], steps) == [searched], (pattern, outputs)


# -- submitted -------------------------------------------------------------------------------------
def test_submitted_needs_a_final_accepted_non_null_submit() -> None:
    task = make_task(answer='{"a": 1}')
    done = trajectory(step(0, {"type": "submit", "content": {"a": 1}}), submission={"a": 1}, submitted=True)
    metrics, _ = score_trajectory(done, task)
    assert metrics.submitted == 1.0 and metrics.output_match == 1.0
    null = trajectory(step(0, {"type": "submit", "content": None}), submission=None, submitted=True)
    assert score_trajectory(null, task)[0].submitted == 0.0
    none = trajectory(step(0, Action.execute("print(1)")))
    metrics, _ = score_trajectory(none, task)
    assert metrics.submitted == 0.0 and metrics.output_match == 0.0
    assert metrics.landmarks is None and metrics.entrypoint is None


def test_a_task_without_an_answer_has_nothing_to_submit_except_in_reference_mode() -> None:
    task = make_task(task_set="auto", entrypoint="train.py")
    none = trajectory(step(0, Action.execute("print(1)")))
    assert score_trajectory(none, task)[0].submitted is None  # not a 0 that a board would average
    assert score_trajectory(none, task, "reference")[0].submitted == 0.0  # as the paper's get_metrics counted it


# -- script executed -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("cell", "entrypoint", "runs"),
    [
        ("!python train.py --epochs 1", "train.py", True),
        ("!cat train.py", "train.py", False),
        ("!echo python train.py", "train.py", False),
        ("!cd src && python train.py", "src/train.py", True),
        ("!python other/train.py", "src/train.py", False),
        ("!CUDA_VISIBLE_DEVICES=0 nohup python -u src/train.py > log 2>&1", "src/train.py", True),
        ("!python -m pkg.train --x 1", "src/pkg/train.py", True),
        ('!python -c "import train"', "train.py", False),
        ("%%bash\ncd scripts\nbash run.sh", "scripts/run.sh", True),
        ("import subprocess\nsubprocess.run(['python', 'train.py'])", "train.py", True),
        ("import os\nos.system('python3 train.py')", "train.py", True),
        ("%run train.py", "train.py", True),
        ("!timeout 60 python train.py", "train.py", True),
        ("!timeout -s INT 60 python train.py", "train.py", True),
        ("!nice -n 10 python train.py", "train.py", True),
        ("!cd src;(python train.py)", "src/train.py", True),
        ("!true;(python train.py)&", "train.py", True),
        ("!./run.sh", "run.sh", True),
        ("!torchrun --nproc_per_node 1 train.py", "train.py", True),
        ("!python -m torch.distributed.launch --nproc_per_node=1 train.py", "train.py", True),
        ('!sh -c "python train.py"', "train.py", True),
        ("print('python train.py')", "train.py", False),
    ],
)
def test_which_cells_run_the_entrypoint(cell: str, entrypoint: str, runs: bool) -> None:
    assert cell_runs_entrypoint(cell, entrypoint) is runs


RUN = Action.execute("!python train.py")


@pytest.mark.parametrize(
    ("steps", "success", "reason"),
    [
        ([step(0, RUN, "done", seconds=12, exit_code=0)], True, "ran successfully"),
        ([step(0, RUN, "done", seconds=3, exit_code=0)], False, "less than the required"),
        ([step(0, RUN, "Traceback (most recent call last):\n  x", seconds=12)], False, "traceback"),
        ([step(0, RUN, "usage: train.py\ntrain.py: error: bad flag", seconds=12)], False, "usage error"),
        ([step(0, RUN, "", seconds=12, exit_code=1)], False, "status 1"),
        ([step(0, RUN, "", seconds=12, outcome="error")], False, "outcome 'error'"),
        ([step(0, RUN, "...", seconds=300, outcome="timeout")], False, "timeout is not a success"),
        (
            [
                step(0, RUN, "epoch 1", seconds=6, outcome="timeout"),
                step(1, {"type": "continue_wait"}, "epoch 2\ndone", start=6, seconds=6, exit_code=0),
            ],
            True,
            "ran successfully",
        ),
        (
            [
                step(0, RUN, "epoch 1", seconds=20, outcome="timeout"),
                step(1, {"type": "interrupt"}, "KeyboardInterrupt", start=20, seconds=1, outcome="interrupted"),
            ],
            False,
            "outcome 'interrupted'",
        ),
    ],
)
def test_script_executed(steps: list[Step], success: bool, reason: str) -> None:
    (run,) = entrypoint_runs("train.py", steps, min_runtime=10)
    assert run.success is success
    assert reason in run.reason
    metrics, details = score_trajectory(trajectory(*steps), make_task(entrypoint="train.py", task_set="auto"))
    assert metrics.entrypoint == float(success)
    assert details.entrypoint_runs[0]["reason"] == run.reason


def test_a_task_minimum_runtime_replaces_the_default() -> None:
    task = make_task(entrypoint="train.py", task_set="auto", min_runtime=1)
    metrics, _ = score_trajectory(trajectory(step(0, RUN, "ok", seconds=2, exit_code=0)), task)
    assert metrics.entrypoint == 1.0


def test_any_successful_run_counts() -> None:
    steps = [step(0, RUN, "Traceback (most recent call last)", seconds=12), step(1, RUN, "ok", seconds=12, start=12)]
    assert score_trajectory(trajectory(*steps), make_task(entrypoint="train.py", task_set="auto"))[0].entrypoint == 1


# -- corrected mode's rules (docs/scoring.md, "Corrected mode's rules"), each against its motivating case ---
@pytest.mark.parametrize(
    ("submission", "gold", "expected"),
    [
        # extra list elements fail: a list of every label cannot cover the gold's
        ([0.5, 0.1, 0.2, 0.3], [0.5], 0.25),
        ([1, 2, 3], [1, 2, 3], 1.0),
        # numeric strings compare as numbers
        ("0.5", 0.5, 1.0),
        (0.5, "0.5", 1.0),
        ({"acc": " 0.853 "}, {"acc": 0.85}, 1.0),
        ("1e-3", 0.001, 1.0),
        ("0.5.1", 0.5, 0.0),
        # NaN equals NaN, an infinity the same infinity
        (float("nan"), float("nan"), 1.0),
        ("NaN", float("nan"), 1.0),
        (float("inf"), float("inf"), 1.0),
        (float("-inf"), float("inf"), 0.0),
        (float("nan"), 0.0, 0.0),
        # strings compare stripped and case-insensitively
        ("Positive", "positive", 1.0),
        ("  NEUTRAL\n", "neutral", 1.0),
        ("positively", "positive", 0.0),
    ],
)
def test_corrected_rules(submission: Any, gold: Any, expected: float) -> None:
    assert score_answer(submission, gold) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("submission", "gold", "note"),
    [
        (85.2, 0.852, "a percentage given for a fraction: 85.2 against the gold 0.852"),
        ("85.2%", 0.852, 'a percentage given for a fraction: "85.2%" against the gold 0.852'),
        ({"acc": 0.852}, {"acc": 85.2}, "a fraction given for a percentage at acc: 0.852 against the gold 85.2"),
    ],
)
def test_a_percentage_for_a_fraction_is_a_format_mismatch_scored_0(submission: Any, gold: Any, note: str) -> None:
    from super_bench.scoring.answer import compare_answer

    assert compare_answer(submission, gold) == (0.0, [note])
    assert compare_answer(submission, gold, percentages=True) == (1.0, [note])  # where a task accepts either form
    assert compare_answer("85.2%", 85.2) == (1.0, [])  # a percentage against a percentage is the same number
    task = make_task(answer=gold)
    metrics, details = score_trajectory(
        trajectory(step(0, Action.submit(submission)), submission=submission, submitted=True), task
    )
    assert metrics.output_match == 0.0 and details.format_mismatches == [note]
    assert score_answer(submission, gold, "reference") == 0.0
