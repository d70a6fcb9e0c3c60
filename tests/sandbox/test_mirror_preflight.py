"""The mirror pre-flight: a git mirror agent code could not clone stops a run before its first task, naming
the mirror, the file and the fix; a mirror's stray files that git never reads to serve a clone (a partial
clone's root-only ``.promisor``) do not break a clone, which goes through the pack protocol."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from tests.support.helpers import REFERENCE_REPOS, REFERENCE_TRAJECTORIES, cli, make_task
from tests.support.mirror_fixtures import GIT_ENV, git, give_away, make_mirror, make_repo
from tests.support.sandboxes import backend_settings

from super_bench import run
from super_bench.cli import main
from super_bench.environment import EnvConfig
from super_bench.errors import SandboxError
from super_bench.runner.paper_notebooks import notebook_trajectory
from super_bench.sandbox import SandboxConfig, check_backend, supply
from super_bench.sandbox.supply import git_config_file, mirror_problems
from super_bench.tasks.model import Task

URL = "https://git.invalid/lab/proj"
AS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="agent code runs as a user of its own only when run as root")


def partial_mirror(path: Path) -> Path:
    """A bare partial clone (``--filter=blob:none``) of a two-commit repository: it lacks every file's content."""
    source = path.parent / f".src-{path.name}"
    make_repo(source, "first")
    (source / "MORE").write_text("more\n")
    git("add", "MORE", cwd=source)
    git("commit", "-q", "-m", "more", cwd=source)
    git("config", "uploadpack.allowFilter", "true", cwd=source)
    git("clone", "-q", "--bare", "--filter=blob:none", f"file://{source}", str(path))
    give_away(path)
    return path


def packed_mirror(path: Path, mark: str) -> Path:
    """A bare mirror whose objects are in one pack (as a fetched repository's are)."""
    mirror = make_mirror(path, "bare", mark)
    git("-c", "safe.directory=*", "--git-dir", str(mirror), "repack", "-adq")
    give_away(mirror)
    return mirror


def root_only_promisor(mirror: Path) -> Path:
    """A ``.promisor`` marker beside the mirror's pack, readable by its owner alone (as a partial clone keeps one)."""
    (pack,) = (mirror / "objects" / "pack").glob("*.pack")
    marker = pack.with_suffix(".promisor")
    marker.write_text("0000000000000000000000000000000000000000 refs/heads/main\n")
    marker.chmod(0o600)
    return marker


def test_a_mirror_missing_a_blob_at_head_is_named_with_the_fix(tmp_path: Path) -> None:
    mirror = partial_mirror(tmp_path / "proj.git")
    (problem,) = mirror_problems(SandboxConfig(git_mirrors={URL: mirror}))
    assert f"git mirror for {URL} ({mirror})" in problem
    assert "2 object(s) a clone needs are missing" in problem  # the contents of MARK and MORE
    assert "fetch --refetch" in problem and "git clone --mirror" in problem


def test_a_pinned_commit_the_mirror_lacks_is_named(tmp_path: Path) -> None:
    mirror = packed_mirror(tmp_path / "proj.git", "x")
    head = git("--git-dir", str(mirror), "rev-parse", "HEAD").strip()
    assert mirror_problems(SandboxConfig(git_mirrors={URL: mirror}), {URL + ".git": [head[:10]]}) == []
    (problem,) = mirror_problems(SandboxConfig(git_mirrors={URL: mirror}), {URL: ["0" * 40]})
    assert "0" * 40 in problem and "is not in it" in problem


def test_files_other_users_cannot_read_are_named_when_agent_code_is_another_user(tmp_path: Path) -> None:
    mirror = packed_mirror(tmp_path / "proj.git", "x")
    root_only_promisor(mirror)  # only looked for by git: no problem
    assert mirror_problems(SandboxConfig(git_mirrors={URL: mirror}), other_user=True) == []
    (pack,) = (mirror / "objects" / "pack").glob("*.pack")
    pack.chmod(0o600)
    (problem,) = mirror_problems(SandboxConfig(git_mirrors={URL: mirror}), other_user=True)
    assert f"cannot read objects/pack/{pack.name}" in problem and f"chmod -R a+rX {mirror}" in problem
    # The harness's own user reads it: nothing to say when agent code runs as that user.
    assert mirror_problems(SandboxConfig(git_mirrors={URL: mirror}), other_user=False) == []


def test_a_bundle_other_users_cannot_read_is_named(tmp_path: Path) -> None:
    bundle = make_mirror(tmp_path / "proj.bundle", "bundle", "x")
    bundle.chmod(0o600)
    (problem,) = mirror_problems(SandboxConfig(git_mirrors={URL: bundle}), other_user=True)
    assert str(bundle) in problem and "not readable by other users" in problem


