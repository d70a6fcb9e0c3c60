"""Importing the paper's published trajectories: the shared sample, and synthetic notebooks in both styles."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

import pytest
from tests.support.helpers import REFERENCE_TRAJECTORIES, cli
from tests.support.trajectory_notebooks import (
    EPOCH_LINE,
    GOLD,
    MASKED_ID,
    NbStep,
    react_expert_steps,
    swe_masked_steps,
    write_gold_tasks,
    write_notebook,
    write_published_run,
)

from super_bench import Trajectory, load_tasks
from super_bench.environment.edit import parse_edit
from super_bench.errors import RunDirError, TrajectoryImportError
from super_bench.runner.importer import import_trajectories, infer_set
from super_bench.runner.paper_notebooks import IMPORT_DATE, notebook_trajectory
from super_bench.runner.rescore import rescore
from super_bench.runner.rundir import RunDir
from super_bench.scoring import parse_answer, score_trajectory, submission_of
from super_bench.scoring.cleaning import reference_clean
from super_bench.tasks.model import Task

SAMPLE = REFERENCE_TRAJECTORIES / "react-super_expert"
needs_sample = pytest.mark.skipif(
    not SAMPLE.is_dir(), reason="the paper's sample trajectories are not here (see SUPER_BENCH_REFERENCE_TRAJECTORIES)"
)


def notebook_step_count(path: Path) -> int:
    cells = json.loads(path.read_text())["cells"]
    return sum(c["cell_type"] == "markdown" and "".join(c["source"]).startswith("### Step ") for c in cells)


@needs_sample
def test_every_sample_notebook_imports_with_all_its_steps(tmp_path: Path) -> None:
    outcome = import_trajectories(SAMPLE, tmp_path / "run")
    notebooks = sorted(SAMPLE.glob("*/history.ipynb"))
    assert outcome.failed == [] and outcome.imported == len(notebooks) == 45
    by_id = {r.task_id: r for r in outcome.run.results}
    for notebook in notebooks:
        task_id = notebook.parent.name
        trajectory = Trajectory.load(RunDir(tmp_path / "run").task_dir(task_id))
        assert len(trajectory.steps) == notebook_step_count(notebook), task_id
        assert [s.index for s in trajectory.steps] == list(range(len(trajectory.steps)))
        assert trajectory.agent == "react-super" and trajectory.query and not trajectory.query.startswith("#")
        assert all(s.end_time >= s.start_time for s in trajectory.steps)
        assert all(b.start_time >= a.start_time for a, b in zip(trajectory.steps, trajectory.steps[1:]))
        recorded = json.loads((notebook.parent / "metrics.json").read_text())
        result = by_id[task_id]
        assert result.metrics.output_match == recorded["output_match"]
        assert result.metrics.landmarks == recorded["checkpoints"]
        assert result.metrics.entrypoint == recorded["entrypoint"]  # recorded for Expert tasks too: kept
        assert result.mode == "recorded" and result.started_at is None and result.finished_at is None
        assert result.wall_time == result.execution_time == pytest.approx(trajectory.execution_time)
        assert trajectory.metadata["recorded_metrics"] == recorded
        if trajectory.stop_reason == "submitted":
            assert trajectory.steps[-1].action.type == "submit"
        else:
            assert trajectory.stop_reason in ("max_tokens", "max_compute")
            assert trajectory.steps[-1].metadata["notebook_action"] == "exception"
        # The recorded "submitted" is ours: a final submit with a non-null answer.
        assert float(result.submission is not None) == recorded["submitted"], task_id
    summary = outcome.run.summary
    assert summary.mode == "recorded" and summary.n_tasks == 45
    # The paper's published ReAct-SUPER Expert figures: output match 14-17%, landmarks 34-46%.
    assert 0.13 < (summary.metrics["output_match"] or 0) < 0.18
    assert 0.33 < (summary.metrics["landmarks"] or 0) < 0.47


@needs_sample
def test_reference_mode_reproduces_what_the_sample_can_show() -> None:
    """The recorded metrics the sample lets one recompute without the Hub's gold tasks."""
    observations = 0
    for notebook in sorted(SAMPLE.glob("*/history.ipynb")):
        task_id = notebook.parent.name
        recorded = json.loads((notebook.parent / "metrics.json").read_text())
        trajectory = notebook_trajectory(notebook, task_id)
        metrics, _ = score_trajectory(trajectory, Task(task_id=task_id, query=trajectory.query), "reference")
        # Submitted: a final submit with a truthy answer.
        assert metrics.submitted == recorded["submitted"], task_id
        if not metrics.submitted:
            assert recorded["output_match"] == 0.0, task_id  # nothing submitted matches nothing
        # The notebooks hold the reference agent's cleaned observations: cleaning them again changes
        # nothing, so landmarks are matched on the very text the reference matched.
        for step in trajectory.steps:
            assert reference_clean(step.raw_output) == step.raw_output, (task_id, step.index)
            observations += 1
    assert observations == 2218


