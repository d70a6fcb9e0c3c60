"""``super-bench verify``: a run's actions replayed in a fresh sandbox configured as the run's, and its
answers checked against the reproduced outputs; resumable like a run, with workers; imported runs through
git mirrors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.support import helpers
from tests.support.helpers import CLONE, cli
from tests.support.mirror_fixtures import package_index
from tests.support.sandboxes import backend_settings, tiny_wheel
from tests.support.trajectory_notebooks import NbStep, write_notebook

from super_bench import EnvConfig, RunConfig, SandboxConfig, run
from super_bench.demo import BUNDLES
from super_bench.errors import ConfigError, RunDirError
from super_bench.report.viewer import build_view
from super_bench.runner.config import AgentChoice
from super_bench.runner.importer import import_trajectories
from super_bench.runner.rundir import RunDir
from super_bench.runner.verify import verify
from super_bench.runner.verify_env import replay_environment
from super_bench.runner.verify_records import VerifyResult, read_rows
from super_bench.trajectory import Trajectory

TRAIN = "%cd tinyreg\n" + helpers.TRAIN
ANSWER = json.loads(helpers.ANSWER)


def settings(tmp_path: Path, **more: Any) -> RunConfig:
    sandbox = SandboxConfig(backend="local", root=tmp_path / "sandboxes")
    return RunConfig(env=EnvConfig(cell_timeout=120, sandbox=sandbox), **more)


def replay_run(tmp_path: Path, name: str, actions: list[dict[str, Any]], task: str = "tinyreg") -> Path:
    """A run of the replay agent on one demo task."""
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(actions))
    out = tmp_path / name
    run(settings(tmp_path, task_ids=[task], agent=f"replay:{path}", out=out), progress=False)
    return out


@pytest.fixture(scope="module")
def gold(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A gold run of two tasks."""
    out = tmp_path_factory.mktemp("verify") / "gold"
    run(settings(out.parent, task_ids=["tinyreg", "kneser-wikitext"], out=out), progress=False)
    return out


