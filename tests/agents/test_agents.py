"""The model-driven agents, end to end: scripted models drive real kernels through the demo tasks."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from tests.support.helpers import ANSWER, CLONE, TRAIN, make_task, react
from tests.support.model_server import error, model_server, raw

from super_bench import EnvConfig, RunConfig, SandboxConfig, Task, load_tasks, run, score_trajectory
from super_bench.agents import AgentOptions, create_agent
from super_bench.agents.human import HumanAgent
from super_bench.agents.react import ReActAgent, ReActSuperAgent
from super_bench.errors import ConfigError
from super_bench.models import ModelOptions
from super_bench.models.mock import MockModel


def script(tmp_path: Path, *replies: str) -> str:
    """A mock model spec whose script file holds these replies."""
    path = tmp_path / f"script-{len(list(tmp_path.glob('script-*')))}.txt"
    path.write_text("\n=====\n".join(replies))
    return f"mock/{path}"


def config(tmp_path: Path, **settings: Any) -> RunConfig:
    env = {"cell_timeout": 60, "sandbox": SandboxConfig(root=tmp_path / "sandboxes"), **settings.pop("env", {})}
    settings.setdefault("out", tmp_path / "run")
    return RunConfig(env=EnvConfig(**env), **settings)


def tinyreg() -> Task:
    return load_tasks("demo", "expert", task_ids=["tinyreg"])[0]


def assert_solved(outcome: Any) -> None:
    (result,) = outcome.results
    assert result.status == "completed", result.error
    assert result.stop_reason == "submitted"
    assert (result.metrics.output_match, result.metrics.landmarks, result.metrics.submitted) == (1.0, 1.0, 1.0)


# -- ReAct and ReAct-SUPER ---------------------------------------------------------------------------
@pytest.mark.slow
def test_react_super_solves_a_demo_task(tmp_path: Path, env_factory: Any) -> None:
    model = MockModel(
        "script",
        replies=[
            react("I clone the repository first.", "execute", CLONE),
            react("I read the README.", "execute", "%cd tinyreg\n!cat README.md"),
            react(
                "A note in the README, with the edit action.",
                "edit",
                "README.md\n<<<BEFORE_EDIT>>>\n# TinyReg\n<<<AFTER_EDIT>>>\n# TinyReg (read)",
            ),
            react("I train as asked.", "execute", TRAIN) + "\nObservation: the model made this up",
            react("The test MSE is 7.4031.", "submit", ANSWER),
        ],
    )
    env = env_factory(cell_timeout=60)
    task = tinyreg()
    env.reset(task)
    ReActSuperAgent(options=AgentOptions(seed=3), model=model).run(env)
    metrics, _ = score_trajectory(env.trajectory, task)
    assert (metrics.output_match, metrics.landmarks, metrics.submitted) == (1.0, 1.0, 1.0)
    steps = env.trajectory.steps
    assert [s.action.type for s in steps] == ["execute", "execute", "edit", "execute", "submit"]
    assert steps[2].outcome == "ok" and "Edit applied to README.md" in steps[2].observation
    assert steps[3].action.content == TRAIN and steps[3].thought == "I train as asked."
    assert steps[4].action.content == {"test_mse": 7.4031}
    assert steps[0].metadata["usage"]["model_calls"] == 1 and "reply" in steps[0].metadata
    assert env.trajectory.usage.model_calls == 5 and env.trajectory.usage.prompt_tokens > 0
    first = model.requests[0]
    assert (first.temperature, first.top_p, first.max_tokens, first.seed) == (0.2, 0.5, 1500, 3)
    assert first.stop == ["</content>", "Observation:"]
    system = first.messages[0]["content"]
    for tip in ("clone", "README", "pip", "conda", "1 minute", "continue_wait", "interrupt", "<<<BEFORE_EDIT>>>"):
        assert tip in system
    assert first.messages[1]["content"] == f"Query: {task.query}"
    last = model.requests[-1].messages
    assert last[-2] == {
        "role": "assistant",
        "content": f"Thought: I train as asked.\nAction: execute\n<content>\n{TRAIN}\n</content>",
    }
    assert last[-1]["content"].startswith("Observation: ```\nLoaded 50 training examples")


@pytest.mark.slow
def test_react_through_the_runner(tmp_path: Path) -> None:
    model = script(
        tmp_path,
        react("Clone.", "execute", CLONE),
        react("Train.", "execute", f"%cd tinyreg\n{TRAIN}"),
        react("Report.", "submit", ANSWER),
    )
    outcome = run(config(tmp_path, agent="react", model=model, task_ids=["tinyreg"]))
    assert_solved(outcome)
    trajectory = json.loads((tmp_path / "run" / "tasks" / "tinyreg" / "trajectory.json").read_text())
    assert trajectory["agent"] == "react" and trajectory["model"] == model
    assert trajectory["usage"]["model_calls"] == 3


@pytest.mark.slow
def test_observations_are_cut_for_the_model(env_factory: Any) -> None:
    model = MockModel(
        "script",
        replies=[
            react("Long.", "execute", "print('a' * 1000 + 'END1')"),
            react("Longer.", "execute", "print('b' * 60000 + 'END2')"),
            react("Done.", "submit", "null"),
        ],
    )
    env = env_factory(cell_timeout=30)
    env.reset(make_task())
    ReActAgent(model=model).run(env)
    messages = model.requests[2].messages
    older, latest = messages[3]["content"], messages[5]["content"]
    assert older == "Observation: ```\n(truncated) ... " + ("a" * 995 + "END1\n")[-500:] + "\n```"
    assert latest.startswith("Observation: ```\n(truncated) ... bbb") and latest.endswith("END2\n\n```")
    assert len(latest) == len("Observation: ```\n(truncated) ... \n```") + 50_000
    assert env.trajectory.steps[1].observation.endswith("END2\n")  # the record itself is not cut


@pytest.mark.slow
def test_masked_pre_executed_cells_are_in_the_conversation(tmp_path: Path, env_factory: Any) -> None:
    task = load_tasks("demo", "masked")[0]
    model = MockModel("script", replies=[react("Train.", "execute", TRAIN), react("Report.", "submit", ANSWER)])
    env = env_factory(cell_timeout=60)
    env.reset(task)
    ReActSuperAgent(model=model).run(env)
    messages = model.requests[0].messages
    assert messages[2]["content"].startswith("Thought: [run before the task started]\nAction: execute")
    assert "git clone" in messages[2]["content"] and len(messages) == 2 + 2 * len(task.pre_execute_cells)
    assert score_trajectory(env.trajectory, task)[0].output_match == 1.0


@pytest.mark.slow
def test_format_retries_then_success(env_factory: Any) -> None:
    model = MockModel(
        "script",
        replies=[
            "I will just run it.",  # no action
            react("Edit.", "edit", "f.txt\n<<<BEFORE_EDIT>>>\na\n<<<AFTER_EDIT>>>\nb"),  # react has no edit
            react("Submit.", "submit", "{not json}"),
            react("Submit.", "submit", '{"x": 1}'),
        ],
    )
    env = env_factory(cell_timeout=30)
    env.reset(make_task())
    ReActAgent(model=model).run(env)
    (step,) = env.trajectory.steps
    assert env.trajectory.stop_reason == "submitted" and env.trajectory.submission == {"x": 1}
    errors = [f["error"] for f in step.metadata["format_errors"]]
    assert errors[0] == "there is no line starting with 'Action:'"
    assert errors[1].startswith("'edit' is not an action")
    assert errors[2].startswith("the submitted answer is not valid JSON")
    assert step.metadata["usage"]["model_calls"] == 4 and env.trajectory.usage.model_calls == 4
    retry = model.requests[1].messages
    assert retry[-2] == {"role": "assistant", "content": "I will just run it."}
    assert retry[-1]["content"].startswith("Your reply could not be read: there is no line starting with 'Action:'")
    assert len(model.requests[3].messages) == len(retry)  # each retry shows only the latest bad reply


@pytest.mark.slow
def test_a_timeout_is_answered_with_continue_wait_or_interrupt(env_factory: Any) -> None:
    model = MockModel(
        "script",
        replies=[
            react("Sleep a little.", "execute", "import time\ntime.sleep(2.5)\nprint('woke up')"),
            react("It is doing the right thing.", "continue_wait"),
            react("This one is too long.", "execute", "time.sleep(60)"),
            react("Stop it.", "interrupt"),
            react("Done.", "submit", "null"),
        ],
    )
    env = env_factory(cell_timeout=1.5)
    env.reset(make_task())
    ReActAgent(model=model).run(env)
    outcomes = [(s.action.type, s.outcome) for s in env.trajectory.steps]
    assert outcomes == [
        ("execute", "timeout"),
        ("continue_wait", "ok"),
        ("execute", "timeout"),
        ("interrupt", "interrupted"),
        ("submit", "ok"),
    ]
    assert "woke up" in env.trajectory.steps[1].observation
    assert "still running" in model.requests[1].messages[-1]["content"]


# -- budgets ---------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize(
    ("stop_reason", "env", "prices"),
    [
        ("max_steps", {"max_steps": 3}, None),
        ("max_tokens", {"max_tokens": 4000}, None),
        ("max_cost", {"max_cost": 0.5}, {"mock/*": {"input": 100, "output": 100}}),
        ("max_compute", {"max_compute": 1.0}, None),
    ],
)
def test_each_budget_stops_the_episode(tmp_path: Path, stop_reason: str, env: dict[str, Any], prices: Any) -> None:
    model = script(tmp_path, *[react("Keep going.", "execute", "import time; time.sleep(0.4); print('x' * 400)")] * 30)
    price_file = None
    if prices:
        price_file = tmp_path / "prices.json"
        price_file.write_text(json.dumps(prices))
    settings = config(tmp_path, agent="react", model=model, env=env, model_options=ModelOptions(prices=price_file))
    outcome = run(settings, tasks=[make_task(answer={"x": 1})])
    (result,) = outcome.results
    assert (result.status, result.stop_reason) == ("completed", stop_reason)
    assert result.metrics.submitted == 0.0 and result.metrics.output_match == 0.0
    assert outcome.summary.stop_reasons == {stop_reason: 1}
    assert 1 <= result.n_steps < 30
    if stop_reason == "max_tokens":
        assert result.usage.prompt_tokens >= 4000
    if stop_reason == "max_cost":
        assert result.usage.cost >= 0.5
    # Budgets are checked before every call: once one is spent, no further call is made.
    assert result.usage.model_calls == result.n_steps


@pytest.mark.slow
def test_format_error_stops_the_episode_and_keeps_the_replies(tmp_path: Path) -> None:
    model = script(tmp_path, *["no format at all"] * 4)
    (result,) = run(config(tmp_path, agent="react", model=model), tasks=[make_task()]).results
    assert (result.status, result.stop_reason, result.n_steps) == ("completed", "format_error", 0)
    trajectory = json.loads((tmp_path / "run" / "tasks" / "t" / "trajectory.json").read_text())
    assert [f["reply"] for f in trajectory["metadata"]["format_errors"]] == ["no format at all"] * 4
    assert trajectory["usage"]["model_calls"] == 4


@pytest.mark.slow
def test_max_cost_needs_a_price(tmp_path: Path) -> None:
    settings = config(
        tmp_path,
        agent="react",
        model="openai/unpriced-model",
        env={"max_cost": 1.0},
        model_options=ModelOptions(base_url="http://127.0.0.1:9/v1", cache=None),
    )
    with pytest.raises(ConfigError, match="--max-cost needs the price of openai/unpriced-model"):
        run(settings, tasks=[make_task()])


def test_agent_settings_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"invalid setting for the react agent \(tempreature: Extra inputs"):
        create_agent("react", AgentOptions(model="mock/x", settings={"tempreature": 0}))
    with pytest.raises(ConfigError, match="the react-super agent needs a model"):
        create_agent("react-super")
    agent = create_agent("react", AgentOptions(model=script(tmp_path, "x"), settings={"temperature": 0}))
    assert isinstance(agent, ReActAgent) and agent.settings.temperature == 0


# -- the OpenAI provider under an agent, against a real HTTP server ---------------------------------
@pytest.mark.slow
def test_react_super_through_the_openai_provider(tmp_path: Path) -> None:
    replies = [
        error(429, "rate limited", retry_after_ms="20"),
        react("Clone.", "execute", CLONE),
        error(500, "internal error"),
        react("Train.", "execute", f"%cd tinyreg\n{TRAIN}"),
        raw(b"<html>502 Bad Gateway</html>"),
        # The server cuts this reply at the first stop sequence, as real ones do.
        react("Report.", "submit", ANSWER) + "\nObservation: I imagine the run went well",
    ]
    with model_server(*replies) as server:
        options = ModelOptions(base_url=server.base_url, cache=tmp_path / "cache.sqlite", max_retries=3)
        settings = config(tmp_path, agent="react-super", model="openai/gpt-4o-mini", seed=1, model_options=options)
        outcome = run(settings, tasks=[tinyreg()])
        assert_solved(outcome)
        assert len(server.requests) == 6
        assert server.requests[0] == server.requests[1]  # the SDK retried the same request
        sent = server.requests[-1]
        assert sent["stop"] == ["</content>", "Observation:"] and sent["seed"] == 1
        assert (sent["temperature"], sent["top_p"], sent["max_tokens"]) == (0.2, 0.5, 1500)
        steps = json.loads((tmp_path / "run" / "tasks" / "tinyreg" / "trajectory.json").read_text())["steps"]
        assert steps[-1]["metadata"]["reply"] == f"Thought: Report.\nAction: submit\n<content>\n{ANSWER}\n"
        usage = outcome.results[0].usage
        assert usage.model_calls == 3 and usage.cached_calls == 0 and usage.cost > 0

        # The same run again, from the cache: not one request, the same actions.
        again = run(settings.model_copy(update={"out": tmp_path / "again"}), tasks=[tinyreg()])
        assert_solved(again)
        assert len(server.requests) == 6 and again.results[0].usage.cached_calls == 3
        first_steps = [s["action"] for s in steps]
        again_steps = json.loads((tmp_path / "again" / "tasks" / "tinyreg" / "trajectory.json").read_text())["steps"]
        assert [s["action"] for s in again_steps] == first_steps

        # A different seed samples again.
        server.add(react("Clone.", "execute", CLONE), react("Give up.", "submit", "null"))
        seed2 = {"agent": settings.agent.model_copy(update={"seed": 2}), "out": tmp_path / "seed2"}
        other = run(settings.model_copy(update=seed2), tasks=[tinyreg()])
        assert len(server.requests) == 8 and other.results[0].usage.cached_calls == 0


@pytest.mark.slow
def test_a_model_service_failure_is_an_infrastructure_error(tmp_path: Path) -> None:
    with model_server(*[error(503, "down", retry_after_ms="1")] * 2) as server:
        options = ModelOptions(base_url=server.base_url, cache=None, max_retries=1)
        settings = config(tmp_path, agent="react", model="openai/m", model_options=options, infra_retries=0)
        (result,) = run(settings, tasks=[make_task()]).results
    assert (result.status, result.stop_reason) == ("infra_error", "infra_error")
    assert "kept failing for openai/m (HTTP 503: down)" in (result.error or "")


@pytest.mark.slow
def test_a_rejected_key_stops_the_whole_run(tmp_path: Path) -> None:
    with model_server(error(401, "bad key")) as server:
        options = ModelOptions(base_url=server.base_url, cache=None)
        settings = config(tmp_path, agent="react", model="openai/m", model_options=options)
        with pytest.raises(ConfigError, match="rejected the API key"):
            run(settings, tasks=[make_task("a"), make_task("b")])
    assert len(server.requests) == 1
    assert not (tmp_path / "run" / "results.jsonl").exists() or not (tmp_path / "run" / "results.jsonl").read_text()


# -- the SWE-agent-style agent -----------------------------------------------------------------------
def swe(thought: str, command: str) -> str:
    return f"{thought}\n```\n{command}\n```"


@pytest.mark.slow
def test_swe_agent_solves_a_demo_task_with_its_tools(env_factory: Any) -> None:
    model = MockModel(
        "script",
        replies=[
            swe("I clone the repository.", CLONE),
            swe("I move into it.", "%cd tinyreg"),
            swe("Where is the code?", "find_file *.py"),
            swe("Which files mention epochs?", "search_dir epochs"),
            swe("", "goto 3"),  # nothing open yet
            swe("I open the script.", "open train.py 30"),
            swe("Where is the learning rate read?", "search_file lr"),
            swe("", "scroll_down"),
            swe("A broken edit.", 'edit 1:1\n"""Train a ridge regression model\nend_of_edit'),
            swe("A good one.", 'edit 1:1\n"""Ridge regression by gradient descent (edited)."""\nend_of_edit'),
            swe("I train.", TRAIN),
            swe("Done.", f"submit {ANSWER}"),
        ],
    )
    env = env_factory(cell_timeout=60)
    task = tinyreg()
    env.reset(task)
    from super_bench.agents.swe import SWEAgent

    SWEAgent(options=AgentOptions(settings={"window": 20}), model=model).run(env)
    metrics, _ = score_trajectory(env.trajectory, task)
    assert (metrics.output_match, metrics.landmarks) == (1.0, 1.0)
    obs = {s.metadata.get("command", "").split("\n")[0]: s.observation for s in env.trajectory.steps}
    assert obs["find_file *.py"] == 'Found 1 files named "*.py" under .:\n./train.py\n'
    assert "./train.py (12 matches)" in obs["search_dir epochs"]
    assert obs["goto 3"] == "Error: no file is open; open one first (usage: goto <line>).\n"
    window = obs["open train.py 30"].splitlines()
    assert window[0].endswith("/tinyreg/train.py (52 lines total)]") and window[1] == "(19 more lines above)"
    assert window[2].startswith("20:") and window[-2].startswith("39:") and window[-1] == "(13 more lines below)"
    assert "Line 28:    lr = args.lr if args.lr is not None else config" in obs["search_file lr"]
    assert obs["scroll_down"].splitlines()[1] == "(32 more lines above)"  # clamped to the end of the file
    broken, good = env.trajectory.steps[8], env.trajectory.steps[9]
    assert "Your edit was not applied" in broken.observation and "SyntaxError" in broken.observation
    assert (
        good.observation.startswith("Edited ")
        and '1:"""Ridge regression by gradient descent (edited)."""' in good.observation
    )
    cell = env.trajectory.steps[5].action.content
    assert cell.startswith("# swe-agent: open train.py 30\ndef swe_show(")  # the tool ran as a notebook cell
    last_prompt = model.requests[-1].messages
    assert last_prompt[-1]["content"].endswith(
        f"(Open file: {env._kernel.cwd}/train.py)\n(Current directory: {env._kernel.cwd})"
    )
    assert last_prompt[-2]["content"] == f"I train.\n```\n{TRAIN}\n```"


