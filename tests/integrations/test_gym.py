"""make(): the gym-style Python API, and the agent-loop example of docs/integrations.md run as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import super_bench as sb
from super_bench.errors import ConfigError, TaskError

DOC = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"


def doc_example(name: str) -> str:
    """The code block that follows ``<!-- tested: NAME -->`` in the integrations doc."""
    match = re.search(rf"<!-- tested: {name} -->\n```python\n(.*?)```", DOC.read_text(), re.DOTALL)
    assert match, f"no tested example {name!r} in {DOC}"
    return match.group(1)


def test_the_documented_agent_loop_runs(tmp_path: Path) -> None:
    code = doc_example("agent-loop")
    assert len(code.splitlines()) < 30
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "submitted output_match=1.0 landmarks=1.0 entrypoint=None submitted=1.0"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("super-bench-")]


@pytest.mark.slow
def test_make_finds_tasks_and_validates_settings(tmp_path: Path) -> None:
    sandbox = sb.SandboxConfig(root=tmp_path)
    with sb.make("tinyreg_goal", sandbox=sandbox, cell_timeout=30) as env:
        assert env.bound_task.task_set == "masked"  # found without naming its set
        assert env.config.cell_timeout == 30
        query = env.reset()
        assert query == env.bound_task.query
        assert [s.pre_executed for s in env.trajectory.steps] == [True, True]
        step = env.step({"type": "execute", "content": "!ls"})
        assert "train.py" in step.observation and not env.done
        assert (step.terminated, step.truncated, step.stop_reason) == (False, False, None)
        assert env.score().output_match == 0.0
        step = env.step({"type": "submit", "content": {"test_mse": 7.4031}})
        assert (step.terminated, step.truncated, step.stop_reason) == (True, False, "submitted")
        assert env.done and env.score().output_match == 1.0
        env.reset()  # a fresh episode of the same task
        assert len(env.trajectory.steps) == 2 and not env.done
    assert list(tmp_path.iterdir()) == []

    task = sb.Task(task_id="mine", query="Print hello.")
    assert sb.make(task).bound_task is task
    with pytest.raises(TaskError, match="did you mean tinyreg"):
        sb.make("tinyre")
    with pytest.raises(ConfigError, match=r"cell_timeout.*the settings are: cell_timeout"):
        sb.make("tinyreg", cell_timeout=-1)
    with pytest.raises(ConfigError, match="cel_timeout"):
        sb.make("tinyreg", cel_timeout=5)
    with pytest.raises(ConfigError, match="unknown sandbox backend 'nope'"):
        sb.make("tinyreg", sandbox="nope")
