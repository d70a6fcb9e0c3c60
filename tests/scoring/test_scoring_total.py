"""Scoring is total: any JSON value, submitted or gold, gets a score or an ``unscored`` row with the reason,
in both modes, online (``run``) and offline (``score``), and ``score`` writes all of its output or none."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.support.helpers import cli, react, step, trajectory

from super_bench import Action, Task
from super_bench.errors import UnscorableError
from super_bench.runner.rescore import rescore
from super_bench.runner.results import TaskResult
from super_bench.runner.rundir import RunDir
from super_bench.scoring import score_answer, score_trajectory, trace_answer
from super_bench.scoring.submission import json_safe

HUGE = 10**400
SURROGATE = "\ud800"


def _deep(depth: int, leaf: Any = 1.5) -> Any:
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


_leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from([HUGE, -HUGE, 10**4000, 2**1024])
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8)
    | st.sampled_from([SURROGATE, f" a{SURROGATE}b ", "0.5", "85.2%", " Positive "])
)
_json = st.recursive(
    _leaves,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
    max_leaves=20,
)
_values = _json | st.integers(60, 140).map(_deep) | st.builds(_deep, st.integers(1, 120), _json)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(submission=_values, gold=_values)
def test_any_json_pair_gets_a_score_in_both_modes_or_a_reason(submission: Any, gold: Any) -> None:
    for mode in ("corrected", "reference"):
        try:
            score = score_answer(submission, gold, mode)  # type: ignore[arg-type]
        except UnscorableError as e:
            reason = str(e)
            assert "nested too deeply" in reason
            continue
        assert isinstance(score, float) and 0.0 <= score <= 1.0
    provenance = trace_answer(submission, [step(0, Action.execute("x"), "acc 1.5 nan 0.5")])
    # What a row keeps of the submission and its provenance can be written as JSON, in UTF-8.
    row = TaskResult(task_id="t", task_set="expert", status="completed", submission=json_safe(submission))
    row.details = {"provenance": provenance.model_dump() if provenance else None}
    row.model_dump_json().encode("utf-8")


@pytest.mark.parametrize(
    ("submission", "gold", "corrected"),
    [
        (HUGE, 1.0, 0.0),
        (1.0, HUGE, 0.0),
        (HUGE, HUGE, 1.0),  # compared exactly, not through a float
        ({"a": HUGE}, {"a": 1.5, "b": HUGE + 1}, 0.0),
        (_deep(100), _deep(100), 1.0),
        (SURROGATE, SURROGATE, 1.0),
        ([SURROGATE, 1], ["x", 1], 0.5),
    ],
)
def test_the_values_that_crashed_scoring_score(submission: Any, gold: Any, corrected: float) -> None:
    assert score_answer(submission, gold) == corrected
    assert score_answer(submission, gold, "reference") in (0.0, 1.0, 0.5)  # the reference raised on huge ints: 0
    assert score_answer(HUGE, 1.0, "reference") == 0.0


def test_values_nested_deeper_than_python_follows_are_unscorable_with_the_reason() -> None:
    deep = _deep(5000)
    with pytest.raises(UnscorableError, match="nested too deeply"):
        score_answer(deep, deep)
    assert trace_answer(deep, []) is not None  # provenance walks any depth


def _odd_run(tmp_path: Path) -> Path:
    """A run whose trajectories submit (and whose gold answers hold) what crashed scoring."""
    run_dir = RunDir(tmp_path / "run")
    run_dir.create()
    cases: dict[str, tuple[Any, Any]] = {
        "huge": ({"acc": HUGE}, {"acc": 0.5}),
        "huge_gold": ({"acc": 0.5}, {"acc": HUGE}),
        "nan": ({"acc": math.nan}, {"acc": math.nan}),
        "deep": (_deep(100), _deep(100)),
        "inf_gold": (1.0, math.inf),
        "surrogate_gold": ({"label": "x"}, {"label": SURROGATE}),
    }
    tasks, rows = [], []
    for task_id, (submission, gold) in cases.items():
        text = json.dumps(submission)
        steps = [step(0, Action.execute("print(1)"), "1"), step(1, Action.submit(text))]
        traj = trajectory(*steps, submission=submission, submitted=True)
        traj.task_id = task_id
        path = traj.save(run_dir.task_dir(task_id))
        tasks.append(Task(task_id=task_id, query="q", answer=gold, landmarks=["1"]))
        rows.append(TaskResult.from_trajectory(traj, "expert", trajectory=str(path.relative_to(run_dir.path))))
    # A literal the importer keeps (a Python answer printed with str()): a lone surrogate read back.
    submit = step(0, Action.submit("'\\ud800'"))
    submit.metadata["answer_literal"] = "'\\ud800'"
    traj = trajectory(submit, submission="x", submitted=True)
    traj.task_id = "surrogate"
    path = traj.save(run_dir.task_dir("surrogate"))
    tasks.append(Task(task_id="surrogate", query="q", answer=["x"]))
    rows.append(TaskResult.from_trajectory(traj, "expert", trajectory=str(path.relative_to(run_dir.path))))
    (run_dir.path / "tasks.jsonl").write_text("".join(json.dumps(t.model_dump()) + "\n" for t in tasks))
    run_dir.write_results(rows)
    return run_dir.path


@pytest.mark.parametrize("mode", ["corrected", "reference"])
def test_score_scores_every_odd_value_and_writes_the_whole_output(tmp_path: Path, mode: str) -> None:
    run = _odd_run(tmp_path)
    result = cli("score", str(run), "--mode", mode, "--out", str(tmp_path / "scored"), "--json")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    rows = {json.loads(line)["task_id"]: json.loads(line) for line in (tmp_path / "scored" / "results.jsonl").open()}
    assert len(rows) == 7 and all(r["unscored"] is None for r in rows.values())
    for row in rows.values():
        assert 0.0 <= row["metrics"]["output_match"] <= 1.0
    if mode == "corrected":
        assert rows["nan"]["metrics"]["output_match"] == 1.0  # NaN equals NaN, and survives the JSON file
        assert rows["deep"]["metrics"]["output_match"] == 1.0
    assert rows["surrogate"]["submission"] == "\\ud800"  # written out as its escape
    assert json.loads((tmp_path / "scored" / "summary.json").read_text())["n_scored"] == 7


def test_score_writes_all_or_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = _odd_run(tmp_path)
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}

    def fail(*args: Any) -> Any:
        raise OSError("disk full")

    monkeypatch.setattr("super_bench.runner.rescore.summarize", fail)
    with pytest.raises(OSError, match="disk full"):
        rescore(run, out=tmp_path / "scored")
    assert not (tmp_path / "scored").exists() and [p.name for p in tmp_path.iterdir()] == ["run"]
    with pytest.raises(OSError, match="disk full"):
        rescore(run)  # in place: nothing of the run is rewritten
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before
    # An earlier re-scoring in --out stays whole when the next one fails.
    monkeypatch.undo()
    rescore(run, out=tmp_path / "scored")
    first = (tmp_path / "scored" / "results.jsonl").read_bytes()
    monkeypatch.setattr("super_bench.runner.rescore.summarize", fail)
    with pytest.raises(OSError, match="disk full"):
        rescore(run, out=tmp_path / "scored")
    assert (tmp_path / "scored" / "results.jsonl").read_bytes() == first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run", "scored"]


def test_an_unscorable_trajectory_is_an_unscored_row_with_the_reason(tmp_path: Path) -> None:
    task = Task(task_id="t", query="q", answer=1.0)
    deep = _deep(5000)
    with pytest.raises(UnscorableError):
        score_trajectory(
            trajectory(step(0, Action.submit("x")), submission=deep, submitted=True),
            Task(task_id="t", query="q", answer=deep),
        )
    assert (
        score_trajectory(trajectory(step(0, Action.submit("x")), submission=deep, submitted=True), task)[0].output_match
        == 0.0
    )


@pytest.mark.parametrize(
    "answer",
    [
        '{"test_mse": ' + "9" * 400 + "}",
        '{"test_mse": NaN}',
        '{"test_mse": "\\ud800"}',
        '{"test_mse": ' + "[" * 100 + "1" + "]" * 100 + "}",
    ],
    ids=["400-digit int", "NaN", "lone surrogate", "100 deep"],
)
def test_run_scores_odd_submissions_without_a_traceback(tmp_path: Path, answer: str) -> None:
    script = tmp_path / "replies.json"
    script.write_text(json.dumps([react("Report.", "submit", answer), react("Report.", "submit", '{"test_mse": 1}')]))
    out = tmp_path / "run"
    result = cli("run", "--agent", "react", "--model", f"mock/{script}", "--task-ids", "tinyreg", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    (line,) = (out / "results.jsonl").read_text().splitlines()
    row = json.loads(line)
    assert row["status"] == "completed" and row["unscored"] is None
    assert row["metrics"]["output_match"] == 0.0 and row["metrics"]["submitted"] == 1.0
    assert cli("score", str(out), "--out", str(tmp_path / "again")).returncode == 0
