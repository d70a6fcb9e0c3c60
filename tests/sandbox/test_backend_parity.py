"""One environment whatever the backend: what a task sees of its Python (``python -V``, ``pip -V``, ``pip
freeze``) and of its shell (``!echo $0``) on bwrap and on docker is equal, or each difference is recorded in
the backend's ``task_environment`` (what runs keep in run.json and ``sandbox check`` shows), and each way it
differs from the paper's environment is in that record's ``differences``. Skipped cleanly where a backend
cannot run (docker without its image)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from tests.support.helpers import make_task
from tests.support.sandboxes import backend_settings

from super_bench import Action, Environment
from super_bench.sandbox import SandboxConfig, describe_backend
from super_bench.sandbox.pyenv.paper_pip import PAPER_PIP
from super_bench.sandbox.pyenv.super_base import PAPER_PYTHON

# pip freeze leaves these out of its list.
_FREEZE_SKIPS = {"pip", "setuptools", "wheel", "distribute"}


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _seen(env_factory: Any, settings: dict[str, Any]) -> dict[str, Any]:
    env: Environment = env_factory(cell_timeout=120, sandbox={**settings, "network": False})
    env.reset(make_task())

    def out(code: str) -> str:
        step = env.step(Action.execute(code))
        assert step.exit_code == 0, step.observation
        return step.observation.strip()

    freeze = {}
    for line in out("!pip freeze --all").splitlines():
        name, _, version = line.partition("==")
        freeze[_canonical(name)] = version
    return {
        "python": out("!python -V").removeprefix("Python "),
        "pip": out("!pip -V").split()[1],
        "freeze": {k: v for k, v in freeze.items() if k not in _FREEZE_SKIPS},
        "shell": out("!echo $$0"),  # IPython reads `$0` as Python's
    }


def _recorded(settings: dict[str, Any]) -> dict[str, Any]:
    environment = describe_backend(SandboxConfig(**settings), packages=True).task_environment
    # The kernel's packages lie last on a host task's path: a package in both is the task's own.
    listed = {**environment.get("kernel_packages", {}), **environment.get("packages", {})}
    packages = {_canonical(k): v for k, v in listed.items() if _canonical(k) not in _FREEZE_SKIPS}
    return {**environment, "freeze": packages}


@pytest.mark.slow
def test_bwrap_and_docker_tasks_see_one_environment_or_record_each_difference(env_factory: Any) -> None:
    backends = {name: backend_settings(name) for name in ("bwrap", "docker")}
    seen = {name: _seen(env_factory, settings) for name, settings in backends.items()}
    recorded = {name: _recorded(settings) for name, settings in backends.items()}
    # `!` runs in sh on both, as the paper's did; nothing records a shell, so it must be the same.
    assert seen["bwrap"]["shell"] == seen["docker"]["shell"], seen
    for name in backends:
        mine, record = seen[name], recorded[name]
        # What each backend records is what its tasks see: a difference between them is a recorded one.
        assert (mine["python"], mine["pip"]) == (record["python"], record["pip"]), name
        assert mine["freeze"] == record["freeze"], name
        # And each way it differs from the paper's environment is in the record's differences.
        differences = record["differences"]
        if not mine["python"].startswith(PAPER_PYTHON + "."):
            assert f"Python {mine['python']}, not {PAPER_PYTHON} as in the paper's" in differences, name
        if mine["pip"] != PAPER_PIP:
            assert f"pip {mine['pip']}, not {PAPER_PIP} as in the paper's" in differences, name
