"""One environment whatever the backend: what a task sees of its Python (``python -V``, ``pip -V``, ``pip
freeze``) and of its shell (``!echo $0``) on bwrap and on docker is equal, or each difference is recorded in
the backend's ``task_environment`` (what runs keep in run.json and ``sandbox check`` shows), and each way it
differs from the paper's environment is in that record's ``differences``. Skipped cleanly where a backend
cannot run, or does not run SUPER's environment (bwrap without ``sandbox build``'s base, docker without
SUPER's image: CI builds neither)."""

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


def _shows(record: dict[str, Any], name: str) -> bool:
    """Whether one of the record's differences from the paper's names ``name`` (``torch 2.2.1, not ...``,
    ``Python 3.11.2, not 3.10 ...``, or among the missing: ``1 of its packages missing: en-core-web-sm``)."""
    word = re.compile(rf"(?:^|[\s,:]){re.escape(name)}(?:[\s,]|$)", re.IGNORECASE)
    return any(word.search(str(d)) for d in record.get("differences", []))


def _unrecorded(seen: dict[str, dict[str, Any]], recorded: dict[str, dict[str, Any]]) -> list[str]:
    """What differs between the two backends' tasks and neither backend's record shows as a difference from
    the paper's environment (``differences``, what ``sandbox check`` prints), nor as the kernel's own packages
    (last on a host task's path; a container keeps them out of the task's)."""
    (a, first), (b, second) = seen.items()
    kernel = {_canonical(k) for record in recorded.values() for k in record.get("kernel_packages", {})}
    found = []
    for what, word in (("python", "Python"), ("pip", "pip")):
        if first[what] != second[what] and not any(_shows(recorded[n], f"{word} {seen[n][what]}") for n in seen):
            found.append(f"{what}: {a} {first[what]}, {b} {second[what]}")
    for name in sorted(first["freeze"].keys() | second["freeze"].keys()):
        mine, theirs = first["freeze"].get(name), second["freeze"].get(name)
        if mine == theirs or (name in kernel and None in (mine, theirs)):
            continue
        if not any(_shows(record, name) for record in recorded.values()):
            found.append(f"{name}: {a} {mine}, {b} {theirs}")
    return found


def test_a_difference_between_backends_counts_as_recorded_only_where_a_record_shows_it() -> None:
    paper = {"python": "3.10.13", "pip": "24.0", "freeze": {"torch": "2.2.1", "click": "8.1.7"}}
    seen = {"bwrap": paper, "docker": {**paper, "freeze": {"torch": "2.2.1", "click": "8.1.8"}}}
    plain: dict[str, dict[str, Any]] = {"bwrap": {"differences": []}, "docker": {"differences": []}}
    assert _unrecorded(seen, plain) == ["click: bwrap 8.1.7, docker 8.1.8"]
    seen["docker"] = {**paper, "python": "3.10.12", "pip": "26.3"}
    assert _unrecorded(seen, plain) == ["python: bwrap 3.10.13, docker 3.10.12", "pip: bwrap 24.0, docker 26.3"]
    shown = {**plain, "docker": {"differences": ["pip 26.3, not 24.0 as in the paper's"]}}
    assert _unrecorded(seen, shown) == ["python: bwrap 3.10.13, docker 3.10.12"]
    # A package of the list missing on one side is shown by that side's record; the kernel's own are known.
    seen["docker"] = {**paper, "freeze": {"click": "8.1.7", "comm": "0.2.2"}}
    missing = {**plain, "docker": {"differences": ["1 of its packages missing: torch"]}}
    assert _unrecorded(seen, missing) == ["comm: bwrap None, docker 0.2.2"]
    kernel = {**missing, "docker": {**missing["docker"], "kernel_packages": {"comm": "0.2.2"}}}
    assert _unrecorded(seen, kernel) == []


@pytest.mark.slow
def test_bwrap_and_docker_tasks_see_one_environment_or_record_each_difference(env_factory: Any) -> None:
    backends = {name: backend_settings(name) for name in ("bwrap", "docker")}
    recorded = {name: _recorded(settings) for name, settings in backends.items()}
    # SUPER's environment on both (CI builds the docker image's kernel layer only, and no base).
    if recorded["bwrap"].get("kind") != "built":
        pytest.skip("bwrap's tasks run over the minimal default: build SUPER's with `super-bench sandbox build`")
    if recorded["docker"].get("layer") != "super":
        pytest.skip("the docker image is not SUPER's: build it with `super-bench sandbox build --sandbox docker`")
    seen = {name: _seen(env_factory, settings) for name, settings in backends.items()}
    # `!` runs in sh on both, as the paper's did; nothing records a shell, so it must be the same.
    assert seen["bwrap"]["shell"] == seen["docker"]["shell"], seen
    assert seen["bwrap"]["shell"].rpartition("/")[2] == "sh", seen  # IPython's `sh` on PATH, not $SHELL
    for name in backends:
        mine, record = seen[name], recorded[name]
        # What each backend records is what its tasks see.
        assert (mine["python"], mine["pip"]) == (record["python"], record["pip"]), name
        assert mine["freeze"] == record["freeze"], name
        # And each way it differs from the paper's environment is in the record's differences.
        differences = record["differences"]
        if not mine["python"].startswith(PAPER_PYTHON + "."):
            assert f"Python {mine['python']}, not {PAPER_PYTHON} as in the paper's" in differences, name
        if mine["pip"] != PAPER_PIP:
            assert f"pip {mine['pip']}, not {PAPER_PIP} as in the paper's" in differences, name
    # Across the backends: one interpreter, one pip, one package set, but for what the records show.
    assert _unrecorded(seen, recorded) == []
