"""Answer provenance: which step's output first showed each submitted value, by the documented rules, in
scoring online and offline alike, in result rows and the summary."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.support.helpers import step, trajectory
from tests.support.trajectory_notebooks import EXPERT_QUERY, NbStep, write_notebook

from super_bench.actions import Action
from super_bench.runner.importer import import_trajectories
from super_bench.runner.rescore import rescore
from super_bench.runner.results import TaskResult, summarize
from super_bench.runner.rundir import RunDir
from super_bench.scoring import score_trajectory
from super_bench.scoring.meters import LineMemo, not_evidence
from super_bench.scoring.provenance import MAX_TRACED_VALUES, trace_answer
from super_bench.scoring.shown import Number, _number_at, percents
from super_bench.scoring.texts import Text
from super_bench.tasks.model import Task
from super_bench.trajectory import Step, Trajectory

RUN = Action.execute("!python train.py")


def first_step(submission: Any, *outputs: str) -> list[int | None]:
    """For each value of ``submission``, the step (of cells printing ``outputs``) that first showed it."""
    steps = [step(i, RUN, text) for i, text in enumerate(outputs)]
    traced = trace_answer(submission, steps)
    assert traced is not None
    return [f.step for f in traced.fields]


@pytest.mark.parametrize(
    ("printed", "submitted", "observed"),
    [
        ("test MSE: 7.4031", 7.4031, True),
        ("  Downloading sklearn-0.0.post12.tar.gz (2.6 kB)", 0.0, False),  # a version, on a pip line
        ("version 0.0.post12", 0.0, False),
        ("Requirement already satisfied: tokenizers<0.20,>=0.19 in /usr/lib", 0.2, False),
        ("x.unsqueeze(0)\n{0: 'terrible'}\npack-reused 0", 0.0, False),  # a bare 0 does not show a float zero
        ("accuracy = 0.0", 0.0, True),
        ("x errors: 0", 0, True),  # an integer zero it does, on a line that names it
        ("test MSE: 7.40", 7.4031, False),  # printed with fewer decimals than submitted: the rest came from elsewhere
        ("acc 0.8523", 0.85, True),  # rounds to it
        ("acc 0.8523", 0.852, True),
        ("acc 0.8523", 0.86, False),  # within output match's 1e-2, but not what 0.8523 rounds to
        ("acc 0.8523", 0.9, False),  # rounds to it at one decimal, but 0.05 away
        ("acc 0.8951", 0.9, True),
        ("acc 0.8567", 0.85, True),  # truncated
        ("acc 0.8567", 0.86, True),  # rounded
        ("steps took 7.0", 7, True),  # ints printed as floats, and the other way round
        ("steps took 7", 7.0, True),
        ("steps took 7.004", 7, True),
        ("epochs 17 27 7.5", 7, False),
        ("accuracy: 85.23%", 0.8523, True),  # a percentage, by its % sign
        ("accuracy: 85 %", 0.85, True),
        ("accuracy: 85.23", 0.8523, False),  # a bare 85.23 is not a fraction
        ("accuracy: 85.23%", 85.23, True),
        ("tensor(8.5230e-01)", 0.85, True),  # scientific notation
        ("loss 1e-05", 1e-05, True),
        ("loss 1.00e-05", 0.00001, True),
        ("loss 0.00001", 1e-05, True),
        ("lr 1e-04", 1e-05, False),
        ("loss -0.5", -0.5, True),
        ("loss -0.5", 0.5, False),
        ("model resnet0.85", 0.85, False),  # glued to a name
        ("version 0.85.1", 0.85, False),  # part of a dotted version
        ("n_0.85", 0.85, False),
        ("took 0.85s", 0.85, True),  # a unit after it is fine
        ("rows: 22896.", 22896, True),
        ("rows: 22,896", 22896, False),  # thousands separators are not read
        ("loss 3e-05", 0.0, True),  # too small to show at one decimal
        ("x loss 3.5E-7", 0, True),
        ("lr 2e-05", 5, False),  # a power of ten is no number of its own
        ("epoch 05/10", 5, False),  # nor are digits after a leading zero
        ("[00:00<00:01]", 0, False),
        ("ppl 4.2500", 4.25, True),
        ("acc 0.995", 1.0, True),
        ("x acc 0.995", 1, True),
        ("acc 1.0049", 1.0, True),
        ("3e+20", 3e20, True),
        ("x found 0", 0, True),
        ("loss 0.003", 0.0, True),
        ("shuffle: True", True, True),
        ("shuffle: true", True, True),
        ("shuffle: Trueish", True, False),
        ("shuffle: False", True, False),
        ("label: positive", "positive", True),
        ("label: positively", "positive", False),
        ("label:  positive ", " positive ", True),  # strings compare stripped
        ("label: Positive", "positive", False),
    ],
)
def test_printed_numbers_and_text_that_support_a_submitted_value(printed: str, submitted: Any, observed: bool) -> None:
    assert first_step({"x": submitted}, "nothing here", printed) == [1 if observed else None]


def test_each_value_gets_the_first_step_that_shows_it_and_the_printed_text() -> None:
    steps = [
        step(0, Action.execute("!git clone repo"), "Cloning into 'repo'... 100% done"),
        step(1, RUN, "epoch 1: loss 0.3312 acc 0.71\nepoch 2: loss 0.2201 acc 0.7839"),
        step(2, RUN, "precision 0.72794\nrecall 0.7839"),
    ]
    traced = trace_answer({"precision": 0.7279, "recall": 0.7839, "f1": 0.7549}, steps)
    assert traced is not None and traced.status == "partly_observed"
    by_field = {f.field: f for f in traced.fields}
    assert (by_field["precision"].step, by_field["precision"].text) == (2, "0.72794")
    assert (by_field["recall"].step, by_field["recall"].text) == (1, "0.7839")
    recall = by_field["recall"]
    assert steps[1].raw_output[recall.offset : recall.offset + len("0.7839")] == "0.7839"  # type: ignore[operator]
    assert by_field["f1"].step is None


def test_nested_values_lists_and_bare_answers_are_traced_by_their_place() -> None:
    steps = [step(0, RUN, "scores [0.5, 0.25]\nbest: dev")]
    traced = trace_answer({"eval": {"scores": [0.5, 0.25, 0.125]}, "split": "dev", "note": None, "empty": " "}, steps)
    assert traced is not None
    assert [(f.field, f.step) for f in traced.fields] == [
        ("eval.scores[0]", 0),
        ("eval.scores[1]", 0),
        ("eval.scores[2]", None),
        ("split", 0),
    ]  # null and blank values hold nothing to look for
    bare = trace_answer(0.25, steps)
    assert bare is not None and [(f.field, f.step) for f in bare.fields] == [("", 0)]
    assert trace_answer(None, steps) is None
    assert trace_answer({}, steps) is not None and trace_answer({}, steps).status is None  # type: ignore[union-attr]


def test_only_the_agents_cells_count_not_harness_messages_or_given_cells() -> None:
    answer = {"test_mse": 7.4031}
    given = step(0, Action.execute("!python eval.py"), "Test MSE: 7.4031", pre=True)
    edit = step(1, Action(type="edit", content="notes.txt\n<<<BEFORE_EDIT>>>\n<<<AFTER_EDIT>>>\nx"), "7.4031")
    refused = step(2, Action.execute("x"), "[super-bench] 7.4031 refused", outcome="invalid")
    submitted = step(3, Action.submit(answer), "7.4031")
    traced = trace_answer(answer, [given, edit, refused, submitted])
    assert traced is not None and traced.status == "given"  # a label of its own: not the agent's output
    (field,) = traced.fields
    assert field.step is None and field.pre_executed_step == 0 and (field.offset, field.text) == (10, "7.4031")

    waited = step(4, Action(type="continue_wait"), "...\nTest MSE: 7.4031")
    traced = trace_answer(answer, [given, edit, refused, waited])
    assert traced is not None and traced.fields[0].step == 4 and traced.status == "observed"


def test_output_that_echoes_a_number_the_agents_code_spelled_out_does_not_count() -> None:
    answer = {"test_mse": 7.4031}
    echoed = [step(0, Action.execute('print({"test_mse": 7.4031})'), "{'test_mse': 7.4031}")]
    traced = trace_answer(answer, echoed)
    assert traced is not None and traced.status == "unobserved"
    assert traced.fields[0].typed_step == 0
    # Printed first by the run, then copied into code: observed where it was printed.
    copied = [step(0, RUN, "Test MSE: 7.4031"), step(1, Action.execute("mse = 7.4031\nprint(mse)"), "7.4031")]
    traced = trace_answer(answer, copied)
    assert traced is not None and (traced.fields[0].step, traced.fields[0].typed_step) == (0, None)
    # An edited file spelling it out, printed later.
    edit = Action(type="edit", content="out.txt\n<<<BEFORE_EDIT>>>\n0\n<<<AFTER_EDIT>>>\nmse 7.4031")
    traced = trace_answer(
        answer, [step(0, edit, "Edit was successful."), step(1, Action.execute("!cat out.txt"), "7.4031")]
    )
    assert traced is not None and traced.fields[0].typed_step == 0 and traced.status == "unobserved"
    # Integers in code are everywhere (limits, seeds, epochs): they do not count as spelling an answer out.
    counted = [step(0, Action.execute("!python train.py --epochs 5"), "trained 5 epochs")]
    traced = trace_answer({"epochs": 5}, counted)
    assert traced is not None and traced.status == "observed"


def test_the_first_step_wins_whatever_form_each_step_prints_the_value_in() -> None:
    # A later step prints it plainly; an earlier one in scientific notation, and one before that as a
    # percentage: the earliest counts, with what it printed.
    outputs = ["setup done", "accuracy: 85.23%", "acc 8.523e-01", "acc 0.8523"]
    traced = trace_answer({"acc": 0.85}, [step(i, RUN, text) for i, text in enumerate(outputs)])
    assert traced is not None and (traced.fields[0].step, traced.fields[0].text) == (1, "85.23%")
    # The same across many steps, so that several are searched at once, and past a pre-executed one.
    many = [step(i, RUN, f"loss {i}.5\n") for i in range(200)]
    many[3] = step(3, RUN, "acc 0.8523", pre=True)
    many[150] = step(150, RUN, "acc 8.523e-01")
    traced = trace_answer({"acc": 0.85}, many)
    assert traced is not None and traced.fields[0].step == 150 and traced.fields[0].offset == 4


def test_outputs_of_megabytes_are_searched_to_the_right_step_and_place() -> None:
    big = "loss 0.1234\n" * 150_000  # 1.8 MB: searched as a text of its own
    steps = [step(0, RUN, "start"), step(1, RUN, big), step(2, RUN, big + "acc 0.8523"), step(3, RUN, "acc 0.85")]
    traced = trace_answer({"acc": 0.85, "label": "pos"}, [*steps, step(4, RUN, "label: pos")])
    assert traced is not None
    assert [(f.step, f.offset) for f in traced.fields] == [(2, len(big) + 4), (4, 7)]


def test_text_is_not_found_across_two_steps_outputs() -> None:
    steps = [step(0, RUN, "best model: bert"), step(1, RUN, "base done")]
    traced = trace_answer({"model": "bert\nbase"}, steps)
    assert traced is not None and traced.status == "unobserved"
    traced = trace_answer({"model": "bert\nbase"}, [*steps, step(2, RUN, "picked bert\nbase")])
    assert traced is not None and (traced.fields[0].step, traced.fields[0].offset) == (2, 7)


def test_what_provenance_cannot_tell_a_number_read_from_a_file_or_computed_from_a_guess() -> None:
    # Documented limits: the output showed the value, whether or not the run computed it.
    read = [step(0, Action.execute("!cat notes.txt"), "| model | MSE |\n| ours | 7.4031 |")]
    assert trace_answer({"test_mse": 7.4031}, read).status == "observed"  # type: ignore[union-attr]
    guessed = [step(0, Action.execute("print(17 / 20)"), "0.85")]
    assert trace_answer({"acc": 0.85}, guessed).status == "observed"  # type: ignore[union-attr]


def test_a_long_list_fully_shown_is_observed_and_one_shown_in_part_is_not() -> None:
    values = [round(0.001 * i, 3) for i in range(MAX_TRACED_VALUES + 1000)]
    traced = trace_answer(values, [step(0, RUN, " ".join(map(str, values)))])
    assert traced is not None
    assert len(traced.fields) == MAX_TRACED_VALUES and traced.untraced == traced.untraced_shown == 1000
    assert traced.status == "observed"
    cut = trace_answer(values, [step(0, RUN, " ".join(map(str, values[:500])))])
    assert cut is not None and cut.untraced_shown == 500 - MAX_TRACED_VALUES and cut.status == "partly_observed"


def test_numbers_printed_by_the_million_are_searched_without_losing_the_answer() -> None:
    # Many near misses (numbers that share the answer's digits, glued numbers) before the one that counts.
    noise = "".join(f"x0.7279{i % 10} 10.72794 0.72{i % 10} v0.7279.{i} " for i in range(100_000))
    steps = [step(0, RUN, noise + "\nprecision: 0.72794\n" + noise)]
    traced = trace_answer({"precision": 0.7279}, steps)
    assert traced is not None and traced.fields[0].text == "0.72794"
    assert trace_answer({"precision": 0.7278}, [step(0, RUN, noise)]).status == "unobserved"  # type: ignore[union-attr]


def _every_number_read(value: float, text: str) -> tuple[int, str] | None:
    """The first number of ``text`` that supports ``value``, found the slow way: every digit of the text read
    as the start of a number, and every number before a ``%``."""
    finder = Number(value)
    first = None
    for i, char in enumerate(text):
        number = _number_at(text, i) if char.isdigit() else None
        if (
            number is not None
            and finder.supports(number[2])
            and not not_evidence(text, number[0], number[0] + len(number[1]))
            and not (isinstance(value, float) and value == 0 and not any(c in number[1] for c in ".eE"))
        ):
            first = (number[0], number[1])
            break
    for at, printed, percent in percents(Text([text])):
        if (first is None or at < first[0]) and finder.supports(percent):
            return at, printed
    return first


def _random_log(rng: random.Random, near: float) -> str:
    """Numbers printed every way a log prints them (fixed, scientific, percent, signed, glued to names), many
    of them close to ``near``, among words."""
    pieces = []
    for _ in range(rng.randint(1, 40)):
        x = near + rng.choice([0, 0, 1, -1]) * rng.choice([0.0, 1e-4, 1e-3, 5e-3, 9e-3, 1e-2, 0.1, 3.0]) * rng.random()
        form = rng.choice(["fixed", "fixed", "sci", "percent", "int", "word", "glued", "version"])
        if form == "fixed":
            piece = f"{x:.{rng.randint(0, 6)}f}"
        elif form == "sci":
            piece = f"{x:.{rng.randint(0, 5)}{rng.choice('eE')}}"
        elif form == "percent":
            piece = f"{x * 100:.{rng.randint(0, 3)}f}{rng.choice(['%', ' %'])}"
        elif form == "int":
            piece = str(round(x))
        elif form == "glued":
            piece = rng.choice(["v", "resnet", "x_", "."]) + f"{abs(x):.{rng.randint(0, 4)}f}"
        elif form == "version":
            piece = f"{abs(x):.2f}.{rng.randint(0, 9)}"
        else:
            piece = rng.choice(["loss", "acc", "epoch", "lr", "e", "-", "+", "it/s"])
        pieces.append(piece + rng.choice([" ", " ", "\n", ", ", "s ", ""]))
    return "".join(pieces)


def test_the_search_finds_the_first_supporting_number_as_reading_every_number_would() -> None:
    # The search looks only where a few literal beginnings are found; reading every number of the text must
    # give the same first number, whatever the forms, the near misses and the submitted decimals.
    rng = random.Random(7)
    for _ in range(3000):
        decimals = rng.randint(0, 5)
        value: float = round(rng.choice([rng.random(), rng.random() * 100, rng.random() * 1e-3, 0.0]), decimals)
        if decimals == 0 and rng.random() < 0.5:
            value = int(value)
        text = _random_log(rng, float(value))
        assert Number(value).find(Text([text])) == _every_number_read(value, text), (value, text)
    # And across the steps of a trajectory, whose outputs are searched joined: the first step, and the place in it.
    for _ in range(500):
        value = round(rng.random(), rng.randint(1, 4))
        outputs = [_random_log(rng, value) for _ in range(rng.randint(1, 6))]
        expected = next(
            ((k, hit) for k, out in enumerate(outputs) if (hit := _every_number_read(value, out)) is not None), None
        )
        traced = trace_answer(value, [step(k, RUN, out) for k, out in enumerate(outputs)])
        assert traced is not None
        found = traced.fields[0]
        got = (found.step, (found.offset, found.text)) if found.step is not None else None
        assert got == expected, (value, outputs)


def test_scoring_reports_provenance_beside_output_match_in_both_modes() -> None:
    task = Task(task_id="t", query="q", answer={"test_mse": 7.4031})
    silent = trajectory(
        step(0, RUN, "training finished"),
        step(1, Action.submit({"test_mse": 7.4031})),
        submission={"test_mse": 7.4031},
        submitted=True,
    )
    for mode in ("corrected", "reference"):
        metrics, details = score_trajectory(silent, task, mode)  # type: ignore[arg-type]
        assert metrics.output_match == 1.0 and details.answer_provenance == "unobserved"
    printed = trajectory(
        step(0, RUN, "test MSE: 7.4031"),
        step(1, Action.submit({"test_mse": 7.4031})),
        submission={"test_mse": 7.4031},
        submitted=True,
    )
    metrics, details = score_trajectory(printed, task)
    assert metrics.output_match == 1.0 and details.answer_provenance == "observed"
    assert details.model_dump()["provenance"]["fields"][0]["step"] == 0
    _, details = score_trajectory(trajectory(step(0, RUN, "7.4031")), task)
    assert details.answer_provenance is None  # nothing submitted


def test_given_is_every_value_shown_some_only_by_given_cells() -> None:
    # A Masked task: its first cells are given (pre-executed); one of them prints the result.
    given = step(0, Action.execute("!python eval.py --checkpoint given"), "loss 0.25\nacc 0.8523", pre=True)
    setup = step(1, Action.execute("!pip install -e ."), "Successfully installed repo")
    run = step(2, RUN, "loss 0.25")
    submitted = {"loss": 0.25, "acc": 0.85}
    traced = trace_answer(submitted, [given, setup, run, step(3, Action.submit(submitted))])
    assert traced is not None and traced.status == "given"
    assert [(f.step, f.pre_executed_step) for f in traced.fields] == [(2, None), (None, 0)]
    assert traced.fields[1].given and not traced.fields[0].given
    # A value nobody showed: not given, whatever else is.
    traced = trace_answer({"acc": 0.85, "f1": 0.61}, [given, setup, run])
    assert traced is not None and traced.status == "unobserved"
    traced = trace_answer({"loss": 0.25, "acc": 0.85, "f1": 0.61}, [given, setup, run])
    assert traced is not None and traced.status == "partly_observed"


def test_the_summary_counts_given_answers_apart() -> None:
    def row(task_id: str, provenance: str | None) -> TaskResult:
        return TaskResult(task_id=task_id, task_set="masked", status="completed", answer_provenance=provenance)  # type: ignore[arg-type]

    summary = summarize([row("a", "observed"), row("b", "given"), row("c", "unobserved"), row("d", "given")])
    assert (summary.answer_observed, summary.answer_given) == (0.25, 0.5)
    assert summarize([row("a", "observed")]).answer_given == 0.0
    assert summarize([row("e", None)]).answer_given is None


def test_the_summary_counts_scored_answers_fully_observed() -> None:
    def row(task_id: str, provenance: str | None, status: str = "completed") -> TaskResult:
        return TaskResult(task_id=task_id, task_set="expert", status=status, answer_provenance=provenance)  # type: ignore[arg-type]

    results = [
        row("a", "observed"),
        row("b", "partly_observed"),
        row("c", "unobserved"),
        row("d", "observed"),
        row("e", None),  # nothing submitted: not counted
        row("f", "unobserved", "infra_error"),  # not scored: not counted
    ]
    assert summarize(results).answer_observed == 0.5
    assert summarize([row("e", None)]).answer_observed is None


def _run_with(tmp_path: Path, steps: list[Step], submission: Any) -> Path:
    """A run directory holding one task's trajectory and result, as a run writes them."""
    run_dir = RunDir(tmp_path / "run")
    run_dir.create()
    traj = trajectory(*steps, submission=submission, submitted=True)
    path = traj.save(run_dir.task_dir("t"))
    task = Task(task_id="t", query="q", answer={"test_mse": 7.4031})
    metrics, details = score_trajectory(traj, task)
    run_dir.write_tasks([task])
    run_dir.write_results(
        [
            TaskResult.from_trajectory(
                traj,
                "expert",
                metrics=metrics,
                details=details.model_dump(),
                answer_provenance=details.answer_provenance,
                mode="corrected",
                trajectory=str(path.relative_to(run_dir.path)),
            )
        ]
    )
    return run_dir.path


