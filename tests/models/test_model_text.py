"""Model output is text, whatever it holds: a reply, thought or code with a lone surrogate, a NUL or bytes that are
not UTF-8 is kept with replacement characters wherever it is stored, and the episode goes on (docs/runner.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.support.helpers import ANSWER, CLONE, TRAIN, react
from tests.support.model_server import ModelServer, model_server, raw, reply

import super_bench as sb
from super_bench.actions import Action, valid_text
from super_bench.agents import AgentOptions, create_agent
from super_bench.agents.llm import FormatError
from super_bench.environment import Environment
from super_bench.models import ModelOptions, create_model
from super_bench.models.base import ModelRequest
from super_bench.models.mock import MockModel
from super_bench.runner.results import TaskResult
from super_bench.trajectory import Trajectory

# Any text a str can hold: lone surrogates, NULs and controls included (hypothesis leaves surrogates out by default).
ANY_TEXT = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=40) | st.sampled_from(
    ["\ud800", "a\udfffb", "\x00", "\ud83d\ude00", "Thought: \ud800\nAction: execute\n<content>\nx\n</content>"]
)


def _is_text(value: Any) -> bool:
    """Whether every string in ``value`` can be written as UTF-8."""
    json.dumps(value, ensure_ascii=False).encode("utf-8")
    return True


def _completion(text: str, swap: tuple[bytes, bytes]) -> bytes:
    """An OpenAI chat completion whose reply is ``text`` (as JSON, ``\\u`` escapes and all), with ``swap[0]`` in its
    JSON replaced by the bytes ``swap[1]`` (bytes that are not UTF-8)."""
    body = {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "@@"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
    return json.dumps(body).encode().replace(b'"@@"', json.dumps(text).encode().replace(*swap))


SCRIPT = [
    react("I clone the repository \ud800 first.", "execute", CLONE),
    react("Now I train \udfff, as the task asks.", "execute", f"%cd tinyreg\n{TRAIN}\n# a note \ud800"),
    react("The run printed the test MSE.\x00", "submit", ANSWER),
]


def _check_completed_as_scripted(outcome: sb.RunOutcome) -> None:
    (result,) = outcome.results
    assert (result.status, result.stop_reason, result.n_steps) == ("completed", "submitted", 3)
    assert result.metrics.output_match == 1.0
    assert result.trajectory is not None
    trajectory = Trajectory.load(outcome.run_dir.path / result.trajectory)
    steps = trajectory.agent_steps
    assert steps[0].thought == "I clone the repository \ufffd first."
    assert steps[1].action.content.endswith("# a note \ufffd")
    assert "\ufffd" in steps[0].metadata["reply"]
    assert steps[2].thought == "The run printed the test MSE.\x00"


def test_a_mock_reply_holding_a_lone_surrogate_completes_the_task_as_scripted(tmp_path: Path) -> None:
    script = tmp_path / "replies.json"
    script.write_text(json.dumps(SCRIPT))  # JSON keeps the surrogates, as "\ud800"
    outcome = sb.run(
        agent="react-super",
        model=f"mock/{script}",
        task_ids=["tinyreg"],
        out=tmp_path / "run",
        env={"sandbox": {"backend": "local"}},
        progress=False,
    )
    _check_completed_as_scripted(outcome)


def test_the_openai_provider_keeps_surrogates_and_bytes_that_are_not_utf8_as_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server sends the first reply's surrogate as JSON's escape, the second reply with raw bytes 0xff 0xfe.
    second = _completion(SCRIPT[1], (b"\\udfff", b"\xff\xfe"))
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    with model_server(SCRIPT[0], raw(second), SCRIPT[2]) as server:
        outcome = sb.run(
            agent="react-super",
            model="openai/llama",
            model_options={"base_url": server.base_url, "cache": None},
            task_ids=["tinyreg"],
            out=tmp_path / "run",
            env={"sandbox": {"backend": "local"}},
            progress=False,
        )
    _check_completed_as_scripted(outcome)
    trajectory = Trajectory.load(outcome.run_dir.path / str(outcome.results[0].trajectory))
    assert trajectory.agent_steps[1].thought == "Now I train \ufffd\ufffd, as the task asks."


@pytest.fixture(scope="module")
def server() -> Any:
    with ModelServer() as running:
        yield running


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=ANY_TEXT)
def test_every_provider_returns_text(server: ModelServer, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    # Set for this test alone: a key left in the worker's environment would let later tests' commands call the
    # real provider.
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    request = ModelRequest(messages=[{"role": "user", "content": "go"}])
    models = [MockModel("m", ModelOptions(cache=None), replies=[text])]
    for provider in ("openai", "anthropic"):
        models.append(create_model(f"{provider}/m", ModelOptions(base_url=server.base_url, cache=None, max_retries=0)))
        server.add(reply(text))
    for model in models:
        got = model.complete(request).text
        assert _is_text(got)
        assert got == text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


@pytest.fixture(scope="module")
def unused_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("script") / "replies.txt"
    path.write_text("never asked")
    return path


@pytest.mark.parametrize("agent", ["react", "react-super", "swe-agent"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=ANY_TEXT, kind=st.sampled_from(["execute", "submit", "edit", "interrupt"]))
def test_every_agent_parser_reads_any_reply_or_says_why_not(
    env: Environment, unused_script: Path, agent: str, text: str, kind: str
) -> None:
    parser = create_agent(agent, AgentOptions(model=f"mock/{unused_script}"))
    for raw_reply in (
        text,
        react(text, kind, text),
        f"{text}\n```\n{text}\n```",
        f"```\nedit 1:1\n{text}\nend_of_edit\n```",
    ):
        try:
            parsed = parser.parse(raw_reply, env)  # type: ignore[attr-defined]
        except FormatError:
            continue
        assert isinstance(parsed.action, Action)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=ANY_TEXT)
def test_the_environment_and_the_stores_keep_any_text(env: Environment, tmp_path: Path, text: str) -> None:
    if env.done:
        return
    step = env.step(
        {"type": "execute", "content": f"# {text}".replace("\x00", "")},
        thought=text,
        metadata={"reply": text, text: [text]},
    )
    assert _is_text(step.model_dump(mode="json")) and not env.done
    path = env.trajectory.save(tmp_path / "t")
    again = Trajectory.load(path)
    assert again.steps[-1].thought == step.thought and again.steps[-1].metadata == step.metadata
    # An agent's failure quotes what it failed on: the row keeps it as text too.
    row = TaskResult.from_trajectory(again, "expert", error=text, retry_errors=[text])
    assert TaskResult.from_json(row.model_dump_json()).error == valid_text(text)