def test_swe_tools_directly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from super_bench.agents.swe_tools import swe_create, swe_edit, swe_show

    path = tmp_path / "m.py"
    swe_create(str(path), 10)
    swe_edit(str(path), 1, 0, "def f():\n    return 1", 10)
    assert path.read_text() == "def f():\n    return 1\n"
    swe_edit(str(path), 2, 2, "return 2", 10)  # lost its indentation: refused
    assert path.read_text() == "def f():\n    return 1\n"
    swe_edit(str(path), 3, 9, "x", 10)
    swe_show(str(tmp_path / "nope.py"), 1, 10)
    out = capsys.readouterr().out
    assert "expected an indented block" in out and "Error: cannot edit lines 3:9; " in out
    assert f"Error: {tmp_path}/nope.py is not a file." in out


# -- Reflexion -----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_reflexion_retries_after_a_failed_self_check(tmp_path: Path) -> None:
    model = script(
        tmp_path,
        react("I guess.", "submit", '{"test_mse": 1.0}'),
        "VERDICT: FAIL. Nothing was run; the answer is a guess.",
        "I guessed. Next time: clone, train with 5 epochs on 50 examples, and report the printed MSE.",
        react("Clone and train.", "execute", f"{CLONE}\n%cd tinyreg\n{TRAIN}"),
        react("Report.", "submit", ANSWER),
        "VERDICT: PASS - the run printed Test MSE: 7.4031.",
    )
    outcome = run(config(tmp_path, agent="reflexion", model=model, task_ids=["tinyreg"]))
    assert_solved(outcome)
    assert outcome.results[0].usage.model_calls == 6
    trajectory = json.loads((tmp_path / "run" / "tasks" / "tinyreg" / "trajectory.json").read_text())
    assert trajectory["agent"] == "reflexion:react-super" and "Earlier attempts" not in trajectory["query"]
    reflexion = trajectory["metadata"]["reflexion"]
    assert reflexion["final_attempt"] == 2 and reflexion["reflections"][0].startswith("I guessed.")
    first, final = reflexion["attempts"]
    assert first["trajectory"]["submission"] == {"test_mse": 1.0} and first["self_check"].startswith("VERDICT: FAIL")
    assert final == {"attempt": 2, "self_check": "VERDICT: PASS - the run printed Test MSE: 7.4031."}
    assert [s["action"]["type"] for s in trajectory["steps"]] == ["execute", "submit"]  # the final attempt only


