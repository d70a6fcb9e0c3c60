"""Failure causes wired into the run directory: every scored row that did not fully succeed gets one (a run's
episode, ``score``, the importer, ``analyze``), summary.json counts them per class and per category, and
``run``'s closing lines and ``analyze`` print them. The rules themselves are ``super_bench.analysis``'s: here
only trajectories whose class is unambiguous are asserted (a cell timeout: compute; nothing done: no_experiment).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.support.helpers import REFERENCE_TRAJECTORIES, cli, step, trajectory

from super_bench import Action, EnvConfig, RunConfig, SandboxConfig, run
from super_bench.analysis import CAUSES, TRAJECTORY_CAUSES, FailureCause
from super_bench.runner.analyze import analyze_run
from super_bench.runner.rescore import rescore
from super_bench.runner.results import TaskResult, causes_by_category, summarize
from super_bench.scoring import Metrics

SAMPLE = REFERENCE_TRAJECTORIES / "react-super_expert"


def replay_run(tmp_path: Path, name: str, actions: list[dict[str, Any]], task_ids: list[str]) -> Path:
    """A real run of the replay agent on demo tasks, with a cell timeout of 3 s."""
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(actions))
    sandbox = SandboxConfig(root=tmp_path / "sandboxes")
    config = RunConfig(
        task_ids=task_ids, agent=f"replay:{path}", out=tmp_path / name, env=EnvConfig(cell_timeout=3, sandbox=sandbox)
    )
    return run(config, progress=False).run_dir.path


def rows(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def timed_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two demo tasks whose only cell (Python code: a run, where a bare `!sleep` is none) outlives its timeout
    before a wrong answer is submitted."""
    actions = [
        {"type": "execute", "content": "import time\ntime.sleep(30)"},
        {"type": "submit", "content": {"test_mse": 1.0}},
    ]
    return replay_run(tmp_path_factory.mktemp("causes"), "timed_out", actions, ["tinyreg", "nbsent"])


def test_a_run_stopped_by_a_cell_timeout_records_compute_with_its_step_in_rows_and_summary(timed_out: Path) -> None:
    for row in rows(timed_out):
        failure = FailureCause.model_validate(row["failure"])
        assert (failure.cause, failure.step, failure.by) == ("compute", 0, "rules"), row
    summary = json.loads((timed_out / "summary.json").read_text())
    assert summary["failure_causes"] == {"compute": 2}
    assert summary["failure_causes_by_category"] == {"expert": {"compute": 2}}


def test_score_computes_the_causes_again_and_closes_with_their_counts(timed_out: Path, tmp_path: Path) -> None:
    outcome = rescore(timed_out, out=tmp_path / "rescored")
    assert [r.failure.cause if r.failure else None for r in outcome.results] == ["compute", "compute"]
    assert outcome.summary.failure_causes == {"compute": 2}
    done = cli("score", str(timed_out), "--mode", "reference", "--out", str(tmp_path / "reference"))
    assert done.returncode == 0, done.stderr
    assert "failure causes: compute 2 (super-bench analyze RUN_DIR shows the evidence)" in done.stdout
    assert [r["failure"]["cause"] for r in rows(tmp_path / "reference")] == ["compute", "compute"]


def test_nothing_done_is_no_experiment_and_a_solved_task_has_no_cause(tmp_path: Path) -> None:
    idle = replay_run(tmp_path, "idle", [], ["tinyreg"])
    [row] = rows(idle)
    assert row["submission"] is None and row["failure"]["cause"] == "no_experiment", row
    solved = run(
        RunConfig(task_ids=["tinyreg"], out=tmp_path / "gold", env=EnvConfig(sandbox=SandboxConfig(root=tmp_path))),
        progress=False,
    )
    assert [r.failure for r in solved.results] == [None]
    assert solved.summary.failure_causes == {} and solved.summary.failure_causes_by_category == {}


def test_run_closes_with_one_line_of_cause_counts_when_a_task_failed(tmp_path: Path) -> None:
    actions = tmp_path / "idle.json"
    actions.write_text("[]")
    done = cli("run", "--agent", f"replay:{actions}", "--task-ids", "tinyreg", "--out", str(tmp_path / "r"))
    assert done.returncode == 0, done.stderr
    assert [line.strip() for line in done.stdout.splitlines() if "failure causes" in line] == [
        "failure causes: no experiment 1 (super-bench analyze RUN_DIR shows the evidence)"
    ]
    gold = cli("run", "--task-ids", "tinyreg", "--out", str(tmp_path / "g"))
    assert gold.returncode == 0 and "failure causes" not in gold.stdout, gold.stdout


