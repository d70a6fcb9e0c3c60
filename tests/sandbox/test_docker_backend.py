"""The docker backend on a real engine (Docker, or Podman as configured here), where an image exists:
the engine's settings found by trying, the image's record of itself, the trust store given to tasks,
and the demo sets solved by the gold agent with the network off."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import pytest
from tests.support.helpers import cli, make_task
from tests.support.sandboxes import backend_settings

from super_bench import Action, Environment, SandboxConfig
from super_bench.errors import SandboxError
from super_bench.sandbox.backends.container_disk import DISK_MECHANISM
from super_bench.sandbox.backends.container_engine import _candidates, find_engine
from super_bench.sandbox.backends.container_image import CA_BUNDLE_INSIDE, IMAGE_KERNEL_DIR, image_info
from super_bench.sandbox.backends.docker import DockerSandbox


@pytest.fixture
def docker() -> dict[str, Any]:
    return backend_settings("docker")


def test_the_engines_settings_are_found_by_trying_and_start_a_container(docker: dict[str, Any]) -> None:
    engine, image = DockerSandbox.engine_for(SandboxConfig(**docker))
    assert engine.probed_with == image
    tried = [(list(g), list(r)) for g, r in _candidates(engine)]
    assert (list(engine.global_args), list(engine.run_args)) in tried
    # What was found is what works: a container with exactly these settings runs.
    import subprocess

    command = [*engine.command, "run", "--rm", "--network", "none", *engine.run_args, image, "sh", "-c", "echo ok"]
    assert subprocess.run(command, capture_output=True, text=True, timeout=300).stdout == "ok\n"
    # Without an image to try with, nothing is claimed.
    assert find_engine(engine.name).probed_with is None


def test_a_kernel_in_a_fresh_container_compiles_nothing(docker: dict[str, Any]) -> None:
    """The image's byte code of the kernel's packages is valid for the image's own Python: byte code found stale
    was compiled again by every kernel of every container (a fresh one each task), about 0.2 s of each start."""
    import subprocess

    engine, image = DockerSandbox.engine_for(SandboxConfig(**docker))
    code = (
        f"import sys; sys.path.insert(0, '{IMAGE_KERNEL_DIR}/packages'); import ipykernel.kernelapp, ipykernel.ipkernel"
    )
    command = [*engine.command, "run", "--rm", "--network", "none", *engine.run_args, "--entrypoint", "python3", image]
    done = subprocess.run([*command, "-S", "-v", "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stderr.splitlines()
    compiled = [line for line in lines if "bytecode is stale" in line or line.startswith("# created ")]
    assert compiled == [], compiled[:10]
    assert sum(line.startswith("# code object from ") and IMAGE_KERNEL_DIR in line for line in lines) > 100


def test_sandbox_check_says_which_engine_and_settings(docker: dict[str, Any]) -> None:
    engine, image = DockerSandbox.engine_for(SandboxConfig(**docker))
    result = cli("sandbox", "check", *(["--image", docker["image"]] if "image" in docker else []))
    out = " ".join(result.stdout.split())
    assert f"--sandbox docker uses: {engine.name} {engine.version}" in out, out
    assert f"tried with {image}" in out
    for arg in engine.run_args:
        assert arg in out
    assert f"in docker: {DISK_MECHANISM}" in out
    # How the image's task environment differs from the paper's, as runs record it, is shown.
    for line in DockerSandbox.describe(SandboxConfig(**docker)).task_environment.get("differences", []):
        assert " ".join(line.split()) in out, out


def test_the_disk_limit_and_the_package_cache_are_recorded_as_docker_keeps_them(docker: dict[str, Any]) -> None:
    config = SandboxConfig(**docker, network=False, disk_limit="1g", package_cache="link")
    described = DockerSandbox.describe(config)
    assert described.disk_enforcement == DISK_MECHANISM
    # Links cannot cross the container's boundary: installs copy, and the record says so.
    cache = described.package_cache
    assert cache is not None and (cache["mode"], cache["asked"]) == ("copy", "link") and "boundary" in cache["why"]
    assert DockerSandbox.describe(config.model_copy(update={"package_cache": "off"})).package_cache is None
    # A file system of the task's own cannot hold the container's layer: asked for, it is refused, saying why.
    with pytest.raises(SandboxError, match="the docker backend watches"):
        DockerSandbox.check(config.model_copy(update={"disk_enforcement": "filesystem"}))


def test_the_image_records_how_it_differs_from_the_papers(docker: dict[str, Any]) -> None:
    engine, image = DockerSandbox.engine_for(SandboxConfig(**docker))
    info = image_info(engine, image)
    if info is None:
        pytest.skip(f"{image} was not built by sandbox build")
    assert info.layer in ("kernel", "super")
    paper = info.python.split(".")[:2] == ["3", "10"]
    assert paper == (not any(d.startswith("Python ") for d in info.differences))
    assert (info.layer == "kernel") == any("kernel layer only" in d for d in info.differences)


@pytest.mark.slow
def test_a_ca_bundle_reaches_tasks_read_only(
    docker: dict[str, Any], env_factory: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The host's own pip configuration, which must not reach the task.
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path))
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "file:///host/only/simple")
    bundle = tmp_path / "bundle.crt"
    bundle.write_text("-----BEGIN CERTIFICATE-----\nnot a real one\n-----END CERTIFICATE-----\n")
    env: Environment = env_factory(sandbox={**docker, "ca_bundle": bundle})
    env.reset(make_task())
    code = (
        "import os\n"
        "print(os.environ['PIP_CERT'], os.environ['REQUESTS_CA_BUNDLE'], os.environ['SSL_CERT_FILE'])\n"
        "print(open(os.environ['PIP_CERT']).read().splitlines()[1])\n"
        "try:\n    open(os.environ['PIP_CERT'], 'a').write('x')\n    print('written')\n"
        "except OSError as e:\n    print('refused', e.strerror)\n"
        # Nothing else of the host's pip configuration is there.
        "print(sorted(k for k in os.environ if k.startswith('PIP_')), os.environ.get('PIP_CONFIG_FILE'))\n"
        "print(repr(os.environ['PIP_FIND_LINKS']), repr(os.environ['PIP_EXTRA_INDEX_URL']))"
    )
    lines = env.step(Action.execute(code)).observation.splitlines()
    assert lines[0] == f"{CA_BUNDLE_INSIDE} {CA_BUNDLE_INSIDE} {CA_BUNDLE_INSIDE}"
    assert lines[1] == "not a real one"
    assert lines[2] == "refused Read-only file system"
    names, config_file = lines[3].rsplit(" ", 1)
    # Only super-bench's own settings: the bundle, the package cache as the one index, and no pip configuration
    # file read at all; the host's links and extra index are not there.
    allowed = {"PIP_CERT", "PIP_CONFIG_FILE", "PIP_DISABLE_PIP_VERSION_CHECK", "PIP_ROOT_USER_ACTION"}
    allowed |= {"PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_NO_INDEX", "PIP_NO_CACHE_DIR", "PIP_FIND_LINKS"}
    assert set(ast.literal_eval(names)) <= allowed and config_file == "/dev/null"
    assert lines[4] == "'' ''"
    assert bundle.read_text().count("x") == 0


@pytest.mark.slow
def test_a_memory_kill_is_reported_as_such(
    docker: dict[str, Any], env_factory: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")  # where the harness was started: the engine's monitor writes nothing here
    env: Environment = env_factory(sandbox={**docker, "memory_limit": "256m"})
    env.reset(make_task())
    step = env.step(
        Action.execute("import mmap\nm = mmap.mmap(-1, 2**30)\nfor i in range(0, 2**30, 4096):\n    m[i] = 1")
    )
    assert step.outcome == "kernel_died" and "out of memory" in step.observation, step.observation
    assert env.step(Action.execute("print('after')")).observation == "after\n"
    env.close()
    assert list((tmp_path / "cwd").iterdir()) == []  # conmon's `oom` file went with the task's directory


@pytest.mark.slow
def test_the_gold_agent_solves_the_masked_demo_set_in_docker_with_the_network_off(
    docker: dict[str, Any], tmp_path: Path
) -> None:
    image = ["--image", docker["image"]] if "image" in docker else []
    result = cli(
        "run", "--sandbox", "docker", *image, "--network", "off", "--set", "masked", "--out", str(tmp_path / "r")
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"│ mean +│ +│ +│ +│ +1\.00 │ +1\.00 │ +1\.00 │", result.stdout), result.stdout
    manifest = json.loads((tmp_path / "r" / "run.json").read_text())
    environment = manifest["task_environment"]
    assert environment["kind"] == "docker" and environment["engine"]["probed_with"] == environment["image"]
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["metrics"]["output_match"] == 1.0