def sample_tasks() -> list[Task]:
    """Gold tasks made up from the sample itself (the Hub's are not here): each task's answer is what its
    agent submitted, or an answer nobody gave; its landmarks a line of its third step's output, escaped,
    and a regex that matches nothing; its entrypoint the most common script name."""
    tasks = []
    for notebook in sorted(SAMPLE.glob("*/history.ipynb")):
        trajectory = notebook_trajectory(notebook, notebook.parent.name)
        submitted = submission_of(trajectory)
        lines = [line for s in trajectory.steps[2:3] for line in s.raw_output.splitlines() if line.strip()]
        landmarks = [re.escape(lines[0][:40])] if lines else []
        tasks.append(
            Task(
                task_id=notebook.parent.name,
                query=trajectory.query,
                answer=json.dumps(submitted if submitted else {"never": 1.0}, default=str),
                landmarks=[*landmarks, "no such landmark"],
                entrypoint="train.py",
            )
        )
    return tasks


@pytest.mark.slow
@needs_sample
@pytest.mark.parametrize("mode", ["corrected", "reference"])
def test_every_sample_trajectory_scores_offline_as_at_import(tmp_path: Path, mode: str) -> None:
    tasks = sample_tasks()
    online = import_trajectories(SAMPLE, tmp_path / "run", tasks=tasks, mode=mode)  # type: ignore[arg-type]
    offline = rescore(tmp_path / "run", mode, out=tmp_path / "again")  # type: ignore[arg-type]
    assert len(online.run.results) == len(offline.results) == 45 and online.unmatched == []
    again = {r.task_id: r for r in offline.results}
    for row in online.run.results:
        assert row.mode == mode and again[row.task_id].mode == mode
        assert (again[row.task_id].metrics, again[row.task_id].details) == (row.metrics, row.details), row.task_id
    assert offline.summary.metrics == online.run.summary.metrics
    assert 0 < (offline.summary.metrics["landmarks"] or 0) < 1 and offline.summary.metrics["entrypoint"] is not None


@needs_sample
def test_sample_thoughts_actions_and_observations_are_kept() -> None:
    trajectory = notebook_trajectory(SAMPLE / "acqsurvey" / "history.ipynb", "acqsurvey", model="gpt-4o")
    first = trajectory.steps[0]
    assert first.thought and first.thought.startswith("First, I need to clone")
    assert first.action.type == "execute" and first.action.content.startswith("!git clone")
    assert "Cloning into 'acqsurvey'" in first.observation
    assert first.start_time == IMPORT_DATE + timedelta(hours=19, minutes=9, seconds=58)
    assert first.duration == 5.0
    kinds = {s.action.type for s in trajectory.steps}
    assert {"execute", "edit"} <= kinds
    invalid = [s for s in trajectory.steps if s.outcome == "invalid"]
    assert invalid and all("notebook_action" in s.metadata for s in invalid)