def test_offline_rescoring_gives_the_provenance_scoring_gave_online(tmp_path: Path) -> None:
    answer = {"test_mse": 7.4031}
    run = _run_with(tmp_path, [step(0, RUN, "Test MSE: 7.4031"), step(1, Action.submit(answer))], answer)
    online = json.loads((run / "results.jsonl").read_text())
    outcome = rescore(run, out=tmp_path / "again")
    offline = json.loads((tmp_path / "again" / "results.jsonl").read_text())
    assert offline["answer_provenance"] == online["answer_provenance"] == "observed"
    assert offline["details"]["provenance"] == online["details"]["provenance"]
    assert outcome.summary.answer_observed == 1.0
    assert json.loads((tmp_path / "again" / "summary.json").read_text())["answer_observed"] == 1.0


def test_rescoring_a_run_scored_before_provenance_adds_it(tmp_path: Path) -> None:
    answer = {"test_mse": 7.4031}
    run = _run_with(tmp_path, [step(0, RUN, "nothing printed"), step(1, Action.submit(answer))], answer)
    row = json.loads((run / "results.jsonl").read_text())
    del row["answer_provenance"], row["details"]["provenance"]  # as written before
    (run / "results.jsonl").write_text(json.dumps(row) + "\n")
    assert RunDir(run).read_results()[0].answer_provenance is None
    outcome = rescore(run)
    assert outcome.results[0].answer_provenance == "unobserved" and outcome.results[0].metrics.output_match == 1.0


