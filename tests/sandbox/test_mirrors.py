"""Mirrors and time travel inside real sandboxes: git clones served from mirrors (bare, clone, bundle,
directories of them, other users' included), pip resolving as of a date against a real HTTP index with
upload times, pip's index as the only source, and a Hugging Face cache shared read-only."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.support.helpers import cli, make_task
from tests.support.mirror_fixtures import dated_index, give_away, make_mirror, pip26_python
from tests.support.sandboxes import backend_settings

from super_bench import SandboxConfig
from super_bench.errors import SandboxError
from super_bench.sandbox.mirrors.serving import check_task_pip
from super_bench.sandbox.pyenv.task_env import create_task_env, from_interpreter

ISOLATING = ["local", "bwrap", "docker"]
__all__ = ["dated_index", "pip26_python"]  # fixtures
URL = "https://git.invalid/lab/proj"


def run_cells(env_factory: Any, sandbox: dict[str, Any], cells: list[str], **settings: Any) -> list[Any]:
    """Run ``cells``; ``{shown:PATH}`` in a cell stands for where agent code sees the host's PATH."""
    env = env_factory(cell_timeout=120, sandbox=sandbox, **settings)
    env.reset(make_task())
    shown = env._sandbox.shown_at
    cells = [re.sub(r"\{shown:([^}]*)\}", lambda m: shown(m.group(1)), cell) for cell in cells]
    return [env.step({"type": "execute", "content": cell}) for cell in cells]


@pytest.mark.slow
@pytest.mark.parametrize("backend", ISOLATING)
@pytest.mark.parametrize("kind", ["bare", "clone", "bundle"])
def test_a_mirror_serves_its_url_with_or_without_git_and_slash(
    env_factory: Any, tmp_path: Path, backend: str, kind: str
) -> None:
    mirror = make_mirror(tmp_path / "mirrors" / ("proj.bundle" if kind == "bundle" else "proj"), kind, f"from {kind}")
    sandbox = {**backend_settings(backend), "git_mirrors": {URL + ".git": mirror}}
    forms = [URL, URL + ".git", URL + "/", URL + ".git/"]
    steps = run_cells(
        env_factory, sandbox, [f"!git clone -q {url} c{i} && cat c{i}/MARK" for i, url in enumerate(forms)]
    )
    for url, step in zip(forms, steps):
        assert step.raw_output.strip().endswith(f"from {kind}"), (url, step.raw_output)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ISOLATING)
def test_a_mirror_given_through_a_symbolic_link_is_served(env_factory: Any, tmp_path: Path, backend: str) -> None:
    # Reference data is often a link to elsewhere; the sandbox shows the mirror at its real path, not the link.
    mirror = make_mirror(tmp_path / "real" / "proj.bundle", "bundle", "through a link")
    (tmp_path / "linked").symlink_to(mirror.parent, target_is_directory=True)
    sandbox = {**backend_settings(backend), "git_mirrors": {URL: tmp_path / "linked" / mirror.name}}
    (step,) = run_cells(env_factory, sandbox, [f"!git clone -q {URL} c && cat c/MARK"])
    assert step.raw_output.strip().endswith("through a link"), step.raw_output


@pytest.mark.slow
@pytest.mark.parametrize("backend", ISOLATING)
def test_urls_that_only_begin_like_a_mirrored_one_are_not_served_from_it(
    env_factory: Any, tmp_path: Path, backend: str
) -> None:
    mirror = make_mirror(tmp_path / "proj.git", "bare", "mirrored")
    sandbox = {**backend_settings(backend), "git_mirrors": {URL: mirror}}
    others = [URL + "-data", URL + "2.git", URL + ".github.io", URL + ".gitx"]
    cells = [f"!GIT_TERMINAL_PROMPT=0 git clone -q {url} o{i} 2>&1 | tail -1" for i, url in enumerate(others)]
    for url, step in zip(others, run_cells(env_factory, sandbox, cells)):
        # Fetched from where the URL says (which does not resolve), not from a path next to the mirror.
        assert f"'{url}/'" in step.raw_output and str(tmp_path) not in step.raw_output, step.raw_output


