"""Whose failure is it: what an agent's own actions cause is scored as its failure, never excluded as
the infrastructure's. Answers that cannot be kept, replay files that cannot be read, kernels the agent
left unable to restart, and values agent code wrote straight into the trajectory."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.flaky_sandbox import OneKernelSandbox
from tests.support.helpers import make_task

from super_bench import Action, EnvConfig, Environment, RunConfig, SandboxConfig, Trajectory, run
from super_bench.agents import AGENTS, replay
from super_bench.environment.failures import Failure, classify_failure
from super_bench.errors import (
    AgentError,
    KernelError,
    KernelRestartError,
    ModelError,
    ModelUnavailableError,
    SandboxError,
    SuperBenchError,
)
from super_bench.sandbox import SANDBOXES


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def config(tmp_path: Path, **settings: Any) -> RunConfig:
    sandbox = SandboxConfig(root=tmp_path / "sandboxes", **settings.pop("sandbox", {}))
    settings.setdefault("out", tmp_path / "run")
    return RunConfig(env=EnvConfig(cell_timeout=60, sandbox=sandbox), **settings)


def replay_file(tmp_path: Path, actions: list[Any]) -> str:
    path = tmp_path / "actions.json"
    path.write_text(json.dumps(actions))
    return f"replay:{path}"


# -- the rule -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("error", "agent_acted", "expected"),
    [
        (KernelRestartError("no kernel"), True, Failure("completed", "environment_broken")),
        (KernelRestartError("no kernel"), False, Failure("infra_error", "infra_error")),
        (KernelError("no answer at start-up"), True, Failure("infra_error", "infra_error")),
        (SandboxError("would not start"), False, Failure("infra_error", "infra_error")),
        (ModelUnavailableError("HTTP 503"), True, Failure("infra_error", "infra_error")),
        (ModelError("HTTP 400: prompt too long"), True, Failure("agent_error", "agent_error")),
        (AgentError("its own bug"), True, Failure("agent_error", "agent_error")),
        (RecursionError("deep"), True, Failure("agent_error", "agent_error")),
        (ValueError("anything else"), False, Failure("agent_error", "agent_error")),
    ],
)
def test_the_failure_classes(error: Exception, agent_acted: bool, expected: Failure) -> None:
    assert classify_failure(error, agent_acted=agent_acted) == expected


# -- answers --------------------------------------------------------------------------------------------
BAD_ANSWERS = [
    (nested(600), "nested more than 64 levels deep"),
    (json.dumps(nested(600)), "nested more than 64 levels deep"),
    ("[" * 10_000 + "]" * 10_000, "nested more than 64 levels deep"),
    ("1" * 5000, "cannot be read"),  # Python reads no integer of more than 4300 digits
    (10**5000, "cannot be written as JSON"),
    ({1, 2}, "holds a value of type set, which JSON cannot hold"),
    ({1: 0.5}, "has a dict key that is not a string"),
    ('"' + "x" * 1_000_001 + '"', "longer than 1,000,000 characters"),
    (["x" * 1000] * 2000, "longer than 1,000,000 characters as JSON"),
    ("{accuracy: 0.5", "not valid JSON"),
]


@pytest.mark.slow
def test_an_answer_that_cannot_be_kept_is_refused_and_the_episode_goes_on(env: Environment, tmp_path: Path) -> None:
    for answer, message in BAD_ANSWERS:
        step = env.step(Action.submit(answer))
        assert step.outcome == "invalid", message
        assert message in step.observation and "Nothing was submitted" in step.observation
        assert not env.done and not env.trajectory.submitted
    # What was refused is recorded, within bounds, and the trajectory is written and read back.
    recorded = [step.action.content for step in env.trajectory.steps]
    assert recorded[0] == "[super-bench: a list not kept: it is nested more than 64 levels deep]"
    assert recorded[1] == json.dumps(nested(600))  # the agent's text, as it was
    assert len(recorded[7]) < 200_000
    env.step(Action.submit([[{"accuracy": (0.5, 1)}]]))
    assert env.trajectory.submission == [[{"accuracy": [0.5, 1]}]]  # as JSON keeps it, so re-scoring agrees
    saved = Trajectory.load(env.trajectory.save(tmp_path))
    assert saved.submission == env.trajectory.submission
    assert len(saved.steps) == len(BAD_ANSWERS) + 1


@pytest.mark.slow
def test_other_content_that_cannot_be_kept_is_not_performed(env: Environment, tmp_path: Path) -> None:
    step = env.step({"type": "execute", "content": {1, 2}})
    assert step.outcome == "invalid" and "was not performed" in step.observation
    assert step.action.content == "[super-bench: a set not kept: it holds a value of type set, which JSON cannot hold]"
    # Agent code passing a thought or metadata the trajectory cannot hold is a bug of its own, raised.
    with pytest.raises(SuperBenchError, match="metadata is nested more than 64 levels deep"):
        env.step(Action.execute("print(1)"), metadata={"deep": nested(100)})
    with pytest.raises(SuperBenchError, match="thought must be text"):
        env.step(Action.execute("print(1)"), thought=42)  # type: ignore[arg-type]
    with pytest.raises(SuperBenchError, match="nested too deeply"):
        env.step('{"type": "submit", "content": ' + "[" * 10_000 + "]" * 10_000 + "}")
    assert len(env.trajectory.steps) == 1
    assert Trajectory.load(env.trajectory.save(tmp_path)).steps[0].outcome == "invalid"


def test_a_600_deep_answer_is_a_completed_task_that_failed(tmp_path: Path) -> None:
    agent = replay_file(tmp_path, [{"type": "submit", "content": nested(600)}])
    (result,) = run(config(tmp_path, task_ids=["tinyreg"], agent=agent)).results
    assert (result.status, result.attempts, result.stop_reason) == ("completed", 1, "agent_stopped")
    assert result.metrics.submitted == 0.0 and result.metrics.output_match == 0.0
    trajectory = Trajectory.load(tmp_path / "run" / str(result.trajectory))
    assert trajectory.steps[-1].outcome == "invalid"


class CarelessAgent:
    """Submits, after keeping a note in the trajectory that JSON cannot hold."""

    name = "careless"

    def __init__(self, arg: str | None = None, options: Any = None) -> None:
        pass

    def run(self, env: Environment) -> None:
        env.trajectory.metadata["files"] = {"paths": {Path("a")}}  # written as JSON can: a list of strings
        env.trajectory.metadata["seen"] = {"model": object()}
        env.step(Action.submit({"test_mse": 7.4031}))


@pytest.mark.slow
def test_an_agent_that_writes_what_cannot_be_kept_is_its_failure_not_retried(tmp_path: Path) -> None:
    AGENTS.register("careless", "tests.agents.test_agent_failures:CarelessAgent")
    try:
        (result,) = run(config(tmp_path, task_ids=["tinyreg"], agent="careless", infra_retries=2)).results
    finally:
        AGENTS.unregister("careless")
    assert (result.status, result.stop_reason, result.attempts) == ("agent_error", "submitted", 1)
    assert result.metrics.output_match == 1.0  # scored on what the trajectory holds
    assert "metadata 'seen' cannot be written as JSON (Unable to serialize unknown type" in (result.error or "")
    saved = Trajectory.load(tmp_path / "run" / str(result.trajectory))
    assert saved.metadata["seen"].startswith("[super-bench: a dict not kept") and saved.metadata["files"] == {
        "paths": ["a"]
    }


def test_values_agent_code_wrote_into_the_trajectory_are_replaced_and_its_failure(tmp_path: Path) -> None:
    trajectory = Trajectory(task_id="t", query="q", submission={"ok": {3, 4}}, metadata={"deep": nested(300)})
    trajectory.metadata["fine"] = {"a": [1, 2], "b": {3}}
    unkept = trajectory.drop_unkeepable()
    assert unkept == [
        "metadata 'deep' is nested more than 64 levels deep",
        "the submission holds a value of type set, which JSON cannot hold",  # scored: it must be plain JSON
    ]
    assert trajectory.metadata["fine"] == {"a": [1, 2], "b": {3}}
    assert Trajectory.load(trajectory.save(tmp_path)).metadata["deep"].startswith("[super-bench: a list not kept")


# -- replay files ---------------------------------------------------------------------------------------
def test_a_replay_file_nested_too_deeply_is_a_clear_error_naming_it(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 10_000 + "]" * 10_000)
    done = subprocess.run(
        [sys.executable, "-m", "super_bench", "run", "--agent", f"replay:{deep}", "--out", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert f"{deep}: its JSON is nested too deeply" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


def test_a_replay_file_too_large_or_unreadable_is_a_clear_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = tmp_path / "big.json"
    big.write_text(json.dumps([{"type": "execute", "content": "x" * 4096}]))
    monkeypatch.setattr(replay, "MAX_REPLAY_BYTES", 1024)
    with pytest.raises(AgentError, match=rf"replay: {big} is 0 MiB, more than a replay file may be"):
        replay.load_actions(big)
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps([{"action": {"type": "execute", "content": "1"}, "thought": {"a": 1}}]))
    with pytest.raises(AgentError, match=rf"replay: {odd}, action 0: the thought must be text, not dict"):
        replay.load_actions(odd)
    garbled = tmp_path / "garbled.json"
    garbled.write_bytes(b"\xff[")
    with pytest.raises(AgentError, match=rf"replay: cannot read actions from {garbled}: .*utf-8"):
        replay.load_actions(garbled)


# -- kernels that cannot restart ----------------------------------------------------------------------------
@pytest.fixture
def one_kernel() -> Iterator[None]:
    SANDBOXES.register("one-kernel", "tests.support.flaky_sandbox:OneKernelSandbox")
    yield
    SANDBOXES.unregister("one-kernel")


def test_a_kernel_that_cannot_restart_after_the_agent_acted_ends_the_episode(tmp_sandbox_root: Path) -> None:
    config = EnvConfig(cell_timeout=30, sandbox=SandboxConfig(root=tmp_sandbox_root))
    with Environment(config, sandbox_factory=OneKernelSandbox) as env:
        env.reset(make_task(landmarks=["before it died"]))
        step = env.step(
            Action.execute("import os, time\nprint('before it died', flush=True)\ntime.sleep(1)\nos._exit(3)")
        )
        assert step.outcome == "kernel_died" and "before it died" in step.raw_output
        assert (
            "The kernel died (exited with status 3).\n[super-bench] The kernel was stopped, and no new kernel could be started: injected failure"
            in step.observation
        )
        assert "The episode ends here" in step.observation
        assert env.done and env.trajectory.stop_reason == "environment_broken"
        assert (step.terminated, step.truncated, step.stop_reason) == (True, False, "environment_broken")
        assert "no new kernel could be started" in env.trajectory.metadata["error"]


def test_a_kernel_that_cannot_restart_before_the_agent_acted_is_the_infrastructures(tmp_sandbox_root: Path) -> None:
    config = EnvConfig(cell_timeout=30, sandbox=SandboxConfig(root=tmp_sandbox_root))
    task = make_task(pre_execute_cells=[json.dumps({"type": "execute", "content": "import os\nos._exit(3)"})])
    with Environment(config, sandbox_factory=OneKernelSandbox) as env, pytest.raises(KernelRestartError):
        env.reset(task)


def test_a_broken_environment_is_scored_as_the_agents_and_not_retried(tmp_path: Path, one_kernel: None) -> None:
    agent = replay_file(tmp_path, [{"type": "execute", "content": "import os\nos._exit(3)"}])
    settings = config(tmp_path, task_ids=["tinyreg"], agent=agent, infra_retries=2, sandbox={"backend": "one-kernel"})
    (result,) = run(settings).results
    assert (result.status, result.stop_reason, result.attempts) == ("completed", "environment_broken", 1)
    assert result.metrics.output_match == 0.0
    assert "injected failure" in (result.error or "")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["n_scored"] == 1 and summary["infra_errors"] == 0