def test_imported_runs_get_provenance_without_gold_tasks(tmp_path: Path) -> None:
    source = tmp_path / "synthetic_react-super_expert"
    steps = [
        NbStep("execute", "!python train.py", "epoch 1\ntest_mse 7.4031\n"),
        NbStep("submit", "{'test_mse': 7.4031, 'epochs': 2}", ""),
    ]
    write_notebook(source / "shown" / "history.ipynb", "react-super", EXPERT_QUERY, steps, {"submitted": 1})
    write_notebook(source / "guessed" / "history.ipynb", "react-super", EXPERT_QUERY, steps[1:], {"submitted": 1})
    outcome = import_trajectories(source, tmp_path / "run")
    by_id = {r.task_id: r for r in outcome.run.results}
    assert by_id["shown"].answer_provenance == "partly_observed"  # 7.4031 printed, epochs never
    assert by_id["guessed"].answer_provenance == "unobserved"
    assert all(r.mode == "recorded" for r in by_id.values())
    # The trajectory keeps each value's detail too.
    kept = Trajectory.load(tmp_path / "run" / str(by_id["shown"].trajectory)).metadata["answer_provenance"]
    assert [(f["field"], f["value"], f["step"], f["text"]) for f in kept["fields"]] == [
        ("test_mse", 7.4031, 0, "7.4031"),
        ("epochs", 2, None, None),
    ]
    again = {r.task_id: r for r in rescore(tmp_path / "run", tasks=[]).results}  # no gold: recorded metrics kept
    assert again["shown"].answer_provenance == "partly_observed" and again["shown"].mode == "recorded"


