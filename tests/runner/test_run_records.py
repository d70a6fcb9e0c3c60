"""The run directory's records: typed and versioned (run.json, results rows, summary.json), read from
runs written before they had versions, and a resume that refuses every changed setting that decides
the scores and allows every other."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from super_bench import EnvConfig, RunConfig, SandboxConfig, rescore, run
from super_bench.errors import RunDirError
from super_bench.models import ModelOptions
from super_bench.report.runs import load_run
from super_bench.runner.manifest import NOT_IDENTITY, flat_settings, identity
from super_bench.runner.records import RUN_SCHEMA_VERSION
from super_bench.runner.rundir import RunDir

OLD_RUN = Path(__file__).parents[1] / "data" / "run-v1"  # written by super-bench 0.1.0, before records had versions


def old_run(tmp_path: Path) -> Path:
    copy = tmp_path / "old"
    shutil.copytree(OLD_RUN, copy)
    return copy


def old_config(out: Path, **env: Any) -> RunConfig:
    """The settings the old run was made with (``super-bench run --task-ids tinyreg --seed 7 --sandbox local``)."""
    sandbox = {"backend": "local", **env.pop("sandbox", {})}
    return RunConfig(task_ids=["tinyreg"], seed=7, out=out, env=EnvConfig(sandbox=SandboxConfig(**sandbox), **env))


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# -- runs written before records had versions ----------------------------------------------------------------
def test_an_old_run_reads_as_the_current_version(tmp_path: Path) -> None:
    run_dir = RunDir(old_run(tmp_path))
    assert "schema_version" not in json.loads((OLD_RUN / "run.json").read_text())
    manifest = run_dir.read_manifest()
    assert manifest is not None and manifest.schema_version == RUN_SCHEMA_VERSION
    assert manifest.identity is not None and "limits" not in manifest.identity
    assert (manifest.identity["env.cell_timeout"], manifest.identity["env.max_steps"]) == (300.0, 100)
    assert manifest.identity["agent"] == "gold" and manifest.tasks is not None and manifest.tasks.n_tasks == 1
    assert manifest.task_environment is not None and manifest.task_environment["kind"] == "default"
    (row,) = run_dir.read_results()
    assert row.schema_version == RUN_SCHEMA_VERSION and row.metrics.output_match == 1.0
    summary = run_dir.read_summary()
    assert summary is not None and summary.schema_version == RUN_SCHEMA_VERSION and summary.metrics["landmarks"] == 1.0

    report = load_run(run_dir.path)
    assert (report.agent, report.model, report.task_set, report.mode) == ("gold", None, "expert", "corrected")
    assert report.manifest.created_at is not None and report.manifest.created_at.year == 2026


def test_an_old_run_resumes_comparing_the_settings_both_versions_name(tmp_path: Path) -> None:
    path = old_run(tmp_path)
    rows = lines(path / "results.jsonl")
    # Version 1 named no sandbox setting: a changed memory limit cannot be told apart, and resumes.
    outcome = run(old_config(path, sandbox={"memory_limit": "4g"}), progress=False)
    assert [r.metrics.output_match for r in outcome.results] == [1.0]
    now = lines(path / "results.jsonl")  # nothing ran again; the row is rewritten in the current version
    # Figures of later versions, which an old row does not know: version 3's, whether a replay diverged, and
    # version 4's failure cause (not analysed: null, until `super-bench analyze`).
    unknown = {"waste": None, "waited": 0.0, "node": None, "replay_divergence": None, "failure": None} | {
        "identity_sha256": None  # version 5: the digest of the identity, which an old row does not carry
    }
    assert [row.pop("schema_version") for row in now] == [RUN_SCHEMA_VERSION]
    assert [row.pop("answer_provenance") for row in now] == [None]  # scored before answers were traced
    assert now == [{**row, **unknown} for row in rows]
    manifest = json.loads((path / "run.json").read_text())
    assert manifest["schema_version"] == RUN_SCHEMA_VERSION and len(manifest["resumed_at"]) == 1
    assert manifest["created_at"].startswith("2026-11-30T09:26:48")
    assert manifest["identity"]["env.sandbox.memory_limit"] == 4 * 2**30  # written whole from now on
    assert json.loads((path / "summary.json").read_text())["schema_version"] == RUN_SCHEMA_VERSION

    path = tmp_path / "again"
    shutil.copytree(OLD_RUN, path)
    with pytest.raises(RunDirError, match=r"different run \(env\.cell_timeout 300\.0 there, 60\.0 now\).*--redo"):
        run(old_config(path, cell_timeout=60), progress=False)


def test_an_old_run_rescores(tmp_path: Path) -> None:
    outcome = rescore(old_run(tmp_path), "reference", out=tmp_path / "rescored")
    assert [r.metrics.output_match for r in outcome.results] == [1.0]
    assert all(row["schema_version"] == RUN_SCHEMA_VERSION for row in lines(tmp_path / "rescored" / "results.jsonl"))
    manifest = json.loads((tmp_path / "rescored" / "run.json").read_text())
    assert manifest["schema_version"] == RUN_SCHEMA_VERSION and manifest["identity"]["mode"] == "reference"
    assert manifest["identity"]["env.max_compute"] == 1800.0 and manifest["rescored"][-1]["mode"] == "reference"
    assert manifest["rescored"][-1]["from"] == str((tmp_path / "old").resolve())
    assert manifest["config"]["out"] == "runs/tinyreg"  # the rest as it was


# -- records of a later version, and records that are not records ------------------------------------------------
def test_records_of_a_later_version_are_refused_and_left_as_they_are(tmp_path: Path) -> None:
    path = old_run(tmp_path)
    row = json.loads((path / "results.jsonl").read_text())
    newer = path / "results.jsonl"
    newer.write_text(json.dumps(row) + "\n" + json.dumps({**row, "task_id": "other", "schema_version": 99}) + "\n")
    written = newer.read_text()
    with pytest.raises(
        RunDirError, match=r"results\.jsonl:2: it was written by a newer super-bench \(schema version 99"
    ):
        run(old_config(path), progress=False)
    with pytest.raises(RunDirError, match="upgrade super-bench"):
        load_run(path)
    assert newer.read_text() == written

    path = tmp_path / "manifest"
    shutil.copytree(OLD_RUN, path)
    manifest = json.loads((path / "run.json").read_text())
    newer_version = RUN_SCHEMA_VERSION + 1
    (path / "run.json").write_text(json.dumps({**manifest, "schema_version": newer_version}))
    with pytest.raises(
        RunDirError, match=rf"run\.json: it was written by a newer super-bench \(schema version {newer_version};"
    ):
        run(old_config(path), progress=False)
    with pytest.raises(RunDirError, match=r"run\.json: it was written by a newer super-bench"):
        load_run(path)

    path = tmp_path / "summary"
    shutil.copytree(OLD_RUN, path)
    (path / "summary.json").write_text(json.dumps({"schema_version": newer_version, "n_tasks": 1}))
    with pytest.raises(RunDirError, match=r"summary\.json: it was written by a newer super-bench"):
        load_run(path)
    (path / "summary.json").write_text("{not json")
    assert load_run(path).mode == "corrected"  # an unreadable summary is only a warning: the rows say the rest


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", r"run\.json cannot be read"),
        ('{"created_at": "yesterday"}', r"not a valid run\.json \(created_at: "),
        ('{"schema_version": "2"}', r"not a valid run\.json \(.*schema_version must be a whole number from 1, not '2'"),
        ('{"schema_version": 0}', r"schema_version must be a whole number from 1, not 0"),
        ('{"identity": ["agent"]}', r"not a valid run\.json \(identity: "),
    ],
)
def test_an_unreadable_run_json_is_a_clear_error_and_left_as_it_is(tmp_path: Path, content: str, message: str) -> None:
    path = old_run(tmp_path)
    (path / "run.json").write_text(content)
    with pytest.raises(RunDirError, match=message):
        run(old_config(path), progress=False)
    assert (path / "run.json").read_text() == content
    assert load_run(path).agent is None  # a report still shows the results, without who ran them


def test_the_records_of_a_new_run_carry_their_version(finished_run: Path) -> None:
    assert json.loads((finished_run / "run.json").read_text())["schema_version"] == RUN_SCHEMA_VERSION
    assert json.loads((finished_run / "summary.json").read_text())["schema_version"] == RUN_SCHEMA_VERSION
    assert [row["schema_version"] for row in lines(finished_run / "results.jsonl")] == [RUN_SCHEMA_VERSION]


# -- the identity of a run ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("identity")
    actions = root / "submit.json"
    actions.write_text(json.dumps([{"type": "submit", "content": None}]))
    run(config(root, root / "run"), progress=False)
    return root / "run"


def config(root: Path, out: Path, *, sandbox: dict[str, Any] | None = None, **settings: Any) -> RunConfig:
    env = {"cell_timeout": 60, **settings.pop("env", {})}
    box = SandboxConfig(**{"root": root / "sandboxes", **(sandbox or {})})
    return RunConfig(
        task_ids=["tinyreg"],
        agent=f"replay:{root / 'submit.json'}",
        out=out,
        env=EnvConfig(sandbox=box, **env),
        **settings,
    )


def resumed(finished_run: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(finished_run, copy)
    return copy


def bare_repository(path: Path) -> Path:
    subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)
    return path


@pytest.mark.parametrize(
    ("name", "change"),
    [
        ("env.sandbox.memory_limit", lambda tmp: {"sandbox": {"memory_limit": "2g"}}),
        ("env.sandbox.network", lambda tmp: {"sandbox": {"network": False}}),
        ("env.sandbox.max_processes", lambda tmp: {"sandbox": {"max_processes": 64}}),
        ("env.sandbox.pip_index", lambda tmp: {"sandbox": {"pip_index": "http://127.0.0.1:9/simple"}}),
        ("env.sandbox.packages_as_of", lambda tmp: {"sandbox": {"packages_as_of": "2024-01-01"}}),
        (
            "env.sandbox.git_mirrors",
            lambda tmp: {"sandbox": {"git_mirrors": {"https://github.com/a/b": bare_repository(tmp / "b.git")}}},
        ),
        ("env.sandbox.env", lambda tmp: {"sandbox": {"env": {"HF_HUB_OFFLINE": "1"}}}),
        ("env.episode_output_limit", lambda tmp: {"env": {"episode_output_limit": 10_000}}),
        ("env.observation_limit", lambda tmp: {"env": {"observation_limit": 5_000}}),
        ("env.pre_execute_timeout", lambda tmp: {"env": {"pre_execute_timeout": 60}}),
        ("model_options.base_url", lambda tmp: {"model_options": ModelOptions(base_url="http://127.0.0.1:9/v1")}),
    ],
)
def test_a_changed_setting_that_decides_scores_is_refused(
    finished_run: Path, tmp_path: Path, name: str, change: Any
) -> None:
    path = resumed(finished_run, tmp_path)
    written = {p.name: p.read_bytes() for p in path.iterdir() if p.is_file()}
    changed = config(finished_run.parent, path, **change(tmp_path))
    with pytest.raises(RunDirError, match=rf"holds a different run \({re.escape(name)} .* there, .* now\)"):
        run(changed, progress=False)
    assert {p.name: p.read_bytes() for p in path.iterdir() if p.is_file()} == written


def test_a_changed_setting_that_does_not_decide_scores_resumes(finished_run: Path, tmp_path: Path) -> None:
    path = resumed(finished_run, tmp_path)
    before = (path / "results.jsonl").read_text()
    changed = config(
        finished_run.parent,
        path,
        sandbox={"keep": True, "root": tmp_path / "elsewhere"},
        workers=3,
        infra_retries=0,
        model_options=ModelOptions(cache=None, timeout=5, max_retries=0),
    )
    outcome = run(changed, progress=False)
    assert [r.metrics.submitted for r in outcome.results] == [0.0]
    assert (path / "results.jsonl").read_text() == before  # nothing ran again
    manifest = json.loads((path / "run.json").read_text())
    assert manifest["executor"]["workers"] == 3 and len(manifest["resumed_at"]) == 1


def test_every_setting_is_identity_but_those_listed_and_the_list_names_real_settings() -> None:
    names = set(flat_settings(RunConfig()))
    assert {"agent", "seed", "source", "workers", "ray.cpus", "model_options.cache"} <= names  # flat, as ever
    assert {"env.sandbox.memory_limit", "env.sandbox.git_mirrors", "env.sandbox.task_python"} <= names
    for listed in NOT_IDENTITY:
        assert any(n == listed or n.startswith(f"{listed}.") for n in names), f"{listed} is no setting"
    kept = set(identity(RunConfig()))
    assert kept == {n for n in names if not any(n == x or n.startswith(f"{x}.") for x in NOT_IDENTITY)}
    assert {"workers", "out", "ray.address", "env.sandbox.keep", "model_options.cache"}.isdisjoint(kept)


def test_redo_replaces_a_run_whose_run_json_cannot_be_read(tmp_path: Path) -> None:
    path = old_run(tmp_path)
    (path / "run.json").write_text("{not json")
    outcome = run(old_config(path).model_copy(update={"redo": True}), progress=False)
    assert [r.metrics.output_match for r in outcome.results] == [1.0]
    manifest = RunDir(path).read_manifest()
    assert manifest is not None and manifest.identity is not None and manifest.identity["seed"] == 7


def test_the_runner_doc_names_every_setting_of_the_identity_and_every_other() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "runner.md").read_text()
    section = doc.split("## Resume", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`([\w.*]+)`", section))
    for name in identity(RunConfig()):
        assert {name, name.rsplit(".", 1)[-1]} & named, f"docs/runner.md#resume does not name {name}"
    for name in NOT_IDENTITY:
        assert {name, f"{name}.*"} & named, f"docs/runner.md#resume does not say that {name} is not identity"