@pytest.mark.slow
def test_reflexion_retries_an_attempt_without_a_submission(tmp_path: Path, env_factory: Any) -> None:
    model = MockModel(
        "script",
        replies=[
            react("Look around.", "execute", "print('attempt one')"),
            "I ran out of steps before answering; answer right away next time.",
            react("Answer at once.", "submit", '{"x": 1}'),
        ],
    )
    from super_bench.agents.reflexion import ReflexionAgent

    env = env_factory(cell_timeout=30, max_steps=1)
    env.reset(make_task(answer={"x": 1}))
    ReflexionAgent("react", AgentOptions(settings={"attempts": 2, "temperature": 0}), model=model).run(env)
    assert env.trajectory.stop_reason == "submitted" and env.trajectory.submission == {"x": 1}
    assert "Attempt 1: I ran out of steps" in model.requests[2].messages[1]["content"]
    assert model.requests[2].temperature == 0  # the inner agent got the remaining settings
    first = env.trajectory.metadata["reflexion"]["attempts"][0]
    assert first["trajectory"]["stop_reason"] == "max_steps" and first["self_check"] is None
    assert env.trajectory.usage.model_calls == 3


# -- the human agent -----------------------------------------------------------------------------------
@pytest.mark.slow
def test_the_human_agent_waits_and_interrupts(env_factory: Any) -> None:
    lines = iter(
        [
            "import time",
            "for i in range(3):",
            "    time.sleep(0.6)",
            "    print(i)",
            "",
            ":wait",
            "time.sleep(30)",
            ":interrupt",
            ":note the answer is one",
            ":submit {not json",
            ":submit 1",
        ]
    )
    shown: list[str] = []
    env = env_factory(cell_timeout=1)
    env.reset(make_task())
    HumanAgent(read=lambda prompt: next(lines), write=shown.append).run(env)
    steps = env.trajectory.steps
    assert [(s.action.type, s.outcome) for s in steps] == [
        ("execute", "ok"),
        ("execute", "timeout"),
        ("continue_wait", "ok"),
        ("execute", "timeout"),
        ("interrupt", "interrupted"),
        ("submit", "invalid"),
        ("submit", "ok"),
    ]
    assert steps[1].action.content == "for i in range(3):\n    time.sleep(0.6)\n    print(i)"
    assert steps[5].thought == "the answer is one" and steps[6].thought is None
    assert env.trajectory.submission == 1
    assert any("The episode is over: submitted." in s for s in shown)


# -- the custom agent of docs/agents.md ---------------------------------------------------------------
@pytest.mark.slow
def test_the_documented_custom_agent_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The 30-line agent in the docs, and the snippet that registers and runs it, exactly as written."""
    from super_bench.agents import AGENTS

    docs = (Path(__file__).resolve().parents[2] / "docs" / "agents.md").read_text()
    section = docs.split("## Writing your own agent", 1)[1]
    agent_code, run_code = re.findall(r"^```python\n(.*?)^```$", section, re.MULTILINE | re.DOTALL)[:2]
    assert len(agent_code.splitlines()) <= 35
    (tmp_path / "my_agent.py").write_text(agent_code)
    replies = [f"```python\n{CLONE}\n```", f"```python\n%cd tinyreg\n{TRAIN}\n```", f"Printed. ANSWER: {ANSWER}"]
    (tmp_path / "replies.txt").write_text("\n=====\n".join(replies))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(AGENTS, "_entries", dict(AGENTS._entries))  # the registration is undone afterwards
    namespace: dict[str, Any] = {}
    exec(compile(run_code, "docs/agents.md", "exec"), namespace)
    assert_solved(namespace["outcome"])
    assert namespace["outcome"].results[0].usage.model_calls == 3
