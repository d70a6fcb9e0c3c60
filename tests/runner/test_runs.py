"""Agents, the runner, the run directory and re-scoring, end to end on the demo tasks."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from tests.support.helpers import make_task

from super_bench import EnvConfig, RunConfig, SandboxConfig, Trajectory, load_tasks, rescore, run
from super_bench.agents import create_agent
from super_bench.agents.gold import printed_answer
from super_bench.errors import AgentError, ConfigError, RunDirError
from super_bench.runner.rundir import RunDir, task_dirname


def config(tmp_path: Path, **settings: object) -> RunConfig:
    env = EnvConfig(cell_timeout=60, sandbox=SandboxConfig(root=tmp_path / "sandboxes"))
    settings.setdefault("out", tmp_path / "run")
    return RunConfig(env=env, **settings)  # type: ignore[arg-type]


@pytest.mark.slow
def test_run_directory_layout_and_trajectory_files(tmp_path: Path) -> None:
    outcome = run(config(tmp_path, task_set="masked", task_ids=["tinyreg_goal"]))
    root = tmp_path / "run"
    assert {p.name for p in root.iterdir()} >= {"run.json", "tasks.jsonl", "results.jsonl", "summary.json", "tasks"}
    (result,) = [json.loads(line) for line in (root / "results.jsonl").read_text().splitlines()]
    assert {"task_id", "status", "stop_reason", "metrics", "submission"} <= result.keys()
    task_dir = root / "tasks" / result["task_id"]
    assert not (task_dir / "steps.jsonl").exists()
    trajectory = Trajectory.load(task_dir)
    assert trajectory.steps[0].pre_executed and not trajectory.steps[-1].pre_executed
    for step in json.loads((task_dir / "trajectory.json").read_text())["steps"]:
        assert {"thought", "action", "observation", "start_time", "end_time"} <= step.keys()
        assert step["action"]["type"] in ("execute", "edit", "submit", "interrupt", "continue_wait")
    nb = nbformat.read(task_dir / "trajectory.ipynb", as_version=4)
    nbformat.validate(nb)
    assert any(c.cell_type == "code" and "train.py" in c.source for c in nb.cells)
    assert outcome.summary.metrics["output_match"] == 1.0


@pytest.mark.slow
@pytest.mark.parametrize("task_set", ["expert", "masked", "auto"])
def test_an_agent_that_submits_null_scores_zero(tmp_path: Path, task_set: str) -> None:
    actions = tmp_path / "null.json"
    actions.write_text(json.dumps([{"type": "submit", "content": None}]))
    tasks = load_tasks("demo", task_set)
    if task_set == "masked":  # one task per repository: their pre-executed cells take a while
        tasks = list({t.github_repo: t for t in tasks}.values())
    outcome = run(config(tmp_path, task_set=task_set, task_ids=[t.task_id for t in tasks], agent=f"replay:{actions}"))
    assert len(outcome.results) == len(tasks)
    for result in outcome.results:
        assert result.status == "completed" and result.stop_reason == "submitted", result
        # Auto tasks have no answer, so nothing to submit: no submitted score to average.
        assert result.metrics.submitted == (None if task_set == "auto" else 0.0)
        if task_set != "auto":
            assert result.metrics.output_match == 0.0, result
        if task_set != "masked":
            assert result.metrics.entrypoint in (None, 0.0), result
    if task_set == "auto":
        assert outcome.summary.metrics["entrypoint"] == 0.0 and outcome.summary.metrics["submitted"] is None


@pytest.mark.slow
def test_replay_agent_replays_a_saved_trajectory(tmp_path: Path) -> None:
    first = run(config(tmp_path, task_ids=["tinyreg"]))
    saved = tmp_path / "run" / first.results[0].trajectory  # type: ignore[operator]
    second = run(config(tmp_path, task_ids=["tinyreg"], agent=f"replay:{saved}", out=tmp_path / "again"))
    assert second.results[0].metrics == first.results[0].metrics


@pytest.mark.slow
def test_an_agent_that_stops_without_submitting(tmp_path: Path) -> None:
    actions = tmp_path / "a.json"
    actions.write_text(json.dumps([{"type": "execute", "content": "print('hello')"}]))
    (result,) = run(config(tmp_path, task_ids=["tinyreg"], agent=f"replay:{actions}")).results
    assert result.status == "completed" and result.stop_reason == "agent_stopped"
    assert result.metrics.submitted == 0.0 and result.metrics.output_match == 0.0


@pytest.mark.slow
def test_rerunning_the_same_command_resumes(tmp_path: Path) -> None:
    run(config(tmp_path, task_ids=["tinyreg"]))
    outcome = run(config(tmp_path, task_ids=["tinyreg", "tinyreg-lr"]))
    lines = (tmp_path / "run" / "results.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["task_id"] for line in lines) == ["tinyreg", "tinyreg-lr"]
    assert len(outcome.results) == len(lines)


@pytest.mark.slow
def test_rescoring_offline_in_both_modes(tmp_path: Path) -> None:
    replay = tmp_path / "partial.json"
    replay.write_text(json.dumps([{"type": "submit", "content": {"test_mse": 7.4031, "extra": 1}}]))
    run(config(tmp_path, task_ids=["tinyreg"], agent=f"replay:{replay}"))
    corrected = rescore(tmp_path / "run")
    reference = rescore(tmp_path / "run", "reference")
    assert corrected.summary.metrics["output_match"] == 1.0
    assert reference.summary.metrics["output_match"] == 0.5  # the reference penalised the extra key
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["mode"] == "reference"


@pytest.mark.slow
def test_rescoring_survives_a_corrupt_trajectory(tmp_path: Path) -> None:
    run(config(tmp_path, task_ids=["tinyreg", "tinyreg-lr"]))
    broken = next((tmp_path / "run" / "tasks").iterdir()) / "trajectory.json"
    broken.write_text("{ not json")
    outcome = rescore(tmp_path / "run")
    assert outcome.summary.n_tasks == 2
    # Unreadable: kept, marked, out of the means; not counted with the metrics it had before.
    (bad,) = [r for r in outcome.results if r.unscored]
    assert bad.task_id == broken.parent.name and "unreadable trajectory" in bad.unscored
    assert outcome.summary.n_scored == 1 and outcome.summary.unscored == 1
    assert outcome.summary.stats["output_match"].n == 1


@pytest.mark.slow
def test_rescoring_marks_missing_tasks_and_trajectories_unscored(tmp_path: Path) -> None:
    run(config(tmp_path, task_ids=["tinyreg", "tinyreg-lr", "nbsent"]))
    (tmp_path / "run" / "tasks" / "nbsent" / "trajectory.json").unlink()
    tasks = [t for t in load_tasks("demo") if t.task_id in ("tinyreg", "nbsent")]
    outcome = rescore(tmp_path / "run", tasks=tasks)
    reasons = {r.task_id: r.unscored for r in outcome.results}
    assert reasons["tinyreg"] is None
    assert reasons["tinyreg-lr"] == "task 'tinyreg-lr' is not among the tasks"
    assert reasons["nbsent"] == "its trajectory file tasks/nbsent/trajectory.json is missing"
    assert outcome.summary.n_scored == 1 and outcome.summary.metrics["output_match"] == 1.0
    rows = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert sorted(r["task_id"] for r in rows if r["unscored"]) == ["nbsent", "tinyreg-lr"]


@pytest.mark.slow
def test_a_run_re_scored_in_place_resumes_in_its_new_mode(tmp_path: Path) -> None:
    run(config(tmp_path, task_ids=["tinyreg"]))
    rescore(tmp_path / "run", "reference")
    with pytest.raises(RunDirError, match="mode 'reference' there, 'corrected' now"):
        run(config(tmp_path, task_ids=["tinyreg", "tinyreg-lr"]))
    outcome = run(config(tmp_path, task_ids=["tinyreg", "tinyreg-lr"], mode="reference"))
    assert outcome.summary.mode == "reference" and outcome.summary.modes == {"reference": 2}


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["corrected", "reference"])
def test_offline_scores_equal_online_ones(tmp_path: Path, mode: str) -> None:
    ids = ["tinyreg", "tinyreg_goal", "tinyreg-auto"]
    tasks = [t for s in ("expert", "masked", "auto") for t in load_tasks("demo", s) if t.task_id in ids]
    online = run(config(tmp_path, mode=mode), tasks=tasks)
    offline = rescore(tmp_path / "run", mode, out=tmp_path / "again")  # type: ignore[arg-type]
    assert len(online.results) == len(tasks) == 3
    by_id = {r.task_id: r for r in offline.results}
    for result in online.results:
        again = by_id[result.task_id]
        assert (again.metrics, again.details, again.mode) == (result.metrics, result.details, mode), result.task_id
    assert offline.summary.model_dump(exclude={"stats"}) == online.summary.model_dump(exclude={"stats"})


@pytest.mark.slow
def test_an_ad_hoc_query(tmp_path: Path) -> None:
    actions = tmp_path / "a.json"
    actions.write_text(json.dumps([{"type": "execute", "content": "!echo hi"}, {"type": "submit", "content": '"hi"'}]))
    (result,) = run(config(tmp_path, query="Say hi.", agent=f"replay:{actions}")).results
    assert result.task_id == "query" and result.submission == "hi"
    assert result.metrics.output_match is None


def test_an_infrastructure_failure_is_kept_apart(tmp_path: Path) -> None:
    bad_python = tmp_path / "python"
    bad_python.write_text("#!/bin/sh\nexit 1\n")
    bad_python.chmod(0o755)
    settings = config(tmp_path, task_ids=["tinyreg"])
    settings = settings.model_copy(
        update={"env": EnvConfig(sandbox=SandboxConfig(root=tmp_path / "s", task_python=bad_python))}
    )
    (result,) = run(settings).results
    assert result.status == "infra_error"
    assert "task Python" in (result.error or "")
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["n_scored"] == 0


def test_agent_specs() -> None:
    with pytest.raises(ConfigError, match=r"unknown agent 'nope'; known: .*gold"):
        create_agent("nope")
    with pytest.raises(AgentError, match="needs a file"):
        create_agent("replay")
    with pytest.raises(AgentError, match="cannot read actions"):
        create_agent("replay:/nonexistent.json")


def test_printed_answer_takes_the_last_json_line() -> None:
    assert printed_answer('Loaded\n{"acc": 0.5}\n\n') == {"acc": 0.5}
    assert printed_answer("{'acc': 0.5}") == {"acc": 0.5}
    assert printed_answer("acc is [1, 2]\n[1, 2]") == [1, 2]
    assert printed_answer("no answer here") is not None and not isinstance(printed_answer("x"), dict)


TRICKY_IDS = ["a/b", "a_b", "A_b", "a\\b", "..", ".", "", ".hidden", "x@2", "x", "x~1", "é", "e\u0301", "E" * 300]


def test_distinct_task_ids_get_distinct_directory_names() -> None:
    names = {
        (task_id, epoch): RunDir(Path("run")).task_dir(task_id, epoch).name
        for task_id in TRICKY_IDS
        for epoch in (1, 2)
    }
    # Distinct even where letter case is not (a case-insensitive file system), and safe as one path part.
    assert len({name.casefold() for name in names.values()}) == len(names)
    for name in names.values():
        assert "/" not in name and "\\" not in name and "\0" not in name and not name.startswith(".")
        assert len(name.encode()) <= 100
    # The ids every run so far has used keep their directory, so old runs read the same.
    for plain in ("tinyreg", "colbert_data,cpu", "spkmeans-news_cpu,configuration", "bert-lnl"):
        assert task_dirname(plain) == plain


@pytest.mark.slow
def test_task_ids_that_looked_alike_keep_their_own_trajectories(tmp_path: Path) -> None:
    ids = ["a/b", "a_b", "A_b", "x", "x@2"]
    actions = tmp_path / "a.json"
    actions.write_text(json.dumps([{"type": "execute", "content": "print('hello')"}]))
    outcome = run(config(tmp_path, agent=f"replay:{actions}"), tasks=[make_task(task_id) for task_id in ids])
    paths = {r.task_id: tmp_path / "run" / str(r.trajectory) for r in outcome.results}
    assert len(set(paths.values())) == len(ids)
    assert {task_id: Trajectory.load(path).task_id for task_id, path in paths.items()} == {i: i for i in ids}
    assert rescore(tmp_path / "run").summary.n_tasks == len(ids)


@pytest.mark.slow
def test_a_run_with_the_former_directory_names_still_loads_and_resumes(tmp_path: Path) -> None:
    actions = tmp_path / "a.json"
    actions.write_text(json.dumps([{"type": "execute", "content": "print('hello')"}]))
    settings = config(tmp_path, agent=f"replay:{actions}")
    (first,) = run(settings, tasks=[make_task("Data/set")]).results
    # As runs were written before: "/" made "_", letter case kept, no hash.
    runs = tmp_path / "run"
    (runs / str(first.trajectory)).parent.rename(runs / "tasks" / "Data_set")
    results = runs / "results.jsonl"
    results.write_text(results.read_text().replace(str(first.trajectory), "tasks/Data_set/trajectory.json"))
    assert rescore(runs).summary.n_tasks == 1
    from super_bench.report.runs import load_run
    from super_bench.report.viewer import task_payload

    loaded = load_run(runs)
    assert len(task_payload(loaded, loaded.results[0])["steps"]) == 1
    (again,) = run(settings, tasks=[make_task("Data/set")]).results
    assert again.trajectory == "tasks/Data_set/trajectory.json"  # kept, not run again


@pytest.mark.slow
def test_the_episode_output_limit_is_set_on_the_command_line(tmp_path: Path) -> None:
    from tests.support.helpers import cli

    actions = tmp_path / "flood.json"
    actions.write_text(json.dumps([{"type": "execute", "content": "print('x' * 50_000)"}] * 2))
    args = ["run", "--query", "Flood.", "--agent", f"replay:{actions}", "--out", str(tmp_path / "run")]
    result = cli(*args, "--output-limit", "64k", "--sandbox", "local")
    assert result.returncode == 0, result.stderr
    trajectory = Trajectory.load(tmp_path / "run" / "tasks" / "query")
    assert trajectory.metadata["output_limit_reached"] == {"limit": 65536, "step": 1}
    assert sum(len(step.raw_output) for step in trajectory.steps) < 65536 + 100_000 + 200
    for bad in ("lots", "10"):
        refused = cli(*args[:-1], str(tmp_path / "other"), "--output-limit", bad)
        assert refused.returncode == 2 and "--output-limit" in refused.stderr and "Traceback" not in refused.stderr
