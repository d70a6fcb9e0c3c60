"""A real research repository, run again: GPT-4o's recorded run on an Expert task of the paper, imported and
verified as docs/real-repositories.md says, with ``verify``'s defaults, the repository served from a git
mirror (a bundle), on bwrap and in SUPER's docker image (skipped where that image is not built). The replay is
compared step by step with what was recorded (the kind of each result, and the metrics printed, within 1e-2).

Its ``pip install -r requirements.txt`` installs torch 2.1.2 with CUDA libraries through the package cache
(about 5 GB the first time, a few minutes).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.helpers import REFERENCE_REPOS, REFERENCE_TRAJECTORIES
from tests.support.sandboxes import backend_settings

from super_bench.runner.paper_notebooks import notebook_trajectory
from super_bench.sandbox import SandboxConfig
from super_bench.sandbox.backends.container_image import image_info
from super_bench.sandbox.backends.docker import DockerSandbox

TASK = "unsupervisedhierarchicalsymbolicregression"
URL = "https://github.com/SiyuLou/UnsupervisedHierarchicalSymbolicRegression"
BUNDLE = REFERENCE_REPOS / "UnsupervisedHierarchicalSymbolicRegression.bundle"
NOTEBOOK = REFERENCE_TRAJECTORIES / "react-super_expert" / TASK / "history.ipynb"
# The metrics the scripts print: "R_square: 0.4694470167160034; MSE: 0.00488999058501889", and per epoch
# "train loss: 0.0120, val loss: 0.0010 RMSE: 0.0704, R_square: 0.4687".
METRIC = re.compile(r"(train loss|val loss|RMSE|MSE|R_square): (-?\d+(?:\.\d+)?(?:e-?\d+)?)")
ERROR = re.compile(r"^(\w+(?:Error|Exception)):", re.M)


def metrics(text: str) -> dict[str, list[float]]:
    """Each metric's distinct values, in the order printed (progress bars repeat lines)."""
    found: dict[str, list[float]] = {}
    for name, value in METRIC.findall(text):
        values = found.setdefault(name, [])
        if float(value) not in values:
            values.append(float(value))
    return found


def kind(step: dict[str, object]) -> tuple[object, ...]:
    """The kind of a step's result: its outcome, the errors it shows, whether pip installed things."""
    text = str(step["observation"])
    return step["outcome"], tuple(sorted(set(ERROR.findall(text)))), "Successfully installed" in text


def _verify_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``super-bench ARGS`` as a user runs it, given the time a replay takes."""
    command = [sys.executable, "-m", "super_bench", *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, env={**os.environ, "COLUMNS": "200"})


@pytest.mark.slow
@pytest.mark.timeout(5400)
@pytest.mark.parametrize("backend", ["bwrap", "docker"])
def test_the_documented_verify_reproduces_the_run_on_each_backend(backend: str, tmp_path: Path) -> None:
    """docs/real-repositories.md's steps 1 and 4, with their defaults (the network off, the package cache),
    reproduce the recorded run's submitted values on bwrap and in SUPER's docker image alike."""
    for needed in (BUNDLE, NOTEBOOK):
        if not needed.is_file():
            pytest.skip(
                f"{needed} is not here (set SUPER_BENCH_REFERENCE_REPOS and SUPER_BENCH_REFERENCE_TRAJECTORIES)"
            )
    settings = backend_settings(backend)
    extra: list[str] = []
    if backend == "docker":
        engine, image = DockerSandbox.engine_for(SandboxConfig(**settings))
        info = image_info(engine, image)
        if info is None or info.layer != "super":
            pytest.skip(f"{image} is not SUPER's image (build it with `super-bench sandbox build --sandbox docker`)")
        extra = ["--image", image]
    runs = tmp_path / "runs" / "gpt4o"
    imported = _verify_cli("import-trajectories", str(NOTEBOOK.parents[1]), "--out", str(runs), cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    verified = _verify_cli(
        "verify",
        str(runs),
        "--task-ids",
        TASK,
        "--git-mirror",
        f"{URL}={BUNDLE}",
        "--sandbox",
        backend,
        *extra,
        cwd=tmp_path,
    )
    assert verified.returncode == 0, verified.stdout[-3000:] + verified.stderr[-3000:]
    summary = json.loads((runs / "verify-summary.json").read_text())
    assert (summary["reproduced"], summary["n_tasks"]) == (1, 1), verified.stdout[-3000:]
    assert summary["environment"]["sandbox"]["backend"] == backend
    # Step by step, the replay shows what the recorded run showed.
    recorded = notebook_trajectory(NOTEBOOK, TASK)
    assert f"!git clone {URL}.git" in str(recorded.steps[0].action.content)  # the clone the mirror serves
    (replay,) = (runs / "verify").glob("*/trajectory.json")
    replayed = json.loads(replay.read_text())["steps"]
    # (verify replays the actions without the submission)
    before = [step.model_dump(mode="json") for step in recorded.steps if step.action.type != "submit"]
    assert len(replayed) == len(before)
    for now, then in zip(replayed, before):
        where = f"step {then['index']}: {str(then['action']['content'])[:60]!r}"
        assert kind(now) == kind(then), (where, now["observation"][-2000:])
        got, want = metrics(now["observation"]), metrics(then["observation"])
        assert got.keys() == want.keys(), (where, got, want)
        for name in want:
            assert got[name] == pytest.approx(want[name], abs=1e-2), (where, name)