@pytest.mark.slow
@pytest.mark.parametrize("backend", ISOLATING)
def test_a_directory_of_mirrors_serves_a_url_prefix(env_factory: Any, tmp_path: Path, backend: str) -> None:
    root = tmp_path / "all"
    make_mirror(root / "lab" / "a.git", "bare", "a")
    make_mirror(root / "lab" / "b.bundle", "bundle", "b")
    make_mirror(root / "other" / "c", "clone", "c")
    sandbox = {**backend_settings(backend), "git_mirrors": {"https://git.invalid/": root}}
    urls = ["https://git.invalid/lab/a", "https://git.invalid/lab/b.git", "https://git.invalid/other/c/"]
    steps = run_cells(env_factory, sandbox, [f"!git clone -q {u} d{i} && cat d{i}/MARK" for i, u in enumerate(urls)])
    assert [s.raw_output.strip().splitlines()[-1] for s in steps] == ["a", "b", "c"]


@pytest.mark.slow
def test_the_demo_suite_and_a_mirror_live_side_by_side(env_factory: Any, tmp_path: Path) -> None:
    mirror = make_mirror(tmp_path / "proj.git", "bare", "mine")
    sandbox = {**backend_settings("bwrap"), "git_mirrors": {URL: mirror}}
    cells = [
        f"!git clone -q {URL} a && cat a/MARK",
        "!git clone -q https://github.com/super-bench-demo/tinyreg.git t && ls t",
    ]
    mine, demo = run_cells(env_factory, sandbox, cells)
    assert mine.raw_output.strip() == "mine" and "train.py" in demo.raw_output


def test_mirrors_are_read_only_to_agent_code(env_factory: Any, tmp_path: Path) -> None:
    mirror = make_mirror(tmp_path / "proj.git", "bare", "mirrored")
    subprocess.run(["chmod", "-R", "a+w", str(mirror)], check=True)  # only the mount stands in the way
    (step,) = run_cells(
        env_factory,
        {**backend_settings("bwrap"), "git_mirrors": {URL: mirror}},
        [f"!touch {{shown:{mirror}}}/HEAD 2>&1; echo > {{shown:{mirror}}}/hooks/x 2>&1"],
    )
    assert step.raw_output.count("Read-only file system") == 2, step.raw_output


@pytest.mark.skipif(os.geteuid() != 0, reason="agent code runs as a user of its own when the harness is root")
def test_a_mirror_agent_code_could_not_read_is_refused_with_the_fix(env_factory: Any, tmp_path: Path) -> None:
    mirror = make_mirror(tmp_path / "proj.git", "bare", "mirrored")
    mirror.chmod(0o700)
    env = env_factory(sandbox={**backend_settings("bwrap"), "git_mirrors": {URL: mirror}})
    with pytest.raises(SandboxError, match=rf"{mirror} is not readable by other users.*chmod -R a\+rX {mirror}"):
        env.reset(make_task())


@pytest.mark.slow
def test_bad_mirror_settings_say_what_and_where(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    with pytest.raises(ValueError, match="does not exist"):
        SandboxConfig(git_mirrors={URL: tmp_path / "nope"})
    with pytest.raises(ValueError, match="not a repository URL"):
        SandboxConfig(git_mirrors={"proj": tmp_path})
    with pytest.raises(ValueError, match=r"plain holds no git repository or bundle"):
        SandboxConfig(git_mirrors={URL: tmp_path / "plain"})
    result = cli("run", "--git-mirror", str(tmp_path))
    assert result.returncode == 2 and "expected URL=PATH" in (result.stdout + result.stderr)
    result = cli("run", "--git-mirror", f"{URL}={tmp_path / 'nope'}")
    assert (
        result.returncode == 2
        and "--git-mirror" in (result.stdout + result.stderr)
        and "does not exist" in (result.stdout + result.stderr)
    )
    result = cli("run", "--packages-as-of", "last year")
    assert result.returncode == 2 and "not a date (write it like 2024-03-01)" in (result.stdout + result.stderr)
    result = cli("run", "--pip-index", "localhost:3141")
    assert result.returncode == 2 and "not a URL" in (result.stdout + result.stderr)


# -- pip: packages as of a date, from one index ---------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize(
    ("backend", "as_of", "version"),
    [
        ("bwrap", "2024-01-01", "1"),
        ("local", "2024-06-01", "2"),  # a date is the whole day (UTC): 2.0 came out at its noon
        ("local", "2024-06-01T11:59:59Z", "1"),
        ("local", None, "3"),
    ],
)
def test_pip_installs_what_there_was_on_the_date(
    env_factory: Any,
    pip26_python: Path,
    dated_index: tuple[str, list[str]],
    backend: str,
    as_of: str | None,
    version: str,
) -> None:
    index, _ = dated_index
    sandbox = {**backend_settings(backend), "task_python": pip26_python, "pip_index": index, "packages_as_of": as_of}
    install, check = run_cells(
        env_factory, sandbox, ["!pip install -q --no-cache-dir sbdated", "import sbdated; print(sbdated.VALUE)"]
    )
    assert install.outcome == "ok" and install.exit_code == 0, install.raw_output
    assert check.raw_output.strip() == version