@given(st.lists(st.text("0123456789abcdef", min_size=40, max_size=40), max_size=4), st.booleans())
def test_a_bundle_needing_commits_it_lacks_is_named(tmp_path_factory: Any, prerequisites: list[str], v3: bool) -> None:
    bundle = tmp_path_factory.mktemp("b") / "proj.bundle"
    header = "# v3 git bundle\n@object-format=sha1\n" if v3 else "# v2 git bundle\n"
    header += "".join(f"-{p} a prerequisite\n" for p in prerequisites) + f"{'1' * 40} refs/heads/main\n\n"
    bundle.write_bytes(header.encode() + b"PACK\x00-\n\n-")  # the pack's bytes are no header lines
    problems = mirror_problems(SandboxConfig(git_mirrors={URL: bundle}))
    if prerequisites:
        (problem,) = problems
        assert f"needs {len(prerequisites)} commit(s)" in problem and prerequisites[0] in problem
    else:
        assert problems == []


@pytest.mark.parametrize("name", ["proj.git", "a b%20c.git"])
def test_a_repository_mirror_is_served_through_the_pack_protocol(tmp_path: Path, name: str) -> None:
    mirror = packed_mirror(tmp_path / name, "packed")
    root_only_promisor(mirror)
    config = git_config_file(SandboxConfig(git_mirrors={URL: mirror}))
    env = {**GIT_ENV, "GIT_CONFIG_SYSTEM": str(config)}
    subprocess.run(["git", "clone", "-q", URL + ".git", str(tmp_path / "c")], env=env, check=True, cwd=tmp_path)
    assert (tmp_path / "c" / "MARK").read_text() == "packed\n"
    # A clone of a local path copies the mirror's files, its markers too; through the pack protocol, only objects.
    assert not list((tmp_path / "c" / ".git" / "objects" / "pack").glob("*.promisor"))


def test_a_run_stops_before_its_first_task_on_a_mirror_missing_a_blob(tmp_path: Path) -> None:
    mirror = partial_mirror(tmp_path / "mirrors" / "proj.git")
    with pytest.raises(SandboxError, match=r"git mirror for .*proj\.git\): 2 object\(s\) a clone needs are missing"):
        run(
            tasks=[make_task(github_repo=URL)],
            agent="gold",
            out=tmp_path / "run",
            progress=False,
            env=EnvConfig(sandbox=SandboxConfig(backend="local", git_mirrors={URL: mirror})),
        )
    assert not (tmp_path / "run").exists()  # no task started, nothing recorded as the agent's