def test_react_super_notebook(tmp_path: Path) -> None:
    path = write_notebook(tmp_path / "nb" / "history.ipynb", "react-super", "Do it.", react_expert_steps())
    trajectory = notebook_trajectory(path, "tinyrepo")
    steps = trajectory.steps
    assert [s.action.type for s in steps] == ["execute", "edit", "execute", "execute", "continue_wait", "submit"]
    assert steps[1].action.content.startswith("tinyrepo/train.py\n<<<BEFORE_EDIT>>>")
    assert parse_edit(steps[1].action.content).path == "tinyrepo/train.py"
    assert steps[2].outcome == "invalid" and steps[2].metadata["notebook_action"] == "" and steps[2].thought is None
    assert steps[3].outcome == "timeout" and EPOCH_LINE in steps[3].observation
    # The clock wrapped past midnight: the next steps are on the next day.
    assert steps[3].start_time.day == 1 and steps[4].start_time.day == 2 and steps[3].duration == 300
    assert steps[0].observation.startswith("Cloning\x1b[K\r")  # raw, as recorded
    assert trajectory.submitted and trajectory.submission == {"test_mse": 7.4031, "epochs": 2}
    assert trajectory.stop_reason == "submitted" and trajectory.agent == "react-super"
    assert trajectory.finished_at == steps[-1].end_time


@pytest.mark.parametrize("style", ["react-super", "swe-agent"])
def test_masked_runs_keep_their_pre_executed_steps(tmp_path: Path, style: str) -> None:
    _, masked = write_published_run(tmp_path, style)
    outcome = import_trajectories(masked, tmp_path / "run")
    (result,) = outcome.run.results
    assert result.task_id == MASKED_ID and result.task_set == "masked"
    trajectory = Trajectory.load(RunDir(tmp_path / "run").task_dir(MASKED_ID))
    assert [s.pre_executed for s in trajectory.steps[:3]] == [True, True, False]
    assert trajectory.steps[0].thought is None
    assert trajectory.steps[1].action.type == "edit"
    edit = parse_edit(trajectory.steps[1].action.content)
    assert edit.path.endswith("tinyrepo/train.py") and "epochs = 10" in edit.remove and "epochs = 1" in edit.add
    assert result.n_steps == len(trajectory.steps) - 2  # the agent's own steps
    assert trajectory.stop_reason == "max_tokens" and trajectory.steps[-1].outcome == "invalid"
    assert result.metrics.landmarks == 1.0 and result.metrics.output_match == 0.0  # as recorded
    if style == "swe-agent":
        assert trajectory.steps[0].metadata["untimed"] is True
        assert trajectory.steps[3].action.content == "continue_wait"  # the harness ran it as code


def test_swe_agent_notebook(tmp_path: Path) -> None:
    expert, _ = write_published_run(tmp_path, "swe-agent")
    trajectory = notebook_trajectory(expert / "tinyrepo" / "history.ipynb", "tinyrepo")
    assert trajectory.agent == "swe-agent" and trajectory.query.startswith("Train tinyrepo")
    labels = [s.metadata.get("notebook_action") for s in trajectory.steps]
    assert labels == [None, None, "open", "edit", "search_dir", None, None]
    assert all(s.action.type == "execute" for s in trajectory.steps[:-1])
    assert trajectory.steps[3].action.content == "edit 1:1\nepochs = 1\nend_of_edit"
    assert trajectory.steps[-1].action.type == "submit"
    assert trajectory.submission == {"test_mse": 7.4031, "epochs": 1}


@pytest.mark.parametrize("style", ["react-super", "swe-agent"])
def test_import_and_rescore_against_gold_tasks(tmp_path: Path, style: str) -> None:
    expert, masked = write_published_run(tmp_path, style)
    tasks = write_gold_tasks(tmp_path / "gold.jsonl")
    result = cli("import-trajectories", str(expert), "--out", str(tmp_path / "expert"), "--tasks", str(tasks))
    assert result.returncode == 0, result.stdout + result.stderr
    (row,) = [json.loads(line) for line in (tmp_path / "expert" / "results.jsonl").read_text().splitlines()]
    submitted = 2 if style == "react-super" else 1
    assert row["submission"] == {"test_mse": 7.4031, "epochs": submitted}
    assert row["metrics"]["output_match"] == (0.5 if style == "react-super" else 1.0)
    assert row["metrics"]["landmarks"] == 1.0
    assert row["details"]["landmark_steps"][0] is not None
    assert json.loads((tmp_path / "expert" / "summary.json").read_text())["mode"] == "corrected"
    assert [t.task_id for t in load_tasks(tmp_path / "expert" / "tasks.jsonl")] == ["tinyrepo"]
    manifest = json.loads((tmp_path / "expert" / "run.json").read_text())
    assert manifest["config"] == {"agent": style, "model": "synthetic-model", "task_set": "expert"}
    # Masked: the set comes from the folder name and the gold task has the same id.
    outcome = import_trajectories(masked, tmp_path / "masked", tasks=load_tasks(tasks, "masked"))
    (masked_result,) = outcome.run.results
    assert masked_result.metrics.output_match == 0.0 and masked_result.metrics.submitted == 0.0
    assert masked_result.metrics.landmarks == (1.0 if style == "react-super" else 0.0)


