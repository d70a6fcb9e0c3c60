"""Reference mode, one rule at a time: each expected value follows from the rule as docs/scoring.md states
it, beside what corrected mode does with the same trajectory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.support.helpers import cli, make_task, step, trajectory
from tests.support.trajectory_notebooks import NbStep, write_notebook

from super_bench import Action, load_tasks, score_answer, score_trajectory
from super_bench.runner.importer import import_trajectories
from super_bench.scoring.cleaning import reference_clean

BAR = " 45% [=====>      ] 1064960 / 104223768\n"


# -- the reference agent's cleaning ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "cleaned"),
    [
        # 1. carriage returns become newlines
        ("a\r\nb\rc", "a\nb\nc"),
        # 2. a progress count (colon, one or two digits, %, (a/b)) goes with its line and newline ...
        ("Resolving deltas:  99% (6865/6929)\ndone\n", "done\n"),
        ("a: b: 5% (1/2), x\nkept\n", "kept\n"),  # ... whichever colon it follows
        ("Counting objects:\n\n  7% (1/14)\nrest", "rest"),  # ... across blank lines
        ("Receiving objects: 100% (10/10), done.\n", "Receiving objects: 100% (10/10), done.\n"),  # three digits
        ("x: 5% (1/2)", "x: 5% (1/2)"),  # a last line with no newline stays
        # 3. a line with MB/s is emptied, its newline kept
        ("pip\n 12.3 MB/s eta 0:00:01\nok", "pip\n\nok"),
        # 4. colour codes go, other escape codes stay
        ("\x1b[1;31mred\x1b[0m \x1b[K", "red \x1b[K"),
        # 5. a progress bar goes from the whitespace before it, joining the previous line to the next
        (f"saved{BAR}next\n", "savednext\n"),
        (f"saved\n\n{BAR}next\n", "savednext\n"),
        ("50% [==] no count\n", "50% [==] no count\n"),  # no a / b after the ]
        ("x 5% [=] 3 /\n\nnext", "xnext"),  # no digits after the /: up to the last newline of its whitespace
        # 6. noise lines go with their newline
        ("gcc -O2 -c x.c\nbuilt\n", "built\n"),
        ("12:00 - INFO - allennlp.common.params - lr = 0.1\nok\n", "ok\n"),
        ("INFO - allennlpXcommon_params - any char for the dots\nok\n", "ok\n"),
        ("INFO - allennlp.nn.initializers - init\nok\n", "ok\n"),
        ("  (0): Linear(in_features=8, out_features=2)\n  (1): LayerNorm((8,))\n  Dropout(p=0.1)\nok\n", "ok\n"),
        ("from allennlp.common.util import x\nok\n", "ok\n"),
        ("Downloading https://host/model.bin  45%|####\nok\n", "ok\n"),
        ("Downloading model.bin 45%\nok\n", "Downloading model.bin 45%\nok\n"),  # no http between
        ("built\ngcc", "built\ngcc"),  # a last line with no newline stays
    ],
)
def test_the_reference_cleaning_rules(raw: str, cleaned: str) -> None:
    assert reference_clean(raw) == cleaned


def test_cleaning_what_is_clean_changes_nothing() -> None:
    text = "Epoch 1/3: loss 0.5\naccuracy 81%\n[done]\n"
    assert reference_clean(text) == text == reference_clean(reference_clean(text))


# -- landmarks on the cleaned observation ----------------------------------------------------------
@pytest.mark.parametrize(
    ("output", "landmark", "corrected", "reference"),
    [
        ("Resolving deltas:  99% (6865/6929)\n", "Resolving deltas", 1.0, 0.0),  # on a removed line
        ("Downloaded 12.0 MB/s\n", "Downloaded", 1.0, 0.0),
        ("gcc -O2 -c kernel.c\n", r"gcc -O2", 1.0, 0.0),
        (f"x{BAR}", "1064960", 1.0, 0.0),
        ("  (0): LayerNorm((8,))\n", "LayerNorm", 1.0, 0.0),
        ("loss: \x1b[1m0.5\x1b[0m\n", "loss: 0.5", 0.0, 1.0),  # found only once the colour codes are gone
        ("epoch 1\repoch 2\n", "epoch 1 epoch 2", 0.0, 1.0),  # \r becomes a newline, then a space
    ],
)
def test_landmarks_are_matched_on_the_cleaned_observation(
    output: str, landmark: str, corrected: float, reference: float
) -> None:
    task = make_task(landmarks=[landmark])
    run = trajectory(step(0, Action.execute("!run"), "(shown to the model)", raw=output))
    assert score_trajectory(run, task)[0].landmarks == corrected
    assert score_trajectory(run, task, "reference")[0].landmarks == reference


# -- submitted and output match --------------------------------------------------------------------
def submitting(answer: Any) -> Any:
    return trajectory(step(0, Action.submit(answer)), submission=answer, submitted=True)


def test_a_falsy_submission_is_no_submission_in_the_reference() -> None:
    task = make_task(answer="0.005")
    reference, _ = score_trajectory(submitting(0.0), task, "reference")
    assert (reference.output_match, reference.submitted) == (0.0, 0.0)
    corrected, _ = score_trajectory(submitting(0.0), task)
    assert (corrected.output_match, corrected.submitted) == (1.0, 1.0)  # |0.0 - 0.005| < 0.01
    assert score_answer(0.0, 0.005, mode="reference") == 0.0 and score_answer(0.0, 0.005) == 1.0
    truthy, _ = score_trajectory(submitting("0"), make_task(answer='"0"'), "reference")  # a string: truthy
    assert (truthy.submitted, truthy.output_match) == (1.0, 1.0)


@pytest.mark.parametrize("answer", [0, 0.0, "", [], {}, False])
def test_every_falsy_submission(answer: Any) -> None:
    task = make_task(answer=json.dumps({"a": 1.0}))
    assert score_trajectory(submitting(answer), task, "reference")[0].submitted == 0.0
    assert score_trajectory(submitting(answer), task)[0].submitted == 1.0


@pytest.mark.parametrize(("gold", "submission"), [("0", 0), ("0.0", 0.0), ('""', ""), ("[]", []), ("{}", {})])
def test_a_falsy_gold_answer_is_not_scored_in_the_reference(gold: str, submission: Any) -> None:
    task = make_task(answer=gold)
    assert score_trajectory(submitting(submission), task, "reference")[0].output_match is None
    assert score_trajectory(submitting(submission), task)[0].output_match == 1.0


def test_integer_and_string_keys() -> None:
    assert score_answer({22896: 9}, {"22896": 9}) == 1.0  # JSON has string keys only
    assert score_answer({"22896": 9}, {22896: 9}) == 1.0
    assert score_answer({22896: 9}, {"22896": 9}, mode="reference") == 0.0  # the reference compared keys as is


# -- script executed -------------------------------------------------------------------------------
ENTRYPOINT_CASES = [
    ("!cat train.py", "print('hi')", 12.0, 1.0),  # mentioning the file counts
    ("!python train.py", "Traceback (most recent call last):", 12.0, 0.0),
    ("!python train.py --x", "usage: train.py\ntrain.py: error: unknown --x", 12.0, 0.0),
    ("!python train.py", "done", 9.9, 0.0),  # under 10 s, whatever the task's own minimum
    ("!python train.py", "done", 10.0, 1.0),
    ("!python -m src.train", "done", 12.0, 1.0),  # the module's name with python -m
    ("!python -c 'import train'", "done", 12.0, 0.0),  # the name without python -m
]


def test_the_reference_entrypoint_rule() -> None:
    task = make_task(entrypoint="src/train.py", min_runtime=0.5)
    for cell, output, seconds, reference in ENTRYPOINT_CASES:
        run = trajectory(step(0, Action.execute(cell), output, seconds=seconds))
        assert score_trajectory(run, task, "reference")[0].entrypoint == reference, (cell, output, seconds)
    # The reference looked for the name in any action's content: in a submitted dict, among its keys.
    submit = trajectory(step(0, Action.submit({"train.py": 1.0}), seconds=12), submission={"train.py": 1.0})
    assert score_trajectory(submit, task, "reference")[0].entrypoint == 1.0
    assert score_trajectory(submit, task)[0].entrypoint == 0.0


def test_entrypoints_the_reference_did_not_grade() -> None:
    run = trajectory(step(0, Action.execute("!bash run.txt"), "done", seconds=20))
    assert score_trajectory(run, make_task(entrypoint="run.txt"), "reference")[0].entrypoint is None


# -- imported submissions keep their literal form --------------------------------------------------
def write_int_key_run(root: Path) -> tuple[Path, Path]:
    steps = [
        NbStep("execute", "!python count.py", "{22896: 9}"),
        NbStep("submit", "{22896: 9}"),
    ]
    folder = root / "published"
    write_notebook(folder / "counts" / "history.ipynb", "react-super", "Count the labels.", steps, {})
    gold = root / "gold.jsonl"
    gold.write_text(json.dumps({"task_id": "counts", "query": "Count.", "answer": json.dumps({"22896": 9})}) + "\n")
    return folder, gold


@pytest.mark.parametrize(("mode", "expected"), [("reference", 0.0), ("corrected", 1.0)])
def test_an_integer_key_submission_scores_the_same_after_re_scoring(tmp_path: Path, mode: str, expected: float) -> None:
    folder, gold = write_int_key_run(tmp_path)
    outcome = import_trajectories(folder, tmp_path / "run", tasks=load_tasks(gold), mode=mode)  # type: ignore[arg-type]
    assert outcome.run.results[0].metrics.output_match == expected
    assert outcome.run.results[0].submission == {"22896": 9}  # the row shows it as JSON
    result = cli("score", str(tmp_path / "run"), "--mode", mode, "--json")
    assert result.returncode == 0, result.stderr
    rescored = json.loads(
        (tmp_path.with_name(f"{tmp_path.name}-rescored") / f"run-{mode}" / "results.jsonl").read_text().splitlines()[0]
    )
    assert rescored["metrics"]["output_match"] == expected and rescored["mode"] == mode