def test_a_run_of_the_command_line_checks_its_mirrors_once_and_records_each_mirrors_head(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mirror = make_mirror(tmp_path / "mirrors" / "proj.git", "bare", "served")
    checked: list[SandboxConfig] = []
    real = supply.check_mirrors

    def counted(config: SandboxConfig, *args: Any, **kwargs: Any) -> None:
        checked.append(config)
        real(config, *args, **kwargs)

    monkeypatch.setattr(supply, "check_mirrors", counted)
    out = tmp_path / "run"
    args = ["run", "--sandbox", "local", "--limit", "1", "--out", str(out), "--git-mirror", f"{URL}={mirror}"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert [config.git_mirrors for config in checked] == [{URL: mirror}]
    head = git("-c", "safe.directory=*", f"--git-dir={mirror}", "rev-parse", "HEAD").strip()
    recorded = json.loads((out / "run.json").read_text())["sandbox"]["git_mirrors"]
    assert recorded == {URL: {"path": str(mirror), "kind": "bare", "head": head}}


@AS_ROOT
def test_bwrap_refuses_a_mirror_whose_pack_its_user_cannot_read(tmp_path: Path) -> None:
    settings = backend_settings("bwrap")
    mirror = packed_mirror(tmp_path / "proj.git", "x")
    (pack,) = (mirror / "objects" / "pack").glob("*.pack")
    pack.chmod(0o600)
    with pytest.raises(SandboxError, match=f"cannot read objects/pack/{pack.name}"):
        check_backend(SandboxConfig(**settings, git_mirrors={URL: mirror}))


@pytest.mark.slow
@AS_ROOT
def test_a_partial_clones_root_only_promisor_file_does_not_break_a_clone_in_bwrap(
    env_factory: Any, tmp_path: Path
) -> None:
    mirror = packed_mirror(tmp_path / "proj.git", "served")
    root_only_promisor(mirror)
    settings = {**backend_settings("bwrap"), "git_mirrors": {URL: mirror}}
    check_backend(SandboxConfig(**settings))
    env = env_factory(cell_timeout=120, sandbox=settings)
    env.reset(make_task())
    step = env.step({"type": "execute", "content": f"!git clone -q {URL} c && cat c/MARK"})
    assert step.raw_output.strip().endswith("served"), step.raw_output


def test_tasks_validate_checks_commits_in_a_mirror_and_the_mirror_itself(tmp_path: Path) -> None:
    good = packed_mirror(tmp_path / "good.git", "x")
    head = git("--git-dir", str(good), "rev-parse", "HEAD").strip()
    partial = partial_mirror(tmp_path / "partial.git")
    rows = [
        {"task_id": "a", "query": "q", "github_repo": URL, "git_commit": head, "answer": 1},
        {"task_id": "b", "query": "q", "github_repo": URL + "2", "answer": 1},
    ]
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = cli("tasks", "validate", str(tasks), "--offline", "--git-mirror", f"{URL}={good}")
    assert done.returncode == 0, done.stderr
    assert "offline: 1 repository not checked" in done.stderr  # the second's: the mirrored one needs no network
    done = cli("tasks", "validate", str(tasks), "--git-mirror", f"{URL}={good}", "--git-mirror", f"{URL}2={partial}")
    assert done.returncode == 1
    assert f"git mirror for {URL}2 ({partial}): 2 object(s) a clone needs are missing" in done.stderr


# -- the real repository --------------------------------------------------------------------------------------
TASK = "unsupervisedhierarchicalsymbolicregression"
REAL_URL = "https://github.com/SiyuLou/UnsupervisedHierarchicalSymbolicRegression"
BUNDLE = REFERENCE_REPOS / "UnsupervisedHierarchicalSymbolicRegression.bundle"
NOTEBOOK = REFERENCE_TRAJECTORIES / "react-super_expert" / TASK / "history.ipynb"


@pytest.mark.slow
@AS_ROOT
def test_gpt4o_recorded_clone_of_a_real_repository_works_from_a_mirror_holding_a_root_only_file(
    tmp_path: Path,
) -> None:
    """GPT-4o's recorded actions up to its first install (the clone, then reading the repository's files),
    replayed under bwrap from a bare mirror of the real repository that holds a root-only ``.promisor``."""
    for needed in (BUNDLE, NOTEBOOK):
        if not needed.is_file():
            pytest.skip(
                f"{needed} is not here (set SUPER_BENCH_REFERENCE_REPOS and SUPER_BENCH_REFERENCE_TRAJECTORIES)"
            )
    mirror = tmp_path / "mirrors" / "UnsupervisedHierarchicalSymbolicRegression.git"
    git("clone", "-q", "--mirror", str(BUNDLE), str(mirror))
    give_away(mirror)
    marker = root_only_promisor(mirror)
    assert marker.stat().st_mode & 0o777 == 0o600
    recorded = notebook_trajectory(NOTEBOOK, TASK)
    before_install = [recorded.steps[i] for i in (0, 1, 3, 6)]
    assert "!git clone" in str(before_install[0].action.content) and "pip" not in str(before_install[-1].action)
    actions = tmp_path / "actions.json"
    actions.write_text(recorded.model_copy(update={"steps": before_install}).model_dump_json())
    outcome = run(
        tasks=[Task(task_id=TASK, query=recorded.query, github_repo=REAL_URL)],
        agent=f"replay:{actions}",
        out=tmp_path / "run",
        infra_retries=0,
        progress=False,
        env=EnvConfig(sandbox=SandboxConfig(**backend_settings("bwrap"), git_mirrors={REAL_URL: mirror})),
    )
    (result,) = outcome.results
    assert result.status == "completed", result
    replayed = json.loads((outcome.run_dir.task_dir(TASK) / "trajectory.json").read_text())["steps"]
    clone = replayed[0]["observation"]
    assert "Cloning into 'UnsupervisedHierarchicalSymbolicRegression'" in clone and "Permission denied" not in clone
    assert clone.strip().endswith("Resolving deltas: 100% (13/13), done."), clone  # served as GitHub served it
    for now, then in zip(replayed[1:], before_install[1:]):
        # The files read after the clone are those the recording shows (the mirror is of the same commit).
        assert now["observation"].strip()[-200:] == then.observation.strip()[-200:], now["observation"][-500:]


@AS_ROOT
def test_verify_of_the_recorded_run_stops_before_its_first_replay_naming_a_file_agent_code_cannot_read(
    tmp_path: Path,
) -> None:
    """The documented check (docs/real-repositories.md), with a mirror of the real repository whose pack is
    readable by its owner alone: nothing is replayed, and the message names the file and the fix."""
    for needed in (BUNDLE, NOTEBOOK):
        if not needed.is_file():
            pytest.skip(
                f"{needed} is not here (set SUPER_BENCH_REFERENCE_REPOS and SUPER_BENCH_REFERENCE_TRAJECTORIES)"
            )
    backend_settings("bwrap")
    mirror = tmp_path / "mirrors" / "UnsupervisedHierarchicalSymbolicRegression.git"
    git("clone", "-q", "--mirror", str(BUNDLE), str(mirror))
    give_away(mirror)
    (pack,) = (mirror / "objects" / "pack").glob("*.pack")
    pack.chmod(0o600)
    runs = tmp_path / "runs" / "gpt4o"
    done = cli("import-trajectories", str(NOTEBOOK.parents[1]), "--out", str(runs))
    assert done.returncode == 0, done.stderr
    done = cli("verify", str(runs), "--task-ids", TASK, "--sandbox", "bwrap", "--git-mirror", f"{REAL_URL}={mirror}")
    assert done.returncode != 0
    message = " ".join(done.stderr.split())
    assert f"cannot read objects/pack/{pack.name}" in message and f"chmod -R a+rX {mirror}" in message, done.stderr
    assert not (runs / "verify").exists() and not (runs / "verify.jsonl").exists()