@pytest.mark.parametrize("backend", ["bwrap", "local", "docker"])
def test_the_package_cache_applies_the_date_for_the_papers_pip(
    env_factory: Any, dated_index: tuple[str, list[str]], backend: str
) -> None:
    # pip 24.0 ignores PIP_UPLOADED_PRIOR_TO: the proxy leaves out what was uploaded after the date itself.
    # In docker (whatever pip the image has), with the network off: the proxy is reached through its socket.
    index, _ = dated_index
    sandbox = {**backend_settings(backend), "pip_index": index, "packages_as_of": "2024-06-01T11:59:59Z"}
    if backend == "docker":
        sandbox["network"] = False
    version, install, check = run_cells(
        env_factory, sandbox, ["!pip --version", "!pip install -q sbdated", "import sbdated; print(sbdated.VALUE)"]
    )
    assert backend == "docker" or version.raw_output.startswith("pip 24.0 "), version.raw_output
    assert install.exit_code == 0, install.raw_output
    assert check.raw_output.strip() == "1"


@pytest.mark.slow
def test_a_task_python_whose_pip_would_ignore_the_date_is_refused(env_factory: Any, tmp_path: Path) -> None:
    old = tmp_path / "old"
    create_task_env(old, from_interpreter(sys.executable))
    # A pip that says it is 24.0, first on the path of the task's Python (made here: no network).
    site_packages = next(old.glob("lib/python*/site-packages"))
    (site_packages / "pip").mkdir()
    (site_packages / "pip" / "__init__.py").write_text("")
    (site_packages / "pip" / "__main__.py").write_text("print('pip 24.0 from /old/pip (python 3)')\n")
    env = env_factory(
        sandbox={
            "backend": "local",
            "task_python": old / "bin" / "python",
            "packages_as_of": "2024-01-01",
            "package_cache": "off",  # without the cache, the date is pip's own filter
        }
    )
    with pytest.raises(SandboxError, match=r"--packages-as-of needs pip 26.0 or newer.*--task-python") as refused:
        env.reset(make_task())
    # Advice the user can follow: the interpreter by its path on this machine, never the task's own inside.
    over = str(refused.value).split("the task environment over ", 1)[1].split(" has ", 1)[0]
    assert Path(over).is_file() and "drop --package-cache off" in str(refused.value)
    assert "/venv" not in str(refused.value) and "-m pip install" not in str(refused.value)
    assert not any((tmp_path / "sandboxes").iterdir())  # the task directory went with the refusal


def test_a_pip_too_old_for_the_date_filter_is_refused_with_the_fix() -> None:
    config = SandboxConfig(packages_as_of="2024-01-01")
    with pytest.raises(SandboxError, match=r"needs pip 26.0 or newer.*has pip 24.0.*-m pip install 'pip>=26'"):
        check_task_pip(config, "pip 24.0 from /x/pip (python 3.11)", "/x/bin/python")
    with pytest.raises(SandboxError, match="has no working pip"):
        check_task_pip(config, "", "/x/bin/python")
    check_task_pip(config, "pip 26.2.1 from /x/pip (python 3.11)", "/x/bin/python")
    check_task_pip(SandboxConfig(), "pip 9.0 from /x", "/x/bin/python")  # no date: any pip will do


@pytest.mark.slow
def test_the_pip_index_is_the_only_source(
    env_factory: Any, pip26_python: Path, dated_index: tuple[str, list[str]]
) -> None:
    index, requested = dated_index
    # wheel is on this machine's usual index (and in the harness's environment); with --pip-index it is not found.
    sandbox = {**backend_settings("bwrap"), "task_python": pip26_python, "pip_index": index}
    (step,) = run_cells(env_factory, sandbox, ["!pip download -q --no-deps --no-cache-dir -d dl wheel 2>&1 | tail -1"])
    assert "No matching distribution found for wheel" in step.raw_output, step.raw_output
    assert "/simple/wheel/" in requested