@pytest.fixture(scope="module")
def silent(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run that submits tinyreg's right answer without ever printing it."""
    actions = [
        {"type": "execute", "content": CLONE},
        {"type": "execute", "content": TRAIN + " > /dev/null"},
        {"type": "submit", "content": ANSWER},
    ]
    return replay_run(tmp_path_factory.mktemp("verify"), "silent", actions)


def rows_of(run_dir: Path) -> dict[str, dict[str, Any]]:
    return {row["task_id"]: row for row in map(json.loads, (run_dir / "verify.jsonl").read_text().splitlines())}


@pytest.mark.slow
def test_a_run_that_printed_its_answer_is_observed_and_reproduces(gold: Path) -> None:
    results = {r.task_id: r for r in RunDir(gold).read_results()}
    assert {r.answer_provenance for r in results.values()} == {"observed"}
    kept = Trajectory.load(gold / str(results["tinyreg"].trajectory)).metadata["answer_provenance"]
    (shown,) = kept["fields"]
    assert (shown["field"], shown["value"], shown["text"]) == ("test_mse", 7.4031, "7.4031")
    assert shown == results["tinyreg"].details["provenance"]["fields"][0]
    assert json.loads((gold / "summary.json").read_text())["answer_observed"] == 1.0

    result = cli("verify", str(gold), "--task-ids", "tinyreg", "kneser-wikitext", "--workers", "2")
    assert result.returncode == 0, result.stderr
    assert "reproduced: 2 of 2" in result.stdout
    rows = rows_of(gold)
    assert {task: row["reproduced"] for task, row in rows.items()} == {"tinyreg": True, "kneser-wikitext": True}
    tinyreg = rows["tinyreg"]
    assert tinyreg["answer_provenance"] == "observed" and tinyreg["status"] == "completed"
    assert tinyreg["trajectory"] == "verify/tinyreg/trajectory.json"
    replayed = Trajectory.load(gold / tinyreg["trajectory"])
    assert [s.action.type for s in replayed.steps] == ["execute"] * 4  # the actions, not the submission
    assert replayed.submission is None and replayed.stop_reason == "agent_stopped"
    (field,) = tinyreg["fields"]
    assert field["field"] == "test_mse" and field["text"] == "7.4031"
    assert "7.4031" in replayed.steps[field["step"]].raw_output
    summary = json.loads((gold / "verify-summary.json").read_text())
    assert (summary["reproduced"], summary["not_reproduced"], summary["reproduced_fraction"]) == (2, 0, 1.0)
    assert not list((gold / "verify").glob(".replay-*"))  # the replay files are gone


def test_an_answer_never_printed_is_unobserved_and_does_not_reproduce(silent: Path, tmp_path: Path) -> None:
    (result,) = RunDir(silent).read_results()
    assert result.metrics.output_match == 1.0  # output match cannot tell
    assert result.answer_provenance == "unobserved"
    assert json.loads((silent / "summary.json").read_text())["answer_observed"] == 0.0

    scored = cli("score", str(silent), "--out", str(tmp_path / "scored"))
    assert "answers shown by the run's own output: 0 of 1" in scored.stdout, scored.stdout
    assert "not every value shown (see the viewer): tinyreg" in scored.stdout

    cli_result = cli("verify", str(silent))
    assert cli_result.returncode == 0, cli_result.stderr
    row = rows_of(silent)["tinyreg"]
    assert row["reproduced"] is False and row["status"] == "completed"
    assert "test_mse = 7.4031" in row["reason"]
    assert row["fields"][0]["step"] is None


@pytest.mark.slow
def test_verification_resumes_keeping_finished_replays(gold: Path) -> None:
    verify(gold, task_ids=["tinyreg"])
    before = {r.task_id: r for r in read_rows(RunDir(gold))}
    again = verify(gold)  # tinyreg's replay is kept; kneser-wikitext's as well, or run now
    assert {r.task_id for r in again.rows} == {"tinyreg", "kneser-wikitext"}
    assert {r.task_id: r for r in again.rows}["tinyreg"].finished_at == before["tinyreg"].finished_at
    # A row cut short by a crash is dropped, and its task replayed.
    lines = (gold / "verify.jsonl").read_text().splitlines()
    lines = [line[:40] if '"tinyreg"' in line else line for line in lines]
    (gold / "verify.jsonl").write_text("\n".join(lines) + "\n")
    resumed = {r.task_id: r for r in verify(gold).rows}
    assert resumed["tinyreg"].reproduced is True
    assert resumed["tinyreg"].finished_at != before["tinyreg"].finished_at
    assert len((gold / "verify.jsonl").read_text().splitlines()) == 2
    redone = {r.task_id: r for r in verify(gold, task_ids=["tinyreg"], redo=True).rows}
    assert redone["tinyreg"].finished_at != resumed["tinyreg"].finished_at
    assert redone["kneser-wikitext"].finished_at == resumed["kneser-wikitext"].finished_at


def test_the_replay_environment_keeps_the_runs_budgets_and_takes_the_options_given(silent: Path) -> None:
    original = RunDir(silent)
    env, mode, _ = replay_environment(original, {})
    # The run's budgets and mode; where code runs is the caller's choice (bwrap, network off), not the run's.
    assert (env.cell_timeout, env.sandbox.backend, env.sandbox.network, mode) == (120, "bwrap", False, "corrected")
    mirror = {"https://example.org/tinyreg": BUNDLES / "tinyreg.bundle"}
    env, _, record = replay_environment(original, {"backend": "local", "git_mirrors": mirror})
    assert env.sandbox.backend == "local" and env.sandbox.git_mirrors == mirror
    assert record.given == ["backend", "git_mirrors"] and env.cell_timeout == 120  # the rest kept
    with pytest.raises(ConfigError, match="sandbox settings"):
        replay_environment(original, {"memory_limit": -5})


def test_one_verification_at_a_time(silent: Path) -> None:
    (silent / "verify").mkdir(exist_ok=True)  # as a verification under way has made it, whatever ran before
    with RunDir(silent / "verify").lock(), pytest.raises(RunDirError, match="in use"):
        verify(silent)


def test_a_run_with_nothing_submitted_is_reproduced_when_it_fails_the_same_way(tmp_path: Path) -> None:
    actions = [{"type": "execute", "content": "print('no idea')"}, {"type": "execute", "content": "1/0"}]
    out = replay_run(tmp_path, "gave-up", actions)
    result = cli("verify", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    (row,) = read_rows(RunDir(out))
    assert row.reproduced is True and row.status == "completed" and row.divergence is None
    # The same run, recorded as if its division had worked: the replay fails where the recording did not.
    path = out / "tasks" / "tinyreg" / "trajectory.json"
    recorded = json.loads(path.read_text())
    recorded["steps"][1].update(outcome="ok", observation="0.5", output=None)
    path.write_text(json.dumps(recorded))
    result = cli("verify", str(out), "--redo")
    (row,) = read_rows(RunDir(out))
    assert row.reproduced is False and "did not fail the same way" in (row.reason or "")
    assert row.divergence is not None and (row.divergence.step, row.divergence.kind) == (1, "agent")
    assert row.divergence.replayed == "error: ZeroDivisionError: division by zero"
    assert "agent at step 1" in result.stdout


def test_a_run_whose_agent_submitted_nothing_is_reproduced_when_its_replay_fails_alike(tmp_path: Path) -> None:
    """The run stopped ``submitted`` with an empty answer; its replay (the submission left out) ends when
    its actions run out: the same way. verify records the task environment it replayed in."""
    actions = [{"type": "execute", "content": "1/0"}, {"type": "submit", "content": {}}]
    out = replay_run(tmp_path, "empty", actions)
    (result,) = RunDir(out).read_results()
    assert Trajectory.load(out / str(result.trajectory)).stop_reason == "submitted"
    outcome = verify(out, sandbox={"backend": "local", "network": True, "root": tmp_path / "sandboxes"})
    (row,) = outcome.rows
    assert row.reproduced is True and row.stop_reason == "agent_stopped", row
    environment = outcome.summary.environment
    assert environment is not None and environment.task_environment is not None
    assert environment.task_environment["summary"] and environment.task_environment["python"]
    saved = json.loads((out / "verify-summary.json").read_text())
    assert saved["environment"]["task_environment"]["interpreter"] == environment.task_environment["interpreter"]


def test_verifys_defaults_reproduce_a_run_that_installs_through_the_package_cache(tmp_path: Path) -> None:
    """A run that pip-installs a package and prints the answer from it, verified with verify's defaults
    (bwrap, the network off) and the index given: its pip reaches the package cache through the cache's
    socket, and the answer is reproduced."""
    settings = backend_settings("bwrap")
    wheel = tiny_wheel(tmp_path, "sbanswer", 7.4031)  # type: ignore[arg-type]
    actions = [
        {"type": "execute", "content": "!pip install -q sbanswer"},
        {"type": "execute", "content": "import sbanswer\nprint('test MSE:', sbanswer.VALUE)"},
        {"type": "submit", "content": ANSWER},
    ]
    with package_index({"sbanswer": {"1.0": (wheel, "2024-01-01T00:00:00Z")}}) as (index, _):
        path = tmp_path / "installs.json"
        path.write_text(json.dumps(actions))
        out = tmp_path / "installs"
        sandbox = SandboxConfig(backend="local", root=tmp_path / "sandboxes", pip_index=index)
        config = RunConfig(env=EnvConfig(cell_timeout=120, sandbox=sandbox), task_ids=["tinyreg"], out=out)
        run(config.model_copy(update={"agent": AgentChoice(name=f"replay:{path}")}), progress=False)
        outcome = verify(out, sandbox={**settings, "root": tmp_path / "replays", "pip_index": index})
    (row,) = outcome.rows
    assert row.reproduced is True, row
    assert outcome.summary.environment is not None
    assert outcome.summary.environment.sandbox["network"] is False
    replayed = Trajectory.load(out / str(row.trajectory))
    assert replayed.steps[0].exit_code == 0 and "test MSE: 7.4031" in replayed.steps[1].raw_output


def broken_by_the_environment(tmp_path: Path) -> tuple[Path, Path]:
    """A run whose first step imports a module this environment lacks, its recording edited to say that
    the import worked (as it did where the run was made) and that the next step printed the answer."""
    actions = [
        {"type": "execute", "content": "import tinyreg_speedups"},
        {"type": "execute", "content": "print('test MSE:', tinyreg_speedups.MSE)"},
        {"type": "submit", "content": ANSWER},
    ]
    out = replay_run(tmp_path, "drifted", actions)
    path = out / "tasks" / "tinyreg" / "trajectory.json"
    recorded = json.loads(path.read_text())
    assert "ModuleNotFoundError" in recorded["steps"][0]["observation"]
    recorded["steps"][0].update(outcome="ok", observation="", output=None)
    recorded["steps"][1].update(outcome="ok", observation="test MSE: 7.4031", output=None)
    path.write_text(json.dumps(recorded))
    return out, path


def test_a_replay_broken_by_the_environment_names_the_step_and_the_class(tmp_path: Path) -> None:
    out, recording = broken_by_the_environment(tmp_path)
    again = tmp_path / "again"
    args = ("--task-ids", "tinyreg", "--sandbox", "local", "--out", str(again))
    result = cli("run", "--agent", f"replay:{recording}", *args)
    assert result.returncode == 0, result.stdout + result.stderr
    (row,) = RunDir(again).read_results()
    assert row.replay_divergence is not None
    assert (row.replay_divergence.step, row.replay_divergence.kind) == (0, "environment")
    assert row.replay_divergence.recorded == "ok"
    assert row.replay_divergence.replayed == "error: ModuleNotFoundError: No module named 'tinyreg_speedups'"
    assert "diverged: environment at step 0" in result.stdout
    result = cli("verify", str(out))
    (checked,) = read_rows(RunDir(out))
    assert checked.reproduced is False and checked.divergence == row.replay_divergence
    assert "tinyreg: not reproduced (environment)" in result.stderr
    assert "environment at step 0" in result.stdout  # the table's column (its longer texts fold)


def test_newer_rows_are_refused_and_run_redo_removes_the_verification(tmp_path: Path) -> None:
    out = replay_run(
        tmp_path, "redo", [{"type": "execute", "content": "print(7.4031)"}, {"type": "submit", "content": ANSWER}]
    )
    verify(out)
    assert (out / "verify.jsonl").is_file() and (out / "verify").is_dir()
    row = json.loads((out / "verify.jsonl").read_text())
    (out / "verify.jsonl").write_text(json.dumps({**row, "schema_version": 99}) + "\n")
    with pytest.raises(RunDirError, match=r"verify\.jsonl:1: .*newer super-bench"):
        verify(out)
    actions = tmp_path / "redo.json"
    run(settings(tmp_path, task_ids=["tinyreg"], agent=f"replay:{actions}", out=out, redo=True), progress=False)
    assert not (out / "verify.jsonl").exists() and not (out / "verify").exists()


def test_the_viewer_shows_provenance_and_the_reproduction(silent: Path, tmp_path: Path) -> None:
    verify(silent)
    html = build_view(silent, tmp_path / "view.html").read_text(encoding="utf-8")
    data = json.loads(html.split('<script type="application/json" id="run-data">', 1)[1].split("</script>", 1)[0])
    assert data["columns"][-1] == "reproduced" and "answer" in data["columns"]
    row = data["rows"][0]
    assert row[data["columns"].index("answer")] == "unobserved" and row[data["columns"].index("reproduced")] == "no"
    assert data["answer_observed"] == 0.0 and data["reproduced"]["not_reproduced"] == 1


def imported_run(tmp_path: Path, url: str, printed: bool) -> Path:
    """A published-style notebook (the paper's ReAct-SUPER layout) that clones ``url`` and trains, imported."""
    source = tmp_path / "published_react-super_expert"
    write_notebook(
        source / "tinyreg" / "history.ipynb",
        "react-super",
        "Train tinyreg and report the test MSE.",
        [
            NbStep("execute", f"!git clone -q {url}", ""),
            NbStep("execute", TRAIN if printed else TRAIN + " > /dev/null", "Test MSE: 7.4031\n" if printed else ""),
            NbStep("submit", "{'test_mse': 7.4031}", ""),
        ],
        {"submitted": 1, "output_match": 1.0},
    )
    import_trajectories(source, tmp_path / "imported")
    return tmp_path / "imported"


def test_an_imported_run_is_verified_through_a_git_mirror(tmp_path: Path) -> None:
    url = "https://github.com/example-lab/tinyreg"
    imported = imported_run(tmp_path, url, printed=True)
    (row,) = RunDir(imported).read_results()
    assert row.answer_provenance == "observed" and row.mode == "recorded"
    mirror = f"{url}={BUNDLES / 'tinyreg.bundle'}"
    backend_settings("bwrap")  # its network cut: the repository can come from the mirror only
    result = cli("verify", str(imported), "--sandbox", "bwrap", "--network", "off", "--git-mirror", mirror)
    assert result.returncode == 0, result.stdout + result.stderr
    (checked,) = read_rows(RunDir(imported))
    assert checked.reproduced is True, checked
    replayed = Trajectory.load(imported / str(checked.trajectory))
    assert "Test MSE: 7.4031" in replayed.steps[1].raw_output


def test_an_imported_run_with_its_repository_unreachable_does_not_reproduce(tmp_path: Path) -> None:
    imported = imported_run(tmp_path, "https://github.com/example-lab/tinyreg", printed=True)
    sandbox = {**backend_settings("bwrap"), "network": False, "root": tmp_path / "sandboxes"}
    outcome = verify(imported, sandbox=sandbox)
    (checked,) = outcome.rows
    assert checked.reproduced is False and checked.status == "completed"


def test_an_imported_run_that_submitted_nothing_is_reproduced_when_its_replay_fails_alike(tmp_path: Path) -> None:
    """A published-style run with no exit statuses recorded and nothing submitted: replayed
    with verify's defaults, its shell step exits 0 (unknown to the recording, not a difference) and its
    division fails as recorded: reproduced. The same recording with the division printing a number is not,
    and the divergence names that step as the agent's."""
    traceback = "Traceback (most recent call last):\nZeroDivisionError: division by zero"
    source = tmp_path / "published_react-super_expert"
    steps = [NbStep("execute", "!echo ready", "ready\n"), NbStep("execute", "1/0", traceback)]
    write_notebook(source / "gaveup" / "history.ipynb", "react-super", "Divide.", steps, {"submitted": 0})
    imported = tmp_path / "imported"
    import_trajectories(source, imported)
    (result,) = RunDir(imported).read_results()
    recording = Trajectory.load(imported / str(result.trajectory))
    assert recording.steps[0].exit_code is None
    sandbox = {**backend_settings("bwrap"), "root": tmp_path / "sandboxes"}
    (row,) = verify(imported, sandbox=sandbox).rows
    assert row.reproduced is True and row.divergence is None, (row.reason, row.divergence)
    replayed = Trajectory.load(imported / str(row.trajectory))
    assert replayed.steps[0].exit_code == 0  # recorded as unknown: no difference
    path = imported / str(result.trajectory)
    edited = json.loads(path.read_text())
    edited["steps"][1].update(outcome="ok", observation="0.5", output=None)
    path.write_text(json.dumps(edited))
    (row,) = verify(imported, sandbox=sandbox, redo=True).rows
    assert row.reproduced is False and row.divergence is not None
    assert (row.divergence.kind, row.divergence.step) == ("agent", 1)


def test_verify_rows_read_back(tmp_path: Path) -> None:
    row = VerifyResult(task_id="t", reproduced=True)
    (tmp_path / "verify.jsonl").write_text(row.model_dump_json() + "\n" + "{not json\n")
    assert [r.task_id for r in read_rows(RunDir(tmp_path))] == ["t"]