def test_tasks_missing_from_gold_keep_their_recorded_metrics(tmp_path: Path) -> None:
    expert, _ = write_published_run(tmp_path, "react-super")
    other = write_notebook(
        expert / "other" / "history.ipynb",
        "react-super",
        "q",
        react_expert_steps()[:1],
        {"submitted": 0, "output_match": 0.0, "checkpoints": 0.25, "entrypoint": 0.0},
    )
    assert other.is_file()
    outcome = import_trajectories(expert, tmp_path / "run", tasks=load_tasks(write_gold_tasks(tmp_path / "g.jsonl")))
    assert outcome.unmatched == ["other"]
    by_id = {r.task_id: r for r in outcome.run.results}
    assert by_id["other"].metrics.landmarks == 0.25
    assert by_id["tinyrepo"].metrics.output_match == 0.5


def test_a_broken_notebook_is_reported_and_the_rest_imported(tmp_path: Path) -> None:
    expert, _ = write_published_run(tmp_path, "react-super")
    (expert / "broken").mkdir()
    (expert / "broken" / "history.ipynb").write_text("{ not json")
    (expert / "odd").mkdir()
    (expert / "odd" / "history.ipynb").write_text(json.dumps({"cells": [{"cell_type": "markdown", "source": "hello"}]}))
    outcome = import_trajectories(expert, tmp_path / "run")
    assert outcome.imported == 1
    assert len(outcome.failed) == 2
    assert any("broken" in f and "not a readable notebook" in f for f in outcome.failed)
    assert any("odd" in f and "no '### Query' cell" in f for f in outcome.failed)


def test_an_import_of_nothing_fails_and_leaves_no_run(tmp_path: Path) -> None:
    source = tmp_path / "gpt-4o_react-super_expert"
    for name in ("broken", "odd"):
        (source / name).mkdir(parents=True)
    (source / "broken" / "history.ipynb").write_text("{ not json")
    (source / "odd" / "history.ipynb").write_text(json.dumps({"cells": []}))
    result = cli("import-trajectories", str(source), "--out", str(tmp_path / "run"))
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert f"nothing imported from {source}: none of its 2 notebook(s) could be read" in line, line
    assert not (tmp_path / "run").exists()
    (tmp_path / "empty").mkdir()  # an empty directory given: left as it was, empty
    with pytest.raises(TrajectoryImportError, match="nothing imported"):
        import_trajectories(source, tmp_path / "empty")
    assert list((tmp_path / "empty").iterdir()) == []