# -- Hugging Face: a shared cache, read-only and offline --------------------------------------------------
def hub_cache(root: Path) -> Path:
    """An HF_HOME whose hub cache holds a model and a dataset, laid out as huggingface_hub lays them."""
    for kind, repo, name, text in [
        ("models", "lab--tiny", "config.json", '{"hidden": 7}'),
        ("datasets", "lab--rows", "data.csv", "a,b\n1,2\n"),
    ]:
        folder = root / "hub" / f"{kind}--{repo}"
        sha = "0" * 39 + "1"
        (folder / "refs").mkdir(parents=True)
        (folder / "refs" / "main").write_text(sha)
        blob = folder / "blobs" / "b1"
        blob.parent.mkdir()
        blob.write_text(text)
        snapshot = folder / "snapshots" / sha
        snapshot.mkdir(parents=True)
        (snapshot / name).symlink_to(os.path.relpath(blob, snapshot))
    give_away(root)
    return root


@pytest.mark.slow
def test_models_and_datasets_load_from_a_shared_cache_without_the_network(env_factory: Any, tmp_path: Path) -> None:
    cache = hub_cache(tmp_path / "hf")
    # huggingface_hub is in SUPER's environment (with transformers), not in the minimal default: a base with it.
    sandbox = {**backend_settings("bwrap"), "hf_cache": cache, "network": False, "task_python": Path(sys.executable)}
    code = (
        "from huggingface_hub import hf_hub_download\n"
        "print(open(hf_hub_download('lab/tiny', 'config.json')).read())\n"
        "print(open(hf_hub_download('lab/rows', 'data.csv', repo_type='dataset')).read())"
    )
    loaded, written = run_cells(env_factory, sandbox, [code, f"!touch {{shown:{cache}}}/hub/x 2>&1"])
    assert loaded.outcome == "ok", loaded.raw_output
    assert '{"hidden": 7}' in loaded.raw_output and "a,b\n1,2" in loaded.raw_output
    assert "Read-only file system" in written.raw_output


@pytest.mark.slow
def test_mirror_settings_reach_make_and_the_run_manifest(tmp_path: Path, pip26_python: Path) -> None:
    import super_bench as sb

    mirror = make_mirror(tmp_path / "proj.git", "bare", "mirrored")
    env = sb.make("tinyreg", sandbox="local", git_mirrors={URL: mirror}, packages_as_of="2024-01-01")
    assert env.config.sandbox.git_mirrors == {URL: mirror}
    assert str(env.config.sandbox.packages_as_of) == "2024-01-01"
    out = tmp_path / "run"
    result = cli(
        "run", "--task-ids", "tinyreg", "--sandbox", "local", "--git-mirror", f"{URL}={mirror}", "--task-python", str(pip26_python),
        "--packages-as-of", "2024-01-01", "--pip-index", "http://127.0.0.1:9/simple", "--out", str(out),
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    manifest = json.loads((out / "run.json").read_text())["sandbox"]
    assert json.loads((out / "results.jsonl").read_text())["status"] == "completed"
    head = subprocess.run(
        ["git", "-c", "safe.directory=*", "--git-dir", str(mirror), "rev-parse", "HEAD"], capture_output=True, text=True
    )
    assert manifest["git_mirrors"] == {URL: {"path": str(mirror), "kind": "bare", "head": head.stdout.strip()}}
    assert manifest["packages_as_of"] == "2024-01-01"
    assert manifest["packages_uploaded_before"] == "2024-01-02T00:00:00+00:00"
    assert manifest["pip_index"] == "http://127.0.0.1:9/simple"


def test_harness_side_git_uses_the_mirrors_too(tmp_path: Path) -> None:
    from super_bench.tasks.repos import RepoCache, resolve_commit

    mirror = make_mirror(tmp_path / "proj.git", "bare", "mirrored")
    with RepoCache(SandboxConfig(git_mirrors={URL: mirror})) as cache:
        assert len(resolve_commit(cache.get(URL + ".git"), None)) == 40