def _not_evidence_in_a_copy_of_its_line(text: str, start: int, end: int) -> bool:
    """``not_evidence`` as it was written first, reading a copy of the number's line at every call."""
    import re

    from super_bench.scoring import meters

    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line = text[line_start : line_end if line_end >= 0 else len(text)]
    at, stop = start - line_start, end - line_start
    if any(m.start() < stop and at < m.end() for m in meters._METER.finditer(line)):
        return True
    number = meters._LINE_NUMBER.match(line)
    if number is not None and at < number.end() and "." not in line[at:stop]:
        return True
    if meters._PIP_LINE.match(line):
        return True
    if meters._HYPER.search(text, max(line_start, start - 48), start):
        return True
    left = start
    while left > line_start and not meters._TOKEN_END.match(text[left - 1]):
        left -= 1
    right = end
    while right < len(line) + line_start and not meters._TOKEN_END.match(text[right]):
        right += 1
    token = text[left:right]
    return ("/" in token or "\\" in token) and re.search(r"[A-Za-z_][/\\]|[/\\][A-Za-z_.]", token) is not None


_PIECES = st.sampled_from(
    ["7", "0.5", "42", "%", " ", "\n", "\r", "|", "=", "/", "a", "it/s", " 3.1 MB/s", "eta 1", "lr ", "Collecting ",
     "━", "█", "loss", "x/y", "_", "e", "[", "]", "(", ")", ":", "\t", "00:01<00:02, ", "it ", "objects: "]
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(text=st.lists(_PIECES, max_size=40).map("".join))
def test_a_line_read_once_answers_as_its_copy_read_at_every_number_did(text: str) -> None:
    import re

    memo = LineMemo()
    for match in re.finditer(r"[0-9]+(?:\.[0-9]+)?", text):
        start, end = match.span()
        expected = _not_evidence_in_a_copy_of_its_line(text, start, end)
        assert not_evidence(text, start, end, memo) == expected == not_evidence(text, start, end)


def test_a_progress_flood_of_one_line_is_read_once_not_once_a_number() -> None:
    flood = "".join(f"\r{i % 100:3d}%|{'#' * (i % 10)}| {i}/200000" for i in range(200_000)) + "\naccuracy 0.42\n"
    found = percents(Text([flood]))
    assert found == []  # every number before a % is on the progress bar's line
    assert Number(0.42).find(Text([flood])) == (len(flood) - 5, "0.42")


def test_an_integer_zero_or_one_is_shown_only_on_a_line_that_names_its_metric() -> None:
    # 0 and 1 are everywhere (counts, indices, placeholders): a line must show it as that metric's value.
    assert first_step({"total_tokens": 0}, "loading instances: 0it", "gold_edus: 0") == [None]
    assert first_step({"total_tokens": 0}, "epoch 0 done", "Total tokens: 0") == [1]
    assert first_step({"accuracy": 1.0}, "done", "acc 1.0") == [1]  # a float is not asked for its name


@pytest.mark.parametrize(
    ("printed", "submitted", "observed"),
    [
        ("Receiving objects:  11% (8/73)", 0.11, False),  # git's meter
        ("Counting objects: 60% (44/73), done.", 0.6, False),
        ("SQuAD.jsonl.gz   0%[            ]       0  --.-KB/s", 0.0, False),  # wget's
        ("[0.00%]", 0.0, False),
        ("Map: 100%|██████████| 10/10 [00:00<00:00, 7.40it/s]", 7.4, False),
        ("100%|██████| 8/8 [00:18<00:00, 18.92s/it]08/21/2024 - INFO - {'accuracy': 0.6, 'f1': 0.75}", 0.6, True),
        ("100%|██████| 8/8 [00:18<00:00, 18.92s/it] acc 0.6", 0.6, True),  # text beside the meter is evidence
        ("loading instances: 0it [00:00, ?it/s]", 0.0, False),
        ("(1/9) done", 1.0, False),  # a counter
        ("12:    return 0.85", 12.0, False),  # a view's line number
    ],
)
def test_meters_and_counters_are_no_evidence_but_text_beside_them_is(
    printed: str, submitted: Any, observed: bool
) -> None:
    assert first_step({"x": submitted}, "nothing here", printed) == [1 if observed else None]


@settings(max_examples=200, deadline=None)
@given(
    done=st.integers(0, 10_000),
    total=st.integers(1, 10_000),
    rate=st.floats(0.01, 999, allow_nan=False).map(lambda x: round(x, 2)),
    value=st.integers(1, 999).map(lambda x: x / 1000),
    postfix=st.booleans(),
)
def test_a_number_inside_a_tqdm_meter_is_never_evidence_and_a_result_beside_it_is(
    done: int, total: int, rate: float, value: float, postfix: bool
) -> None:
    percent = min(100, 100 * done // total)
    bar = f"{percent}%|████      | {done}/{total} [00:01<00:02, {rate}it/s"
    line = bar + (f", loss={value}]" if postfix else f"] eval acc {value}")
    start = line.rindex(str(value))
    assert not not_evidence(line, start, start + len(str(value)))
    for number, after in ((str(percent), "%|"), (str(done), f"/{total}"), (str(total), " ["), (str(rate), "it/s")):
        at = line.index(number + after)
        assert not_evidence(line, at, at + len(number)), number