def test_every_skipped_folder_is_reported(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    expert, _ = write_published_run(tmp_path, "react-super")
    (expert / "scores-only").mkdir()
    (expert / "scores-only" / "metrics.json").write_text("{}")
    (expert / "empty").mkdir()
    (expert / ".ipynb_checkpoints").mkdir()  # hidden: not a task folder
    outcome = import_trajectories(expert, tmp_path / "run")
    assert outcome.imported == 1
    assert outcome.failed == [
        f"{expert / 'empty'}: skipped, it has no history.ipynb",
        f"{expert / 'scores-only'}: skipped, it has a metrics.json but no history.ipynb",
    ]
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == outcome.failed
    result = cli("import-trajectories", str(expert), "--out", str(tmp_path / "cli"))
    assert result.returncode == 0 and "scores-only: skipped" in result.stderr.replace("\n", "")


def test_scoring_an_imported_run_needs_gold_tasks_and_copies_nothing_without(tmp_path: Path) -> None:
    expert, _ = write_published_run(tmp_path, "react-super")
    import_trajectories(expert, tmp_path / "run")
    result = cli("score", str(tmp_path / "run"))
    assert result.returncode == 2 and "pass the task source with --tasks" in result.stderr
    rescored = tmp_path.with_name(f"{tmp_path.name}-rescored") / "run-corrected"  # beside the folder of runs
    assert not rescored.exists()
    result = cli("score", str(tmp_path / "run"), "--tasks", str(write_gold_tasks(tmp_path / "gold.jsonl")))
    assert result.returncode == 0, result.stderr
    summary = json.loads((rescored / "summary.json").read_text())
    assert summary["mode"] == "corrected" and summary["metrics"]["output_match"] == 0.5
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["mode"] == "recorded"


def test_import_errors_are_clear(tmp_path: Path) -> None:
    with pytest.raises(TrajectoryImportError, match=r"no <task_id>/history\.ipynb"):
        import_trajectories(tmp_path, tmp_path / "run")
    expert, masked = write_published_run(tmp_path / "all", "react-super")
    with pytest.raises(
        TrajectoryImportError, match="several runs, import each one: synthetic-model_react-super_expert"
    ):
        import_trajectories(tmp_path / "all", tmp_path / "run")
    import_trajectories(expert, tmp_path / "run")
    with pytest.raises(RunDirError, match="already holds a run"):
        import_trajectories(masked, tmp_path / "run")
    result = cli("import-trajectories", str(tmp_path / "all"), "--out", str(tmp_path / "x"))
    assert result.returncode == 2 and "several runs" in result.stderr


def test_set_and_answer_parsing() -> None:
    assert infer_set(Path("gpt-4o_swe-agent_masked"), ["a"]) == "masked"
    assert infer_set(Path("mine"), ["repo_data", "repo_configuration,cpu"]) == "masked"
    assert infer_set(Path("mine"), ["repo", "repo_data"]) == "expert"
    assert parse_answer('{"a": 1}') == {"a": 1}
    assert parse_answer("{'a': 0.5, 'b': [1, 2]}") == {"a": 0.5, "b": [1, 2]}
    assert parse_answer("None") is None
    assert parse_answer("not an answer") == "not an answer"
    assert GOLD == {"test_mse": 7.4031, "epochs": 1}


def write_untimed_then_timed(root: Path) -> Path:
    """A SWE-agent Masked run whose pre-executed steps record no time and whose agent starts in the afternoon:
    the recording's own duration is 14:00:00 to 14:00:30, and 10 s of it were cells running."""
    run = root / "synthetic-model_swe-agent_masked"
    steps = [
        *swe_masked_steps()[:2],
        NbStep("None", "!python tinyrepo/train.py", f"{EPOCH_LINE}\n", clock=("14:00:00", "14:00:04", 4)),
        NbStep("None", "!ls", "train.py\n", clock=("14:00:24", "14:00:30", 6)),
    ]
    write_notebook(run / MASKED_ID / "history.ipynb", "swe-agent", "Train it.", steps, {"submitted": 0})
    untimed = swe_masked_steps()[:2]  # a second task whose recording has no times at all
    write_notebook(run / "untimed_goal" / "history.ipynb", "swe-agent", "Train it.", untimed, {"submitted": 0})
    return run


def test_untimed_pre_executed_steps_invent_no_time_and_no_idle_sandbox(tmp_path: Path) -> None:
    from super_bench.report.compare import compare_runs
    from super_bench.report.runs import load_run

    source = write_untimed_then_timed(tmp_path)
    outcome = import_trajectories(source, tmp_path / "run")
    rows = {r.task_id: r for r in outcome.run.results}
    trajectory = Trajectory.load(RunDir(tmp_path / "run").task_dir(MASKED_ID))
    first_timed = trajectory.steps[2].start_time
    assert first_timed.hour == 14
    for step in trajectory.steps[:2]:  # no midnight: they take the first timed step's time and last 0 s
        assert not step.timed and step.start_time == step.end_time == first_timed
    assert trajectory.started_at == first_timed
    waste = rows[MASKED_ID].waste
    assert waste is not None and waste.idle_sandbox == 20.0  # 30 s recorded, 10 s of them running cells
    assert rows["untimed_goal"].waste is None  # nothing measured: unknown, not zero
    assert outcome.run.summary.waste is not None and outcome.run.summary.waste.idle_sandbox == 20.0
    data = load_run(tmp_path / "run")
    spent = {t.kind: t.base for t in compare_runs(data, data).time}
    assert spent["idle_sandbox"] == 20.0
