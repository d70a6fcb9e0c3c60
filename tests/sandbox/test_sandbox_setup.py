"""Choosing and preparing sandboxes: settings, the base environment build, and one clear line for
each thing that is missing (bwrap, a container engine, a backend name)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from tests.support.helpers import cli, make_task
from tests.support.sandboxes import backend_settings, tiny_wheel

from super_bench import Action, EnvConfig, Environment, SandboxConfig
from super_bench._sizes import parse_size
from super_bench.errors import ConfigError
from super_bench.sandbox import _auto_backend, create_sandbox, resolve_backend
from super_bench.sandbox.backends import bwrap
from super_bench.sandbox.backends.bwrap import bwrap_problem
from super_bench.sandbox.backends.support import scrubbed_environ

SUPER_BENCH = [sys.executable, "-m", "super_bench"]


@pytest.mark.parametrize(
    ("text", "size"),
    [("8g", 8 * 2**30), ("512m", 512 * 2**20), ("1.5G", 3 * 2**29), ("100k", 102400), ("2GiB", 2 * 2**30), ("77", 77)],
)
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text) == size
    assert SandboxConfig(memory_limit=text).memory_limit == size


def test_a_bad_size_says_how_to_write_one() -> None:
    with pytest.raises(ValidationError, match="write it like 8g"):
        SandboxConfig(memory_limit="eight gigs")


def test_agent_code_gets_no_credentials_and_no_user_configuration() -> None:
    host = {
        "PATH": "/usr/bin",
        "LANG": "C.UTF-8",
        "OPENAI_API_KEY": "sk",
        "MY_SERVICE_TOKEN": "t",
        "INDEX": "https://me:pw@example.org/simple",
        "XDG_CONFIG_HOME": "/home/me/.config",
        "HF_HOME": "/home/me/.cache/hf",
        "DOCKER_HOST": "unix:///run/docker.sock",
        "GIT_CONFIG_GLOBAL": "/home/me/.gitconfig",
        "AWS_PROFILE": "prod",
        "PYTHONPATH": "/harness",
    }
    assert scrubbed_environ(host) == {"PATH": "/usr/bin", "LANG": "C.UTF-8"}


def test_an_unknown_backend_names_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="unknown sandbox backend 'nope'; known: bwrap, docker, local"):
        create_sandbox(SandboxConfig(backend="nope"))


def test_auto_is_bwrap_where_it_works_else_local_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    expected = "bwrap" if bwrap_problem() is None else "local"
    assert resolve_backend("auto") == expected
    # No bwrap where the harness looks for it (the system's directories: never the caller's PATH).
    real = bwrap.find_program
    monkeypatch.setattr(bwrap, "find_program", lambda name: None if name == "bwrap" else real(name))
    bwrap_problem.cache_clear()
    _auto_backend.cache_clear()
    try:
        with caplog.at_level(logging.WARNING):
            assert resolve_backend("auto") == "local"
    finally:
        bwrap_problem.cache_clear()
        _auto_backend.cache_clear()
    (record,) = caplog.records
    assert "does not isolate" in record.message and "apt-get install bubblewrap" in record.message


def _one_clear_line(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for needle in needles:
        assert needle in lines[0]


def test_the_local_sandbox_refuses_to_pretend_it_cuts_the_network(tmp_path: Path) -> None:
    result = cli("run", "--sandbox", "local", "--network", "off", "--out", str(tmp_path / "run"))
    _one_clear_line(result, "the local sandbox cannot cut the network")


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None or not os.path.exists("/usr/bin/bwrap"),
    reason="hides the system's bwrap in a mount namespace of its own: needs root, unshare and /usr/bin/bwrap",
)
def test_a_missing_bwrap_is_one_clear_line(tmp_path: Path) -> None:
    # The harness finds bwrap in the system's directories only, so it is hidden there: /usr/bin/bwrap is covered
    # by a file that cannot be run, in a mount namespace that this command alone sees.
    hide = [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        'mount --bind /dev/null /usr/bin/bwrap && exec "$@"',
        "sh",
    ]
    command = [*hide, *SUPER_BENCH, "run", "--sandbox", "bwrap", "--out", str(tmp_path / "run")]
    result = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"}, timeout=120)
    _one_clear_line(result, "bubblewrap (bwrap) is not installed", "apt-get install bubblewrap")


def test_no_container_engine_is_one_clear_line(tmp_path: Path) -> None:
    result = _cli_with_path(tmp_path, "run", "--sandbox", "docker", "--out", str(tmp_path / "run"))
    _one_clear_line(result, "docker is not installed", "podman is not installed", "install Docker")


@pytest.mark.skipif(shutil.which("docker") is None, reason="needs the docker client")
def test_a_docker_engine_that_is_not_running_is_one_clear_line(tmp_path: Path) -> None:
    if subprocess.run(["docker", "info"], capture_output=True).returncode == 0:
        pytest.skip("a Docker engine is running here")
    result = cli("run", "--sandbox", "docker", "--engine", "docker", "--out", str(tmp_path / "run"))
    _one_clear_line(result, "the docker engine is not running", "start Docker")


def _cli_with_path(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": str(path), "COLUMNS": "200"}
    return subprocess.run([*SUPER_BENCH, *args], capture_output=True, text=True, env=env, timeout=120)


def test_sandbox_check_lists_the_backends() -> None:
    result = cli("sandbox", "check")
    assert result.returncode == 0, result.stderr
    for name in ("local", "bwrap", "docker"):
        assert name in result.stdout
    assert f"--sandbox auto uses: {resolve_backend('auto')}" in result.stdout
    said = " ".join(result.stdout.split())
    assert "kernels (local, bwrap): each task's is a new interpreter, started cold" in said
    if os.geteuid() == 0:  # whom agent code drops to, and without what
        assert "run as root" in said and "setpriv drops agent code to a user id of each task's own" in said
        assert "no capabilities (bounding set empty)" in said
    else:
        assert f"agent code runs as this user (uid {os.geteuid()})" in said


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["local", "bwrap"])
def test_the_base_environment_is_built_once_and_shared_read_only(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tmp_sandbox_root: Path
) -> None:
    settings: dict[str, Any] = backend_settings(backend)
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    tiny_wheel(wheels, "sbbasepkg", 7)
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("sbbasepkg\n")
    base = tmp_path / "base-env"
    monkeypatch.setenv("SUPER_BENCH_BASE_ENV", str(base))
    offline = ["--pip-arg=--no-index", f"--pip-arg=--find-links={wheels}", "--python", sys.executable]
    result = subprocess.run(
        [*SUPER_BENCH, "sandbox", "build", "--backend", backend, "--requirements", str(requirements), *offline],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    base_site = next(base.glob("lib/python*/site-packages"))
    before = sorted(p.name for p in base_site.iterdir())
    assert "sbbasepkg" in before

    env = Environment(EnvConfig(cell_timeout=60, sandbox=SandboxConfig(root=tmp_sandbox_root, **settings)))
    try:
        env.reset(make_task())
        step = env.step(Action.execute("import sbbasepkg\nprint(sbbasepkg.VALUE)"))
        assert step.observation == "7\n"
        wheel = tiny_wheel(tmp_path, "sbtaskpkg", 8)
        env._sandbox.write_file(wheel.name, wheel.read_bytes())
        assert env.step(Action.execute(f"!pip install -q --no-index {wheel.name}")).exit_code == 0
        step = env.step(Action.execute("!pip uninstall -y sbbasepkg"))
        assert step.exit_code != 0 or "outside environment" in step.observation
        step = env.step(Action.execute("import sbtaskpkg, sbbasepkg\nprint(sbtaskpkg.VALUE, sbbasepkg.VALUE)"))
        assert step.observation == "8 7\n"
    finally:
        env.close()
    assert sorted(p.name for p in base_site.iterdir()) == before  # the shared base is unchanged


@pytest.mark.slow
def test_the_build_leaves_out_what_cannot_be_had_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    tiny_wheel(wheels, "sbbasepkg", 7)
    requirements = tmp_path / "requirements.txt"
    # An index that does not answer (pip would retry it for minutes), a package no index has, and one that is there.
    requirements.write_text("--extra-index-url http://127.0.0.1:9/simple\nsbbasepkg==1.0\nsbnowherepkg==9.9\n")
    monkeypatch.setenv("SUPER_BENCH_BASE_ENV", str(tmp_path / "base-env"))
    python = shutil.which("python3") or sys.executable  # a command on PATH is taken as well as a path
    offline = ["--pip-arg=--no-index", f"--pip-arg=--find-links={wheels}", "--python", Path(python).name]
    result = subprocess.run(
        [*SUPER_BENCH, "sandbox", "build", "--requirements", str(requirements), *offline],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "COLUMNS": "300", "PATH": f"{Path(python).parent}:{os.environ['PATH']}"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Left out sbnowherepkg==9.9" in result.stdout
    assert "http://127.0.0.1:9/simple is unreachable" in result.stdout
    record = json.loads((tmp_path / "base-env" / "super-bench-base.json").read_text())
    assert list(record["skipped"]) == ["sbnowherepkg==9.9"] and record["installed"]["sbbasepkg"] == "1.0"
    check = cli("sandbox", "check")
    assert "Task environment: SUPER's, built by `super-bench sandbox build`" in " ".join(check.stdout.split())


def test_a_python_that_does_not_run_is_one_clear_line(tmp_path: Path) -> None:
    broken = tmp_path / "python3.10"
    broken.write_text("#!/bin/sh\necho 'pyenv: python3.10: command not found' >&2\nexit 127\n")
    broken.chmod(0o755)
    result = subprocess.run(
        [*SUPER_BENCH, "sandbox", "build", "--python", str(broken)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert f"--python {broken} does not work: pyenv: python3.10: command not found" in " ".join(result.stderr.split())


def test_sandbox_check_says_how_memory_is_limited_and_which_environment_tasks_get(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from super_bench.sandbox.limits.memory import describe, memory_mechanism

    monkeypatch.setenv("SUPER_BENCH_BASE_ENV", str(tmp_path / "never-built"))
    out = " ".join(cli("sandbox", "check").stdout.split())
    assert f"--memory-limit is enforced by: {' '.join(describe(memory_mechanism()).split())}" in out
    assert "Task environment: the minimal default" in out and "super-bench sandbox build" in out


def test_the_kernel_environment_is_found_again_without_reading_any_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from super_bench.sandbox.launch import kernel_env as module

    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    first = module.kernel_env.__wrapped__(sys.executable, version)
    note = module._found_before(version, module.BOOT_SCRIPT.read_bytes())
    assert note is not None and note.built == first

    def unread(roots: list[str]) -> list[Any]:
        raise AssertionError("the distributions' metadata was read again")

    monkeypatch.setattr(module, "distribution_closure", unread)
    assert module.kernel_env.__wrapped__(sys.executable, version) == first
    # A note that names anything but a finished build beside it is passed over.
    for elsewhere in ("..", "/tmp", first.name + "-unfinished"):
        note.note.write_text(elsewhere + "\n")
        assert note.built is None
    note.remember(first)


def test_a_kernel_environment_for_another_python_is_installed_by_that_pythons_own_pip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pip evaluates markers for the Python it runs on: ours, installing for 3.10 with --python-version, left
    out what only 3.10 needs (IPython's exceptiongroup), and the kernel could not start. That Python's own
    pip installs it where it runs here; one made by ours is another environment, never taken for it."""
    from super_bench.sandbox.launch import kernel_env as module

    monkeypatch.setenv("SUPER_BENCH_ENV_CACHE", str(tmp_path / "cache"))
    calls = tmp_path / "calls"
    python = tmp_path / "python3.9"
    python.write_text(f'#!/bin/sh\necho "$@" >> {calls}\n')
    python.chmod(0o755)
    built = module.kernel_env.__wrapped__(str(python), "3.9")
    asked = [line.split() for line in calls.read_text().splitlines()]
    assert asked[0] == ["-m", "pip", "--version"] and asked[1][:3] == ["-m", "pip", "install"]
    assert "--target" in asked[1] and "--python-version" not in asked[1] and asked[1][-1] == "ipykernel"
    assert (built / "kernel_boot.py").is_file()
    ours: list[tuple[Any, ...]] = []
    monkeypatch.setattr(module, "_pip_install_target", lambda *args: ours.append(args))
    other = module.kernel_env.__wrapped__(str(tmp_path / "not-here" / "python3.9"), "3.9")
    assert other != built and ours and ours[0][-1] is False  # no pip of its own here: ours, kept apart