def _row(**fields: Any) -> TaskResult:
    values: dict[str, Any] = {"task_id": "t", "task_set": "expert", "status": "completed", **fields}
    return TaskResult(**values)


def test_infrastructure_failures_and_unscored_rows_get_no_cause() -> None:
    stopped = trajectory(step(0, {"type": "execute", "content": "!sleep 9"}, outcome="timeout"))
    assert _row().diagnosed(stopped).failure is not None  # the same trajectory, scored: the agent's failure
    assert _row(status="infra_error").diagnosed(stopped).failure is None
    assert _row(unscored="task 't' is not among the tasks").diagnosed(stopped).failure is None
    assert _row(metrics=Metrics(submitted=1.0, output_match=1.0)).diagnosed(stopped).failure is None


categories = st.sampled_from(["data", "goal", "cpu", "issue"])
masked_ids = st.builds(lambda cs: "task_" + ",".join(cs), st.lists(categories, min_size=1, max_size=3, unique=True))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.one_of(masked_ids, st.just("plain")), st.sampled_from([None, *CAUSES])), max_size=12))
def test_causes_are_counted_per_class_and_per_category(spec: list[tuple[str, str | None]]) -> None:
    results = [
        _row(
            task_id=task_id,
            task_set="expert" if task_id == "plain" else "masked",
            failure=None if cause is None else {"cause": cause, "confidence": 0.5},
        )
        for task_id, cause in spec
    ]
    summary = summarize(results)
    assert sum(summary.failure_causes.values()) == sum(cause is not None for _, cause in spec)
    by_category = causes_by_category(results)
    for task_id, cause in spec:
        if cause is None:
            continue
        for category in task_id.rsplit("_", 1)[1].split(",") if task_id != "plain" else ["expert"]:
            assert by_category[category][cause] >= 1
    expected = sum(len(t.rsplit("_", 1)[1].split(",")) if t != "plain" else 1 for t, c in spec if c is not None)
    assert sum(sum(c.values()) for c in by_category.values()) == expected


def test_analyze_computes_causes_for_rows_written_before_them(timed_out: Path, tmp_path: Path) -> None:
    import shutil

    old = tmp_path / "old"
    shutil.copytree(timed_out, old)
    lines = rows(old)
    for row in lines:  # as version 3 wrote them
        row.pop("failure")
        row["schema_version"] = 3
    broken = {"task_id": "broken", "task_set": "expert", "status": "infra_error", "schema_version": 3}
    (old / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in [*lines, broken]))
    summary = json.loads((old / "summary.json").read_text())
    for key in ("failure_causes", "failure_causes_by_category"):
        summary.pop(key)
    (old / "summary.json").write_text(json.dumps({**summary, "schema_version": 3}))
    metrics = [r["metrics"] for r in lines]
    done = cli("analyze", str(old))
    assert done.returncode == 0, done.stderr
    assert [r["failure"] and r["failure"]["cause"] for r in rows(old)] == ["compute", "compute", None]
    assert [r["metrics"] for r in rows(old)][:2] == metrics  # the scores as they were
    assert "1 row(s) not scored or failed on the infrastructure: no cause (not the agent's)" in done.stdout
    assert json.loads((old / "summary.json").read_text())["failure_causes"] == {"compute": 2}
    out = done.stdout
    assert "by primary cause" in " ".join(out.split()) and "expert" in out  # the title wraps with a long path
    for task_id in ("nbsent", "tinyreg"):
        assert f"{task_id}: compute" in out and "step 1" in out, out
    as_json = json.loads(cli("analyze", str(old), "--json").stdout)
    assert as_json["failure_causes"] == {"compute": 2}
    assert {t["task_id"] for t in as_json["tasks"]} == {"tinyreg", "nbsent"}


