"""``super-bench mirror`` and ``--offline-bundle``: a task set bundled (repository at the task's commit,
wheels of what the gold solution installs, as of a date) and then run with the network off."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.support.helpers import cli
from tests.support.mirror_fixtures import dated_index, git, make_mirror, make_repo, pip26_python
from tests.support.sandboxes import backend_settings

from super_bench import SandboxConfig
from super_bench.sandbox.mirrors.offline_bundle import MANIFEST

__all__ = ["dated_index", "pip26_python"]  # fixtures
URL = "https://git.invalid/lab/proj"
SOLUTION = [
    {"type": "execute", "content": f"!git clone {URL}.git"},
    {"type": "execute", "content": "%cd proj\n!pip install -q sbdated"},
    {
        "type": "execute",
        "content": "import json, sbdated\nprint(json.dumps({'value': sbdated.VALUE, 'mark': open('MARK').read().strip()}))",
    },
]


def task_file(tmp_path: Path, commit: str, answer: dict[str, object]) -> Path:
    record = {
        "task_id": "proj",
        "query": "Report the value and the mark.",
        "github_repo": URL,
        "git_commit": commit,
        "answer": json.dumps(answer),
        "landmarks": [],
        "solution": SOLUTION,
    }
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(record) + "\n")
    return path


def upstream(tmp_path: Path) -> tuple[Path, str]:
    """A repository whose task commit is not its HEAD: the bundle must put HEAD at the task's commit."""
    repo = tmp_path / "upstream"
    first = make_repo(repo, "the task's commit")
    (repo / "MARK").write_text("later\n")
    git("commit", "-qam", "later", cwd=repo)
    return repo, first


@pytest.mark.slow
def test_a_bundled_task_set_runs_with_the_network_off(
    tmp_path: Path, pip26_python: Path, dated_index: tuple[str, list[str]]
) -> None:
    sandbox = backend_settings("bwrap")
    index, _ = dated_index
    repo, commit = upstream(tmp_path)
    tasks = task_file(tmp_path, commit, {"value": 1, "mark": "the task's commit"})
    bundle = tmp_path / "offline"
    made = cli(
        "mirror", "--source", str(tasks), "--out", str(bundle), "--wheels", "--git-mirror", f"{URL}={repo}",
        "--pip-index", index, "--packages-as-of", "2024-01-01", "--task-python", str(pip26_python),
    )  # fmt: skip
    assert made.returncode == 0, made.stdout + made.stderr
    assert "Bundled 1 repository and 1 wheel(s) for 1 task(s)" in made.stdout
    assert sorted(p.name for p in (bundle / "wheels").iterdir()) == ["sbdated-1.0-py3-none-any.whl"]
    manifest = json.loads((bundle / MANIFEST).read_text())
    assert manifest["repositories"][0]["commits"] == [commit]
    assert manifest["packages_as_of"] == "2024-01-01"

    out = tmp_path / "run"
    ran = cli(
        "run", "--source", str(tasks), "--offline-bundle", str(bundle), "--network", "off",
        "--sandbox", sandbox["backend"], "--out", str(out),
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    (result,) = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert result["status"] == "completed" and result["metrics"]["output_match"] == 1.0, result
    recorded = json.loads((out / "run.json").read_text())["sandbox"]
    assert recorded["offline_bundle"]["path"] == str(bundle)
    assert recorded["git_mirrors"][URL]["head"] == commit


def test_what_cannot_be_bundled_is_listed_and_the_rest_bundled(tmp_path: Path) -> None:
    repo, commit = upstream(tmp_path)
    mirror = make_mirror(tmp_path / "other.git", "bare", "other")
    records = [
        {"task_id": "good", "query": "q", "github_repo": URL, "git_commit": commit, "answer": "1"},
        {"task_id": "gone", "query": "q", "github_repo": "https://git.invalid/lab/gone", "answer": "1"},
        {"task_id": "badcommit", "query": "q", "github_repo": "https://git.invalid/lab/other", "git_commit": "f" * 40, "answer": "1"},
    ]  # fmt: skip
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in records))
    bundle = tmp_path / "offline"
    made = cli(
        "mirror", "--source", str(tasks), "--out", str(bundle),
        "--git-mirror", f"{URL}={repo}", "--git-mirror", f"https://git.invalid/lab/other={mirror}",
    )  # fmt: skip
    assert made.returncode == 1
    problems = json.loads((bundle / MANIFEST).read_text())["problems"]
    assert [p.split(" ", 1)[0] for p in problems] == ["https://git.invalid/lab/gone", "https://git.invalid/lab/other"]
    assert "Could not resolve host" in problems[0] or "unable to access" in problems[0], problems
    assert f"commit {'f' * 40} is not in the repository" in problems[1]
    assert (bundle / "git" / "git.invalid" / "lab" / "proj.bundle").is_file()


def test_no_wheel_and_what_is_not_fetched_ahead_say_why(tmp_path: Path) -> None:
    solution = [{"type": "execute", "content": "!pip install -e . ./plugins/extra -r reqs.txt"}]
    record = {"task_id": "own", "query": "q", "answer": "1", "solution": solution}
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(record) + "\n")
    made = cli("mirror", "--source", str(tasks), "--out", str(tmp_path / "offline"), "--wheels")
    assert made.returncode == 0, made.stdout + made.stderr
    shown = " ".join(made.stdout.split())
    assert "0 wheel(s) (what the gold solutions pip install is built from their repositories, listed below)" in shown
    for item, why in [
        ("-e .", "an editable install, built from the repository when it runs"),
        ("./plugins/extra", "a local path of the repository, built from it when it runs"),
        ("-r reqs.txt", "a requirements file, and the task has no repository to read it from"),
    ]:
        assert f"not fetched ahead own: {item}: {why}" in shown, shown
    # Nothing to install at all: said so.
    record["solution"] = [{"type": "execute", "content": "print(1)"}]
    tasks.write_text(json.dumps(record) + "\n")
    made = cli("mirror", "--source", str(tasks), "--out", str(tmp_path / "again"), "--wheels")
    assert "0 wheel(s) (the gold solutions pip install nothing from a package index)" in " ".join(made.stdout.split())


def test_a_directory_that_is_not_a_bundle_is_refused_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"is not an offline bundle.*super-bench mirror"):
        SandboxConfig(offline_bundle=tmp_path)
    (tmp_path / MANIFEST).write_text('{"format": 1}')
    result = cli("run", "--offline-bundle", str(tmp_path))
    assert result.returncode == 2 and "not a readable offline bundle manifest" in result.stderr


def test_a_manifest_cannot_point_outside_its_bundle(tmp_path: Path) -> None:
    bundle = tmp_path / "offline"
    bundle.mkdir()
    record = {"created_at": "2026-01-01T00:00:00Z", "super_bench_version": "0", "tasks": ["t"]}
    record["repositories"] = [{"url": URL, "bundle": "../../etc/passwd"}]  # type: ignore[assignment]
    (bundle / MANIFEST).write_text(json.dumps(record))
    with pytest.raises(ValueError, match=r"\.\./\.\./etc/passwd lies outside the bundle"):
        SandboxConfig(offline_bundle=bundle)
