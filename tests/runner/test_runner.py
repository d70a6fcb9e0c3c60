"""The runner at scale: parallel workers, crash-safe resume, infrastructure failures kept apart and
retried, epochs with confidence intervals, the manifest, and the Ray executor."""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from tests.support.flaky_sandbox import FlakySandbox
from tests.support.helpers import make_task
from tests.support.model_server import error, model_server
from tests.support.sandboxes import kill_all

from super_bench import EnvConfig, RunConfig, SandboxConfig, load_tasks, run
from super_bench.cli._display import score_table
from super_bench.errors import ConfigError, RunDirError
from super_bench.models import ModelOptions
from super_bench.runner.config import Execution
from super_bench.runner.progress import RunProgress
from super_bench.runner.results import TaskResult, metric_stats, summarize
from super_bench.runner.rundir import RunDir
from super_bench.scoring import Metrics
from super_bench.trajectory import Usage

FOUR = ["tinyreg", "tinyreg-lr", "spkmeans-news", "kneser-wikitext"]


def config(tmp_path: Path, **settings: Any) -> RunConfig:
    sandbox = SandboxConfig(root=tmp_path / "sandboxes", **settings.pop("sandbox", {}))
    settings.setdefault("out", tmp_path / "run")
    return RunConfig(env=EnvConfig(cell_timeout=60, sandbox=sandbox), **settings)


def rows(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]


def scores(results: list[Any]) -> dict[tuple[str, int], Any]:
    return {(r.task_id, r.epoch): (r.status, r.metrics) for r in results}


def processes_with_home_under(root: Path) -> list[int]:
    """Processes whose HOME lies under ``root``: the kernels (and their children) of sandboxes there."""
    needle = f"HOME={root}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                environ = (entry / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if any(v.startswith(needle) for v in environ):
                found.append(int(entry.name))
    return found


