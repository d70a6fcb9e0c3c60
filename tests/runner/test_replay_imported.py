"""Replaying the paper's published trajectories: the steps that were no valid action there (an
unreadable reply, a free-text action label) are replayed as invalid steps, not run as cells."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.support.helpers import REFERENCE_TRAJECTORIES

from super_bench import run
from super_bench.environment import EnvConfig
from super_bench.runner.importer import import_trajectories
from super_bench.sandbox import SandboxConfig
from super_bench.tasks.model import Task

EXPERT = REFERENCE_TRAJECTORIES / "react-super_expert"


@pytest.fixture
def imported(tmp_path: Path) -> Path:
    if not EXPERT.is_dir():
        pytest.skip("the published trajectories are not here (set SUPER_BENCH_REFERENCE_TRAJECTORIES)")
    source = tmp_path / "published"
    source.mkdir()
    for name in ("galore", "inbedder"):
        (source / name).symlink_to(EXPERT / name)
    import_trajectories(source, tmp_path / "imported")
    return tmp_path / "imported"


@pytest.mark.parametrize(("task_id", "keep"), [("galore", range(9, 14)), ("inbedder", range(10, 14))])
def test_imported_invalid_steps_are_replayed_as_invalid(
    imported: Path, tmp_path: Path, tmp_sandbox_root: Path, task_id: str, keep: range
) -> None:
    recorded = json.loads((imported / "tasks" / task_id / "trajectory.json").read_text())
    # A stretch around the invalid steps, so that the replay stays short (the rest needs the network).
    steps = [recorded["steps"][i] for i in keep]
    replay = tmp_path / "replay.json"
    replay.write_text(json.dumps({**recorded, "steps": steps}))
    invalid = [i for i, s in enumerate(steps) if s["outcome"] == "invalid"]
    assert invalid, "the stretch holds no invalid step"

    outcome = run(
        tasks=[Task(task_id=task_id, query=recorded["query"])],
        agent=f"replay:{replay}",
        out=tmp_path / "run",
        env=EnvConfig(cell_timeout=60, sandbox=SandboxConfig(backend="local", root=tmp_sandbox_root)),
    )
    replayed = json.loads((outcome.run_dir.task_dir(task_id) / "trajectory.json").read_text())["steps"]
    assert len(replayed) == len(steps)
    for i in invalid:
        step, original = replayed[i], steps[i]
        assert step["outcome"] == "invalid", step
        assert step["observation"] == original["observation"]  # the message the agent was shown then
        assert step["metadata"]["notebook_action"] == original["metadata"]["notebook_action"]
        assert step["action"] == original["action"] and step["thought"] == original["thought"]