def test_the_default_task_packages_are_found_again_without_reading_any_metadata(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    from super_bench.sandbox.pyenv import task_env as module

    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    first = module._default_packages(version)

    def unread(roots: list[str]) -> list[Any]:
        raise AssertionError("the distributions' metadata was read again")

    monkeypatch.setattr(module, "distribution_closure", unread)
    assert module._default_packages(version) == first


def test_package_lists_are_noted_and_read_again_until_the_packages_change(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from importlib import metadata

    from super_bench.sandbox.pyenv.task_env import packages_of

    monkeypatch.setenv("SUPER_BENCH_ENV_CACHE", str(tmp_path / "cache"))  # the notes, not in the user's cache

    def install(site: Path, folder: str, name: str, version: str) -> None:
        (site / folder).mkdir(parents=True)
        (site / folder / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nText\n")

    first, second = tmp_path / "first", tmp_path / "second"
    install(first, "zeta-1.0.dist-info", "Zeta", "1.0")
    install(first, "alpha_pkg-2.0.dist-info", "Alpha.Pkg", "2.0")
    install(second, "zeta-3.0.dist-info", "Zeta", "3.0")
    dirs = [str(first), str(second)]
    # As the metadata says, sorted without case; a distribution in two directories at the later one's version.
    expected = {"Alpha.Pkg": "2.0", "Zeta": "3.0"}
    assert packages_of(dirs) == expected == {d.metadata["Name"]: d.version for d in metadata.distributions(path=dirs)}

    def unread(**_: Any) -> Any:
        raise AssertionError("the distributions' metadata was read again")

    with monkeypatch.context() as patched:
        patched.setattr(metadata, "distributions", unread)
        assert packages_of(dirs) == expected
        assert list(packages_of(dirs)) == ["Alpha.Pkg", "Zeta"]
    install(first, "beta-0.1.dist-info", "beta", "0.1")  # an install: read again
    assert packages_of(dirs) == {"Alpha.Pkg": "2.0", "beta": "0.1", "Zeta": "3.0"}
    assert packages_of(dirs[::-1])["Zeta"] == "1.0"
    assert packages_of([str(tmp_path / "missing")]) == {}


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    note=st.one_of(
        st.binary(max_size=200),
        st.builds(lambda v: json.dumps(v).encode(), _JSON | st.dictionaries(st.text(max_size=6), st.text(max_size=6))),
    )
)
def test_a_package_list_note_that_is_not_a_list_of_names_and_versions_is_parsed_afresh(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory, note: bytes
) -> None:
    """Agent code of a local task can write the cache directory: a note it spoils is read as data, and anything
    but names and versions is set aside for the distributions' own metadata."""
    from super_bench.sandbox.pyenv.task_env import packages_of

    root = tmp_path_factory.mktemp("notes")
    monkeypatch.setenv("SUPER_BENCH_ENV_CACHE", str(root / "cache"))
    site = root / "site"
    (site / "zeta-1.0.dist-info").mkdir(parents=True)
    (site / "zeta-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: Zeta\nVersion: 1.0\n")
    assert packages_of([str(site)]) == {"Zeta": "1.0"}
    (noted,) = (root / "cache" / "package-lists").iterdir()
    noted.write_bytes(note)
    listed = packages_of([str(site)])
    try:
        planted = json.loads(note)
    except ValueError:
        planted = None
    well_formed = isinstance(planted, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in planted.items()
    )
    assert listed == (planted if well_formed else {"Zeta": "1.0"})