@pytest.fixture
def cli_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """The environment of a CLI run whose sandboxes live under tmp_path; their leftovers are killed."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    yield {**os.environ, "COLUMNS": "200", "TMPDIR": str(tmp)}
    kill_all(processes_with_home_under(tmp_path))


def start_cli(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "super_bench", "run", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_until_some_finished_and_some_running(out: Path, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        results = out / "results.jsonl"
        finished = results.is_file() and results.read_text().count("\n") >= 1
        if finished and any((out / "tasks").glob("*/steps.jsonl")):
            return
        time.sleep(0.05)
    raise AssertionError(f"no task finished while another ran, in {timeout} s")


# -- workers ----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_two_workers_run_tasks_at_once_with_the_same_scores(tmp_path: Path) -> None:
    one = run(config(tmp_path, task_ids=FOUR, out=tmp_path / "one"))
    two = run(config(tmp_path, task_ids=FOUR, workers=2, out=tmp_path / "two"))
    assert scores(two.results) == scores(one.results)
    assert all(r.status == "completed" and r.metrics.output_match == 1.0 for r in two.results)
    assert sorted(r["task_id"] for r in rows(tmp_path / "two")) == sorted(FOUR)
    spans = sorted((r.started_at, r.finished_at) for r in two.results)
    assert any(later[0] < earlier[1] for earlier, later in itertools.pairwise(spans)), "no two tasks overlapped"
    assert not list((tmp_path / "sandboxes").iterdir()), "a sandbox was left behind"


THREADS = (
    'import os\nprint(*(os.environ.get(n) for n in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")))'
)


def threads_seen(out: Path, task_id: str) -> list[str]:
    trajectory = json.loads((out / "tasks" / task_id / "trajectory.json").read_text())
    return str(trajectory["steps"][0]["observation"]).split()


@pytest.mark.slow
def test_workers_share_the_cores_out_among_the_tasks_numerical_libraries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks = [
        make_task(f"threads-{i}", answer=i, solution=[THREADS, {"type": "submit", "content": i}]) for i in range(2)
    ]
    share = str(max(1, len(os.sched_getaffinity(0)) // 2))
    two = run(config(tmp_path, workers=2, out=tmp_path / "two"), tasks=tasks, progress=False)
    assert all(r.metrics.output_match == 1.0 for r in two.results)
    assert threads_seen(tmp_path / "two", "threads-0") == [share] * 3
    assert json.loads((tmp_path / "two" / "run.json").read_text())["executor"]["task_threads"] == int(share)
    # One worker: the libraries' own default, as in SUPER's environment.
    run(config(tmp_path, out=tmp_path / "one"), tasks=tasks, progress=False)
    assert threads_seen(tmp_path / "one", "threads-0") == ["None"] * 3
    # What the user sets or passes is kept.
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "5")
    sandbox = {"env": {"OMP_NUM_THREADS": "7"}, "pass_env": ("OPENBLAS_NUM_THREADS",)}
    run(config(tmp_path, workers=2, out=tmp_path / "mine", sandbox=sandbox), tasks=tasks, progress=False)
    assert threads_seen(tmp_path / "mine", "threads-1") == ["7", "5", share]


def test_the_thread_share_is_the_cores_per_worker_or_the_cpus_a_ray_task_reserves() -> None:
    from super_bench.runner.config import RayOptions

    cores = len(os.sched_getaffinity(0))
    assert RunConfig().task_threads() is None and RunConfig(workers=1).task_threads() is None
    assert RunConfig(workers=2).task_threads() == max(1, cores // 2)
    assert RunConfig(workers=10_000).task_threads() == 1
    assert RunConfig(executor="ray").task_threads() == 1
    assert RunConfig(executor="ray", ray=RayOptions(cpus=2.5)).task_threads() == 2
    assert RunConfig(executor="ray", ray=RayOptions(cpus=0.25)).task_threads() == 1


# -- resume ---------------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_run_killed_with_sigkill_resumes_to_one_row_per_task_and_the_same_scores(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    out = tmp_path / "run"
    args = ["--task-ids", *FOUR, "--workers", "2", "--out", str(out)]
    proc = start_cli(args, cli_env, tmp_path)
    try:
        wait_until_some_finished_and_some_running(out)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    before = {row["task_id"]: row for row in rows(out)}
    assert 1 <= len(before) < len(FOUR)
    kill_all(processes_with_home_under(tmp_path))  # kernels the killed run left running

    resumed = start_cli(args, cli_env, tmp_path)
    stdout, stderr = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, stdout + stderr
    assert f"resuming: {len(before)} of {len(FOUR)} tasks already finished" in stderr
    after = rows(out)
    assert sorted(row["task_id"] for row in after) == sorted(FOUR), "exactly one row per task"
    for row in after:  # the tasks finished before the kill were not run again
        if row["task_id"] in before:
            assert row == before[row["task_id"]]
    assert not list((out / "tasks").glob("*/steps.jsonl"))
    assert json.loads((out / "run.json").read_text())["resumed_at"]

    uninterrupted = run(config(tmp_path, task_ids=FOUR, workers=2, out=tmp_path / "whole"))
    resumed_results = [TaskResult.model_validate(row) for row in after]
    assert scores(resumed_results) == scores(uninterrupted.results)
    assert json.loads((out / "summary.json").read_text())["metrics"] == uninterrupted.summary.metrics


@pytest.mark.slow
def test_sigterm_stops_running_tasks_cleanly_and_the_run_resumes(tmp_path: Path, cli_env: dict[str, str]) -> None:
    out = tmp_path / "run"
    args = ["--task-ids", *FOUR, "--workers", "2", "--out", str(out)]
    proc = start_cli(args, cli_env, tmp_path)
    wait_until_some_finished_and_some_running(out)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert f"--out {out}" in stderr.split("resume with: ")[1]
    assert not processes_with_home_under(tmp_path), "a task's processes outlived the run"
    assert not list((tmp_path / "tmp").glob("super-bench-*")), "a sandbox directory was left behind"
    finished = rows(out)
    assert 1 <= len(finished) < len(FOUR) and all(r["status"] == "completed" for r in finished)

    resumed = start_cli(args, cli_env, tmp_path)
    stdout, stderr = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, stdout + stderr
    assert sorted(r["task_id"] for r in rows(out)) == sorted(FOUR)


@pytest.mark.slow
def test_resuming_into_a_different_run_is_refused_unless_redo(tmp_path: Path) -> None:
    run(config(tmp_path, task_ids=["tinyreg"]))
    actions = tmp_path / "null.json"
    actions.write_text(json.dumps([{"type": "submit", "content": None}]))
    other = config(tmp_path, task_ids=["tinyreg"], agent=f"replay:{actions}")
    with pytest.raises(RunDirError, match=r"holds a different run \(agent 'gold' there, 'replay:.*' now\).*--redo"):
        run(other)
    with pytest.raises(RunDirError, match="task_set 'expert' there, 'masked' now"):
        run(config(tmp_path, task_set="masked", task_ids=["tinyreg_goal"]))

    (result,) = run(other.model_copy(update={"redo": True})).results
    assert result.metrics.submitted == 0.0
    assert [row["metrics"]["submitted"] for row in rows(tmp_path / "run")] == [0.0]
    assert json.loads((tmp_path / "run" / "run.json").read_text())["identity"]["agent"].startswith("replay:")


def test_a_run_directory_is_not_shared_and_not_an_arbitrary_directory(tmp_path: Path) -> None:
    busy = RunDir(tmp_path / "run")
    busy.create()
    with busy.lock(), pytest.raises(RunDirError, match=r"in use by another super-bench run \(pid \d+\)"):
        run(config(tmp_path, task_ids=["tinyreg"]))
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "paper.txt").write_text("mine")
    with pytest.raises(RunDirError, match="not empty and holds no run"):
        run(config(tmp_path, task_ids=["tinyreg"], out=tmp_path / "notes"))
    assert (tmp_path / "notes" / "paper.txt").read_text() == "mine"


@pytest.mark.slow
def test_the_lock_is_the_running_process_and_goes_with_it(tmp_path: Path) -> None:
    busy = RunDir(tmp_path / "run")
    busy.create()
    hold = "import sys\nfrom super_bench.runner.rundir import RunDir\nwith RunDir(sys.argv[1]).lock():\n"
    hold += "    print('held', flush=True)\n    sys.stdin.readline()\n"
    holder = subprocess.Popen(
        [sys.executable, "-c", hold, str(busy.path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    with pytest.raises(RunDirError, match=rf"in use by another super-bench run \(pid {holder.pid}\)"), busy.lock():
        pass
    holder.communicate("\n")  # the other run ends
    assert holder.returncode == 0 and not (busy.path / ".lock").exists()
    # A lock file that a killed process left behind holds nothing.
    (busy.path / ".lock").write_text("pid 1\n")
    with busy.lock():
        assert (busy.path / ".lock").read_text() == f"pid {os.getpid()}\n"
    assert not (busy.path / ".lock").exists()
    run(config(tmp_path, task_ids=["tinyreg"]), progress=False)
    assert not (busy.path / ".lock").exists() and (busy.path / "summary.json").is_file()


@pytest.mark.slow
def test_a_run_from_python_says_where_it_writes_and_shows_its_progress(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    run(config(tmp_path, task_ids=["tinyreg"]))
    shown = capfd.readouterr().err
    assert f"super-bench: gold on 1 task(s), writing {tmp_path / 'run'}\n" in shown
    assert "1/1" in shown
    run(config(tmp_path, task_ids=["tinyreg"], out=tmp_path / "quiet"), progress=False)
    assert "writing" not in capfd.readouterr().err


@pytest.mark.slow
def test_a_torn_last_line_is_dropped_and_its_task_runs_again(tmp_path: Path) -> None:
    first = run(config(tmp_path, task_ids=["tinyreg", "tinyreg-lr"]))
    results = tmp_path / "run" / "results.jsonl"
    lines = results.read_text().splitlines()
    results.write_text(lines[0] + "\n" + lines[1][: len(lines[1]) // 2])  # a crash mid-write
    again = run(config(tmp_path, task_ids=["tinyreg", "tinyreg-lr"]))
    assert [json.loads(line)["task_id"] for line in results.read_text().splitlines()] == [
        json.loads(lines[0])["task_id"],
        json.loads(lines[1])["task_id"],
    ]
    assert scores(again.results) == scores(first.results)


# -- failure classes --------------------------------------------------------------------------------
@pytest.mark.slow
def test_infrastructure_failures_are_retried_then_counted_apart(tmp_path: Path, flaky: type[FlakySandbox]) -> None:
    flaky.failures.update({"tinyreg": 1, "spkmeans-news": 99})
    settings = config(tmp_path, task_ids=["tinyreg", "tinyreg-lr", "spkmeans-news"], sandbox={"backend": "flaky"})
    outcome = run(settings.model_copy(update={"execution": Execution(workers=2, infra_retries=2)}))
    by_id = {r.task_id: r for r in outcome.results}
    assert flaky.starts == {"tinyreg": 2, "tinyreg-lr": 1, "spkmeans-news": 3}
    assert (by_id["tinyreg"].status, by_id["tinyreg"].attempts) == ("completed", 2)
    assert by_id["tinyreg"].retry_errors == ["SandboxError: injected failure: the sandbox of tinyreg would not start"]
    assert (by_id["tinyreg-lr"].status, by_id["tinyreg-lr"].attempts) == ("completed", 1)
    failed = by_id["spkmeans-news"]
    assert (failed.status, failed.stop_reason, failed.attempts) == ("infra_error", "infra_error", 3)
    assert "would not start" in (failed.error or "") and len(failed.retry_errors) == 2
    # The attempts that failed on the infrastructure are time spent without result, apart from the rest.
    assert by_id["tinyreg"].waste is not None and by_id["tinyreg"].waste.retried_attempts > 0
    assert by_id["tinyreg-lr"].waste is not None and by_id["tinyreg-lr"].waste.retried_attempts == 0

    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert (summary["n_tasks"], summary["n_scored"], summary["infra_errors"], summary["retries"]) == (3, 2, 1, 3)
    assert summary["metrics"]["output_match"] == 1.0  # the infrastructure failure is not a zero
    assert summary["status_counts"] == {"completed": 2, "infra_error": 1}
    assert summary["waste"]["retried_attempts"] > by_id["tinyreg"].waste.retried_attempts
    console = Console(file=io.StringIO(), width=200)
    console.print(score_table(outcome.results, outcome.summary))
    table = console.file.getvalue()  # type: ignore[attr-defined]
    # The means leave the failure out: each metric is over the 2 tasks that ran.
    assert re.search(r"^│ tasks +│.*│ +2 │", table, re.MULTILINE), table
    assert "1 infrastructure failure(s), left out of the means; 3 attempt(s) retried" in table

    # Resuming reruns only the infrastructure failure, now that the sandbox starts.
    flaky.failures.clear()
    again = run(settings)
    assert flaky.starts["spkmeans-news"] == 4 and flaky.starts["tinyreg-lr"] == 1
    assert {r.task_id: r.status for r in again.results} == dict.fromkeys(by_id, "completed")
    assert len(rows(tmp_path / "run")) == 3


def test_a_bad_task_python_fails_every_attempt_as_infrastructure(tmp_path: Path) -> None:
    bad_python = tmp_path / "python"
    bad_python.write_text("#!/bin/sh\nexit 1\n")
    bad_python.chmod(0o755)
    outcome = run(config(tmp_path, task_ids=["tinyreg"], infra_retries=1, sandbox={"task_python": bad_python}))
    (result,) = outcome.results
    assert (result.status, result.attempts) == ("infra_error", 2)
    assert "task Python" in (result.error or "") and "task Python" in result.retry_errors[0]
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    error = manifest["task_environment"]["error"]
    assert f"cannot use {bad_python} as the task Python: it exited with status 1" in error


SUBMIT = "Thought: Done.\nAction: submit\n<content>\n1\n</content>"


def model_config(tmp_path: Path, base_url: str, **settings: Any) -> RunConfig:
    options = ModelOptions(base_url=base_url, cache=None, max_retries=0)
    return config(tmp_path, agent="react", model="openai/m", model_options=options, **settings)


@pytest.mark.slow
def test_a_model_service_that_is_down_is_retried_then_an_infrastructure_error(tmp_path: Path) -> None:
    with model_server(*[error(503, "down")] * 3) as server:
        (result,) = run(model_config(tmp_path, server.base_url, infra_retries=2), tasks=[make_task()]).results
    assert len(server.requests) == 3  # one per attempt: the SDK's own retries are off here
    assert (result.status, result.attempts) == ("infra_error", 3)
    assert "ModelUnavailableError" in (result.error or "") and "HTTP 503: down" in (result.error or "")


@pytest.mark.slow
def test_a_model_service_that_comes_back_completes_the_task(tmp_path: Path) -> None:
    with model_server(error(502, "restarting"), SUBMIT) as server:
        (result,) = run(model_config(tmp_path, server.base_url), tasks=[make_task()]).results
    assert len(server.requests) == 2
    assert (result.status, result.stop_reason, result.attempts, result.submission) == ("completed", "submitted", 2, 1)
    assert "HTTP 502: restarting" in result.retry_errors[0]


@pytest.mark.slow
def test_a_refused_request_is_the_agents_failure_and_not_retried(tmp_path: Path) -> None:
    with model_server(error(400, "context too long"), SUBMIT) as server:
        (result,) = run(model_config(tmp_path, server.base_url), tasks=[make_task()]).results
    assert len(server.requests) == 1
    assert (result.status, result.attempts) == ("agent_error", 1)
    assert "context too long" in (result.error or "")
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["n_scored"] == 1


@pytest.mark.slow
def test_a_configuration_error_stops_the_run_with_workers(tmp_path: Path) -> None:
    with model_server(error(401, "bad key"), error(401, "bad key")) as server:
        settings = model_config(tmp_path, server.base_url, workers=2)
        with pytest.raises(ConfigError, match="rejected the API key"):
            run(settings, tasks=[make_task("a"), make_task("b")])
    assert not (tmp_path / "run" / "results.jsonl").exists() or not rows(tmp_path / "run")


def test_an_unknown_executor_is_named() -> None:
    with pytest.raises(ConfigError, match=r"unknown executor 'slurm'; known: local, ray"):
        run(executor="slurm")


# -- epochs and statistics ---------------------------------------------------------------------------
@pytest.mark.slow
def test_epochs_run_each_task_k_times_with_different_seeds(tmp_path: Path) -> None:
    outcome = run(config(tmp_path, task_ids=["tinyreg", "tinyreg-lr"], epochs=2, seed=7, workers=2))
    assert [(r.task_id, r.epoch, r.seed) for r in outcome.results] == [
        ("tinyreg", 1, 7),
        ("tinyreg", 2, 8),
        ("tinyreg-lr", 1, 7),
        ("tinyreg-lr", 2, 8),
    ]
    tasks_dir = tmp_path / "run" / "tasks"
    assert sorted(p.name for p in tasks_dir.iterdir()) == ["tinyreg", "tinyreg-lr", "tinyreg-lr@2", "tinyreg@2"]
    assert json.loads((tasks_dir / "tinyreg@2" / "trajectory.json").read_text())["metadata"]["epoch"] == 2
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert (summary["n_tasks"], summary["epochs"], summary["metrics"]["output_match"]) == (4, 2, 1.0)
    assert summary["stats"]["output_match"] == {"mean": 1.0, "stderr": 0.0, "ci_low": 1.0, "ci_high": 1.0, "n": 2}
    # More epochs later: only the new ones run.
    more = run(config(tmp_path, task_ids=["tinyreg", "tinyreg-lr"], epochs=3, seed=7))
    assert len(more.results) == 6 and len(rows(tmp_path / "run")) == 6


def result(task_id: str, output_match: float | None, epoch: int = 1, status: str = "completed") -> TaskResult:
    return TaskResult(
        task_id=task_id, task_set="expert", epoch=epoch, status=status, metrics=Metrics(output_match=output_match)
    )  # type: ignore[arg-type]


def test_statistics_average_epochs_per_task_then_bootstrap_over_tasks() -> None:
    results = [result("a", 1.0), result("a", 0.0, 2), result("b", 1.0), result("b", 1.0, 2), result("c", 0.0)]
    results += [result("c", 0.0, 2), result("d", None), result("e", 1.0, status="infra_error")]
    stats = metric_stats([r for r in results if r.status != "infra_error"], "output_match")
    # Task means 0.5, 1.0, 0.0: mean 0.5, sample sd 0.5, standard error 0.5 / sqrt(3).
    assert stats.n == 3 and stats.mean == pytest.approx(0.5)
    assert stats.stderr == pytest.approx(0.5 / 3**0.5)
    assert stats.ci_low is not None and stats.ci_high is not None
    assert 0.0 <= stats.ci_low < 0.5 < stats.ci_high <= 1.0
    summary = summarize(results)
    assert summary.metrics["output_match"] == pytest.approx(3 / 6)  # the plain mean over results stays
    assert summary.stats["output_match"] == stats and summary.epochs == 2 and summary.infra_errors == 1
    assert summarize([result("a", 1.0)]).stats["output_match"].stderr is None


# -- the manifest and the live display ------------------------------------------------------------
@pytest.mark.slow
def test_the_manifest_records_versions_sources_and_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUPER_BENCH_BASE_ENV", str(tmp_path / "never-built"))
    source = tmp_path / "tasks.jsonl"
    source.write_text("".join(t.model_dump_json() + "\n" for t in load_tasks("demo", task_ids=["tinyreg"])))
    settings = config(tmp_path, source=str(source), seed=3)
    run(settings)
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    from super_bench._version import __version__

    assert manifest["super_bench_version"] == __version__
    assert manifest["python"] == sys.version.split()[0]
    from super_bench.sandbox import resolve_backend

    assert manifest["sandbox"]["backend"] == resolve_backend("auto")  # auto, resolved
    environment = manifest["task_environment"]
    assert environment["kind"] == "default" and "sandbox build" in environment["summary"]
    assert environment["packages"]["numpy"] and "pydantic" not in environment["packages"]
    assert "torch" in environment["missing"] and environment["paper_python"] == "3.10"
    assert environment["kernel_packages"]["ipykernel"]
    tasks = manifest["tasks"]
    assert tasks["sha256"] == hashlib.sha256((tmp_path / "run" / "tasks.jsonl").read_bytes()).hexdigest()
    assert tasks["source_sha256"] == hashlib.sha256(source.read_bytes()).hexdigest()
    assert manifest["identity"]["source"] == str(source) and manifest["identity"]["seed"] == 3
    assert manifest["config"]["agent"] == "gold" and manifest["command"] == sys.argv
    assert "resumed_at" not in manifest
    run(settings)
    again = json.loads((tmp_path / "run" / "run.json").read_text())
    assert again["created_at"] == manifest["created_at"] and len(again["resumed_at"]) == 1


def test_the_live_display_counts_running_failed_tokens_and_cost() -> None:
    progress = RunProgress()
    spent = Usage(model_calls=2, prompt_tokens=1000, completion_tokens=234, cost=0.5)
    progress.begin(5, [result("a", 1.0).model_copy(update={"usage": spent})])
    for task_id in "bcd":
        progress.task_started(make_task(task_id))
    progress.task_finished(result("b", None, status="agent_error"))
    progress.task_retried(result("c", None, status="infra_error"))
    console = Console(file=io.StringIO(), width=200)
    console.print(progress.progress.make_tasks_table(progress.progress.tasks))
    line = console.file.getvalue()  # type: ignore[attr-defined]
    assert "2/5" in line and "1 running" in line and "1 failed" in line and "1 retried" in line
    assert "ETA 0:00:" in line and "1,234 tokens $0.50" in line


# -- Ray ------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_the_ray_executor_runs_demo_tasks_with_the_local_executors_scores(tmp_path: Path) -> None:
    ray = pytest.importorskip("ray")
    # Two tasks of each set: what crosses to a worker and back differs by set, not by task (a cluster of two
    # nodes runs the whole Expert set: tests/e2e/test_ray_cluster.py).
    tasks = [t for task_set in ("expert", "masked", "auto") for t in load_tasks("demo", task_set)[:2]]
    local = run(config(tmp_path, workers=2, out=tmp_path / "local"), tasks=tasks)
    # "local": a new instance of our own, never a cluster another program left behind.
    ray.init(address="local", num_cpus=2, include_dashboard=False)
    try:
        on_ray = run(config(tmp_path, executor="ray", out=tmp_path / "ray"), tasks=tasks)
        # An error raised on a worker reaches the driver as itself: a configuration error stops the run.
        with model_server(error(401, "bad key")) as server:
            settings = model_config(tmp_path, server.base_url, executor="ray", out=tmp_path / "key")
            with pytest.raises(ConfigError, match="rejected the API key"):
                run(settings, tasks=[make_task()])
    finally:
        ray.shutdown()
    assert len(on_ray.results) == len(tasks) == len(rows(tmp_path / "ray"))
    assert scores(on_ray.results) == scores(local.results)
    assert all(r.status == "completed" for r in on_ray.results)
    for r in on_ray.results:  # the driver wrote each task's files into the run directory
        assert (tmp_path / "ray" / str(r.trajectory)).is_file()
        assert (tmp_path / "ray" / str(r.trajectory)).with_suffix(".ipynb").is_file()
    assert on_ray.summary.metrics == local.summary.metrics
    # Resuming on Ray finds everything done and starts nothing.
    again = run(config(tmp_path, executor="ray", out=tmp_path / "ray"), tasks=tasks)
    assert scores(again.results) == scores(on_ray.results)