def test_analyze_refuses_what_is_no_run_directory_with_a_clear_message(tmp_path: Path) -> None:
    missing = cli("analyze", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    (tmp_path / "empty").mkdir()
    empty = cli("analyze", str(tmp_path / "empty"))
    assert empty.returncode == 2 and "has no results" in empty.stderr, empty.stderr
    garbled = tmp_path / "garbled"
    garbled.mkdir()
    (garbled / "results.jsonl").write_text("{not json\n[1, 2]\n")
    bad = cli("analyze", str(garbled))
    assert bad.returncode == 2 and "has no results" in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
    (garbled / "results.jsonl").write_text(json.dumps({"task_id": "t", "schema_version": 99}) + "\n")
    newer = cli("analyze", str(garbled))
    assert newer.returncode == 2 and "newer super-bench" in newer.stderr, newer.stderr


@pytest.mark.skipif(not SAMPLE.is_dir(), reason="the paper's sample trajectories are not here")
def test_an_imported_paper_run_gets_causes_and_analyze_prints_them_in_one_table_at_80_columns(tmp_path: Path) -> None:
    from super_bench.runner.importer import import_trajectories

    outcome = import_trajectories(SAMPLE, tmp_path / "paper")
    results = outcome.run.results
    failed = [r for r in results if r.failure is not None]
    assert failed and all(r.in_means for r in failed)
    for r in results:
        solved = all(v >= 1.0 for v in r.metrics.model_dump().values() if v is not None)
        assert (r.failure is None) == solved, r
    summary = outcome.run.summary
    assert sum(summary.failure_causes.values()) == len(failed)
    assert summary.failure_causes_by_category == {"expert": summary.failure_causes}
    env = {**os.environ, "COLUMNS": "80"}
    done = subprocess.run(
        [sys.executable, "-m", "super_bench", "analyze", str(tmp_path / "paper")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), done.stdout
    [expert] = [line for line in lines if line.startswith("expert")]
    [total] = [line for line in lines if line.startswith("all")]
    counts = [int(c) if c != "-" else 0 for c in total.split()[1:]]
    assert counts == [summary.failure_causes.get(c, 0) for c in TRAJECTORY_CAUSES] + [len(failed)]
    assert expert.split()[1:] == total.split()[1:]
    for r in failed:
        assert any(line.startswith(f"{r.task_id}: {r.failure.cause.replace('_', ' ')}") for line in lines), r.task_id
    again = analyze_run(tmp_path / "paper")
    assert [r.failure for r in again.results] == [r.failure for r in results]  # deterministic


def test_compare_shows_how_causes_shift_and_which_tasks_moved(timed_out: Path, tmp_path: Path) -> None:
    idle = replay_run(tmp_path, "idle", [], ["tinyreg", "nbsent"])
    done = cli("compare", str(timed_out), str(idle))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "failure causes over the shared tasks" in out
    cells = [[c.strip() for c in line.split("│")[1:5]] for line in out.splitlines() if line.count("│") == 5]
    table = {row[0]: row[1:] for row in cells}
    assert table["compute"] == ["2", "0", "-2"] and table["no experiment"] == ["0", "2", "+2"], out
    assert table["environment"] == ["0", "0", "0"]
    assert "moved between causes: 2: nbsent (compute -> no experiment), tinyreg (compute -> no experiment)" in out
    [comparison] = json.loads(cli("compare", str(timed_out), str(idle), "--json").stdout)
    assert {(m["task_id"], m["base"], m["other"]) for m in comparison["moved"]} == {
        ("nbsent", "compute", "no_experiment"),
        ("tinyreg", "compute", "no_experiment"),
    }
    # A run whose rows were written before causes: its shortfalls count as not analysed, not as successes.
    lines = rows(idle)
    (idle / "results.jsonl").write_text("".join(json.dumps({**r, "failure": None}) + "\n" for r in lines))
    [unanalysed] = json.loads(cli("compare", str(timed_out), str(idle), "--json").stdout)
    assert {c["cause"]: c["other"] for c in unanalysed["causes"]}["not_analysed"] == 2


def test_leaderboard_adds_cause_columns_only_when_asked(timed_out: Path) -> None:
    plain = cli("leaderboard", str(timed_out), "--format", "csv")
    assert plain.returncode == 0 and "cause_" not in plain.stdout, plain.stderr
    with_causes = cli("leaderboard", str(timed_out), "--format", "csv", "--causes")
    header, row = with_causes.stdout.splitlines()
    values = dict(zip(header.split(","), row.split(",")))
    assert values["cause_compute"] == "2" and values["cause_environment"] == "0"
    assert [k for k in values if k.startswith("cause_")] == [f"cause_{c}" for c in CAUSES]
    markdown = cli("leaderboard", str(timed_out), "--causes").stdout
    header_cells = [cell.strip() for cell in markdown.splitlines()[0].split("|")]
    shown = [c.replace("_", " ") for c in TRAJECTORY_CAUSES]  # scoring_rule only where a row has it
    assert [cell for cell in header_cells if cell.replace(" ", "_") in CAUSES] == shown


def test_the_table_of_masked_categories_fits_80_columns_its_class_names_abbreviated_and_spelled_out() -> None:
    from rich.console import Console

    from super_bench.cli._causes import causes_table

    cats = ["data", "dependencies", "goal", "issue", "configuration", "cpu", "custom", "customgoal", "cpu,data"]
    results = [
        _row(task_id=f"r{i}_{cats[i % 9]}", task_set="masked", failure={"cause": CAUSES[i % 7], "confidence": 0.5})
        for i in range(40)
    ]
    console = Console(width=80, record=True)
    console.print(causes_table(summarize(results), "causes"))
    text = console.export_text()
    assert all(len(line) <= 80 for line in text.splitlines()), text
    assert all(line.split()[0] in text.split() for line in cats[:8]), text  # every category whole
    assert "env. = environment" in " ".join(text.split()) and "counts in each" in " ".join(text.split()), text
    [total] = [line.split() for line in text.splitlines() if line.startswith("all")]
    assert total[-1] == "40" and sum(int(c) for c in total[1:-1] if c != "-") == 40


def test_analyze_with_a_judge_records_its_verdicts_and_counts_them(timed_out: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "judged"
    shutil.copytree(timed_out, run_dir)
    script = tmp_path / "verdicts.json"
    verdicts = [
        {"cause": "compute", "step": 0, "reason": "The cell ran out of time."},
        {"cause": "no_experiment", "step": 1, "reason": "The answer was typed, not computed."},
    ]
    script.write_text(json.dumps([json.dumps(v) for v in verdicts]))
    done = cli("analyze", str(run_dir), "--judge", f"mock/{script}", "--no-cache", "--json")
    assert done.returncode == 0, done.stderr
    causes = {r["task_id"]: FailureCause.model_validate(r["failure"]) for r in rows(run_dir)}
    assert {c.by for c in causes.values()} == {f"judge:mock/{script}"}
    assert sorted((c.cause, c.step) for c in causes.values()) == [("compute", 0), ("no_experiment", 1)]
    assert json.loads((run_dir / "summary.json").read_text())["failure_causes"] == {"compute": 1, "no_experiment": 1}
    # Without --judge the rules decide again, offline.
    assert cli("analyze", str(run_dir)).returncode == 0
    assert {FailureCause.model_validate(r["failure"]).by for r in rows(run_dir)} == {"rules"}


def test_a_reference_rescore_names_the_entrypoint_rule_where_it_alone_fell_short() -> None:
    # A gold run whose script finished in 2 s: the reference counts an entrypoint run only from 10 s on.
    quick = {"step_index": 3, "duration": 2.0, "success": False, "reason": "took 2.0 s, less than 10 s"}
    metrics = Metrics(submitted=1.0, output_match=1.0, landmarks=1.0, entrypoint=0.0)
    episode = trajectory(step(0, Action.execute("!python train.py"), "acc 0.5"))
    row = TaskResult(
        task_id="t",
        task_set="expert",
        status="completed",
        metrics=metrics,
        mode="reference",
        details={"entrypoint_runs": [quick]},
    )
    failure = row.diagnosed(episode).failure
    assert failure is not None and (failure.cause, failure.step) == ("scoring_rule", 3)
    assert "10 s" in failure.reason and failure.quote == quick["reason"]
    # In corrected mode, or where the answer fell short too, the run's own failure is read as before.
    assert row.model_copy(update={"mode": "corrected"}).diagnosed(episode).failure.cause != "scoring_rule"  # type: ignore[union-attr]
    wrong = row.model_copy(update={"metrics": metrics.model_copy(update={"output_match": 0.0})})
    assert wrong.diagnosed(episode).failure.cause != "scoring_rule"  # type: ignore[union-attr]
