"""The agent-environment contract: a step says whether and why the episode ended, the environment says
where the notebook is and what is left of each budget, attempts are the environment's, and agents and
integrations use nothing else of it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.support.helpers import make_task

from super_bench import Action, Environment, Trajectory
from super_bench.agents import AGENTS, AgentOptions
from super_bench.agents.reflexion import ReflexionAgent
from super_bench.environment import AgentEnv
from super_bench.environment.agent_env import MEMBERS
from super_bench.errors import EnvironmentClosedError
from super_bench.models.mock import MockModel
from super_bench.trajectory import Step, Usage

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "super_bench"
OLD_TRAJECTORY = Path(__file__).parents[1] / "data" / "run-v1" / "tasks" / "tinyreg" / "trajectory.json"


def ended(step: Step) -> tuple[bool, bool, str | None]:
    return step.terminated, step.truncated, step.stop_reason


# -- how a step ends an episode ----------------------------------------------------------------------------
def test_a_submission_terminates_the_episode_and_a_budget_truncates_it(env_factory: Any, tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    env = Environment(env_factory(max_steps=3).config, on_step=lambda step: seen.append(step.model_dump()))
    env.reset(make_task())
    try:
        assert ended(env.step(Action.execute("1"))) == (False, False, None)
        assert ended(env.step({"type": "submit", "content": "not json"})) == (False, False, None)  # refused
        step = env.step({"type": "submit", "content": {"x": 1}})
        assert ended(step) == (True, False, "submitted")
        # What is reported as each step happens (the step log of a run) is the step as it ended.
        assert [(s["terminated"], s["stop_reason"]) for s in seen] == [
            (False, None),
            (False, None),
            (True, "submitted"),
        ]
    finally:
        env.close()

    env = env_factory(max_steps=2)
    env.reset(make_task())
    assert ended(env.step(Action.execute("1"))) == (False, False, None)
    assert ended(env.record_invalid({"type": "execute", "content": "?"}, "unreadable")) == (False, True, "max_steps")

    env = env_factory(max_compute=0.3)
    env.reset(make_task())
    assert ended(env.step(Action.execute("import time; time.sleep(0.5)"))) == (False, True, "max_compute")

    env.trajectory.save(tmp_path)
    steps = json.loads((tmp_path / "trajectory.json").read_text())["steps"]
    assert (steps[-1]["terminated"], steps[-1]["truncated"], steps[-1]["stop_reason"]) == (False, True, "max_compute")


def test_a_trajectory_written_before_steps_said_how_the_episode_ended_still_loads() -> None:
    trajectory = Trajectory.load(OLD_TRAJECTORY)
    assert trajectory.schema_version == 1 and trajectory.stop_reason == "submitted"
    assert "terminated" not in json.loads(OLD_TRAJECTORY.read_text())["steps"][-1]
    assert [ended(s) for s in trajectory.steps] == [(False, False, None)] * len(trajectory.steps)


# -- where the notebook is -----------------------------------------------------------------------------------
def test_cwd_is_where_the_notebook_is_and_workdir_where_it_started(env: Environment) -> None:
    assert env.cwd == env.workdir
    env.step(Action.execute("!mkdir -p sub/deeper"))
    env.step(Action.execute("%cd sub/deeper"))
    assert env.cwd == f"{env.workdir}/sub/deeper"
    assert env.step(Action.execute("import os; print(os.getcwd())")).observation.strip() == env.cwd
    env.step(Action.execute("import os; os._exit(1)"))  # a new kernel starts where the notebook started
    assert env.cwd == env.workdir


def test_the_notebook_api_needs_an_episode() -> None:
    env = Environment()
    for query in (lambda: env.cwd, lambda: env.workdir, env.budget_left, env.new_attempt):
        with pytest.raises(EnvironmentClosedError, match="call reset"):
            query()
    env.kill_kernel()  # nothing to kill: harmless


# -- budgets ---------------------------------------------------------------------------------------------------
def test_budget_left_counts_down_every_budget(env_factory: Any) -> None:
    env = env_factory(max_steps=5, max_compute=100, max_tokens=1000, max_cost=1.0, sandbox={"wall_time_limit": 600})
    env.reset(make_task())
    left = env.budget_left()
    assert (left.steps, left.execution_seconds, left.prompt_tokens, left.cost) == (5, 100, 1000, 1.0)
    assert left.wall_seconds is not None and 500 < left.wall_seconds <= 600
    env.step(Action.execute("import time; time.sleep(0.2)"))
    env.add_usage(Usage(model_calls=1, prompt_tokens=400, cost=0.25))
    left = env.budget_left()
    assert (left.steps, left.prompt_tokens, left.cost) == (4, 600, 0.75)
    assert left.execution_seconds is not None and 99 < left.execution_seconds <= 99.8
    assert not left.model_calls_spent and left.spent() is None
    env.add_usage(Usage(model_calls=1, prompt_tokens=700))
    left = env.budget_left()
    assert left.prompt_tokens == 0 and left.model_calls_spent and left.spent() == "max_tokens"
    assert env.check_budgets() and env.trajectory.stop_reason == "max_tokens"

    env = env_factory(max_steps=None, max_compute=None)
    env.reset(make_task(task_id="m_data", task_set="masked"))
    left = env.budget_left()
    assert (left.steps, left.execution_seconds, left.wall_seconds, left.cost) == (None, None, None, None)
    assert left.prompt_tokens == 400_000  # the paper's budget for Masked tasks
    env.add_usage(Usage(cost=5.0))
    assert not env.budget_left().model_calls_spent  # no limit on cost


# -- attempts -------------------------------------------------------------------------------------------------
def test_a_new_attempt_starts_afresh_and_carries_the_task_budgets(env_factory: Any) -> None:
    env = env_factory(max_steps=2)
    cells = [json.dumps({"type": "execute", "content": "prepared = 1"})]
    task = make_task(query="the task", pre_execute_cells=cells)
    env.reset(task, agent="mine", model="mock/m")
    assert env.attempt == 1
    env.step(Action.execute("x = 1"))
    env.add_usage(Usage(model_calls=2, prompt_tokens=100, cost=0.5))
    env.step(Action.execute("print(x)"))
    assert env.done and env.trajectory.stop_reason == "max_steps"
    first = env.trajectory

    finished = env.new_attempt(query="the task, and what was learnt")
    assert finished is first and finished.finished_at is not None and finished.stop_reason == "max_steps"
    assert env.attempt == 2 and not env.done
    assert env.task.query == "the task, and what was learnt"  # what the agent is told now
    fresh = env.trajectory
    assert (fresh.query, fresh.agent, fresh.model, fresh.started_at) == ("the task", "mine", "mock/m", first.started_at)
    assert fresh.usage == first.usage and fresh.usage is not first.usage
    assert [s.pre_executed for s in fresh.steps] == [True]  # the pre-executed cell ran again
    assert env.budget_left().steps == 2 and env.budget_left().prompt_tokens == env.max_tokens - 100
    assert "NameError" in env.step(Action.execute("print(x)")).observation  # a new kernel
    assert env.step(Action.execute("print(prepared)")).observation == "1\n"
    assert env.trajectory.stop_reason == "max_steps" and len(finished.steps) == 3  # the first attempt is kept as it was
    env.add_usage(Usage(prompt_tokens=1))
    assert first.usage.prompt_tokens == 100  # and no longer counts

    env.new_attempt()
    assert env.attempt == 3 and env.task.query == "the task"


class _CountingEnvironment(Environment):
    resets = 0

    def reset(self, task: Any, **who: Any) -> str:
        self.resets += 1
        return super().reset(task, **who)


def test_reflexion_leaves_attempts_to_the_environment(env_factory: Any) -> None:
    model = MockModel(
        "script",
        replies=[
            "Thought: look.\nAction: execute\n<content>\nprint('one')\n</content>",
            "I ran out of steps; answer at once next time.",
            'Thought: answer.\nAction: submit\n<content>\n{"x": 1}\n</content>',
        ],
    )
    env = _CountingEnvironment(env_factory(cell_timeout=30, max_steps=1).config)
    try:
        env.reset(make_task(answer={"x": 1}), agent="reflexion:react")
        ReflexionAgent("react", AgentOptions(settings={"attempts": 2}), model=model).run(env)
        assert env.resets == 1 and env.attempt == 2
        assert env.trajectory.agent == "reflexion:react" and env.trajectory.query == "do it"
        assert env.trajectory.stop_reason == "submitted" and env.trajectory.usage.model_calls == 3
    finally:
        env.close()


# -- agents use the environment's API only: typed against AgentEnv, checked by mypy -------------------------
def _package_agents() -> list[type]:
    """The classes of the agents the package registers."""
    classes = [AGENTS.get(name) for name in AGENTS.names()]
    return [c for c in classes if isinstance(c, type) and c.__module__.startswith("super_bench.")]


def test_every_agent_of_the_package_is_typed_against_agent_env() -> None:
    agents = _package_agents()
    assert {a.__name__ for a in agents} >= {"GoldAgent", "ReActAgent", "SWEAgent", "ReflexionAgent", "HumanAgent"}
    for agent in agents:
        namespace = {**vars(sys.modules[agent.__module__]), "AgentEnv": AgentEnv, "Environment": Environment}
        annotation = agent.run.__annotations__["env"]
        assert (eval(annotation, namespace) if isinstance(annotation, str) else annotation) is AgentEnv, agent


def test_the_environment_has_every_member_of_agent_env() -> None:
    env = Environment()
    assert sorted(MEMBERS - set(dir(env))) == []  # dir reads no property: fine before reset
    assert {"sandbox", "kernel", "reset", "close", "kill_kernel", "prepare"}.isdisjoint(MEMBERS)


def test_mypy_refuses_an_agent_that_reaches_past_agent_env(tmp_path: Path) -> None:
    """What keeps agents to AgentEnv is the type checker: an agent that reaches for the sandbox, the kernel or the
    harness's own calls fails ``mypy`` (CI runs it on the package), one that keeps to AgentEnv passes."""
    api = pytest.importorskip("mypy.api")
    agent = tmp_path / "my_agent.py"
    agent.write_text(
        "from super_bench.environment import AgentEnv\n"
        "def run(env: AgentEnv) -> None:\n"
        "    env.step({'type': 'execute', 'content': '1'}, thought=env.cwd)\n"
        "    print(env.budget_left().cost, env.task.query, env.config.cell_timeout, env.trajectory.steps)\n"
        "    env._sandbox.workdir\n"
        "    env.kernel.restarts\n"
        "    env.reset(env.task)\n"
        "    env.close()\n"
    )
    out, _, status = api.run([str(agent), "--strict", "--no-error-summary", "--follow-imports=silent"])
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert status == 1 and [line.split(":")[1] for line in errors] == ["5", "6", "7", "8"], out
    assert all('"AgentEnv" has no attribute' in line for line in errors), out


def test_architecture_md_lists_the_members_of_agent_env_and_no_other() -> None:
    text = (PACKAGE.parents[1] / "docs" / "architecture.md").read_text()
    table = text.split("## What agents may use", 1)[1].split("\n## ", 1)[0]
    documented = {line.split("`")[1].split("(")[0] for line in table.splitlines() if line.startswith("| `")}
    assert documented == MEMBERS
