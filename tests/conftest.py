"""Shared fixtures: real kernels in real sandboxes, ad-hoc tasks, and a network-less runner."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from super_bench import EnvConfig, Environment, SandboxConfig, Task

# The paper's sample trajectories: beside the repository (<repo>/../shared/...), or where the variable says.
REFERENCE_TRAJECTORIES = Path(
    os.environ.get("SUPER_BENCH_REFERENCE_TRAJECTORIES")
    or Path(__file__).resolve().parents[2] / "shared" / "reference" / "super-trajectories"
)


def make_task(task_id: str = "t", query: str = "do it", **fields: Any) -> Task:
    return Task(task_id=task_id, query=query, **fields)


@pytest.fixture
def tmp_sandbox_root(tmp_path: Path) -> Path:
    root = tmp_path / "sandboxes"
    root.mkdir()
    return root


@pytest.fixture
def env_factory(tmp_sandbox_root: Path) -> Iterator[Any]:
    """Make environments with test-friendly limits; all are closed at the end of the test."""
    made: list[Environment] = []

    def factory(**settings: Any) -> Environment:
        sandbox = settings.pop("sandbox", {})
        config = EnvConfig(sandbox=SandboxConfig(root=tmp_sandbox_root, **sandbox), **settings)
        env = Environment(config)
        made.append(env)
        return env

    yield factory
    for env in made:
        env.close()


@pytest.fixture
def env(env_factory: Any) -> Environment:
    """A started environment on a trivial task."""
    environment: Environment = env_factory(cell_timeout=30)
    environment.reset(make_task())
    return environment


def _offline_prefix() -> list[str] | None:
    """A command prefix that runs a program with no network at all, if this machine allows it."""
    if shutil.which("unshare") is None:
        return None
    for prefix in (["unshare", "--net"], ["unshare", "-r", "--net"]):
        probe = subprocess.run([*prefix, "true"], capture_output=True)
        if probe.returncode == 0:
            return prefix
    return None


@pytest.fixture(scope="session")
def offline() -> list[str]:
    prefix = _offline_prefix()
    if prefix is None:
        pytest.skip("cannot create a network namespace here (unshare unavailable or not permitted)")
    return prefix
