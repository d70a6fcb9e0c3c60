"""Whatever an agent sends, and whenever it sends it, ``Environment.step`` answers with a step that can be
kept: random and adversarial actions and submissions (lone surrogates, huge ints, NaN and infinities, deep
and wide values, control characters), and actions after the wall-time limit or the disk watch has ended the
task, never escape ``step`` and never become an ``infra_error`` (environment/failures.py; docs/runner.md, "Failure
classes"). Real kernels in real sandboxes; one environment is reused while its episode goes on."""

from __future__ import annotations

import io
import json
import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.support.helpers import make_task
from tests.support.sandboxes import backend_settings

from super_bench import EnvConfig, Environment, RunConfig, SandboxConfig, run
from super_bench.sandbox.limits import disk
from super_bench.trajectory import Trajectory, write_step_line

# Text an agent (or a model, or a kernel's output) can hold: lone surrogates, ESC sequences, NULs, markup.
NASTY_TEXT = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["\ud800", "a\udfffb", "\ud83d\ude00", "\x1b]8;;http://x\x1b\\l\x1b]8;;\x1b\\", "\x00\x9b[/red]"]),
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0xDFFF), max_size=20),
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([5000, 400, 64]).map(lambda n: 10**n),  # 10**5000 has no decimal text in Python
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, math.inf, -math.inf]),
    NASTY_TEXT,
)


def _deep(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


VALUES = st.one_of(
    st.recursive(
        SCALARS,
        lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(NASTY_TEXT, inner, max_size=4)),
        max_leaves=12,
    ),
    # Deep enough to pass the limit on content depth, shallow enough for hypothesis to print a failing example
    # (far deeper values: test_far_too_deep_content_is_refused_in_every_action below).
    st.sampled_from([60, 65, 120]).map(_deep),
    st.just({str(i): i for i in range(20_000)}),
    st.just(list(range(300_000))),
    st.just({1: "a", (2, 3): "b"}),
    st.just({1, 2}),
    st.just(b"\xff\x00"),
)


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return "{"


# Code that stays harmless whatever text it carries: the text reaches the kernel's output, not the shell.
CODE = st.one_of(
    NASTY_TEXT.map(lambda t: f"print({t!r})"),
    NASTY_TEXT.map(lambda t: f"import sys; sys.stdout.write({t!r}); sys.stderr.write({t!r})"),
    NASTY_TEXT.map(lambda t: f"raise ValueError({t!r})"),
    NASTY_TEXT.map(lambda t: "# " + t.replace("\n", " ").replace("\r", " ")),
    st.just("print(chr(0xd800))"),
)
EDITS = NASTY_TEXT.map(lambda t: f"f.txt\n<<<BEFORE_EDIT>>>\nhello\n<<<AFTER_EDIT>>>\n{t}\n")
ACTIONS = st.one_of(
    st.builds(lambda c: {"type": "execute", "content": c}, st.one_of(CODE, VALUES)),
    st.builds(lambda c: {"type": "edit", "content": c}, st.one_of(EDITS, NASTY_TEXT, VALUES)),
    st.builds(lambda c: {"type": "submit", "content": c}, st.one_of(VALUES, NASTY_TEXT, VALUES.map(_json_text))),
    st.sampled_from([{"type": "interrupt"}, {"type": "continue_wait"}]),
)


def _kept(env: Environment) -> None:
    """The episode so far can be written and read back."""
    for step in env.trajectory.steps:
        write_step_line(io.BytesIO(), step)
    Trajectory.model_validate_json(env.trajectory.model_dump_json())


@pytest.fixture(scope="module")
def shared_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Environment]:
    root = tmp_path_factory.mktemp("sandboxes")
    # One episode serves many examples: no step budget may end it (that would be a stop, not a failure).
    sandbox = SandboxConfig(root=root, **backend_settings("bwrap"))
    env = Environment(EnvConfig(cell_timeout=5, max_steps=100_000, sandbox=sandbox))
    yield env
    env.close()


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(actions=st.lists(ACTIONS, min_size=1, max_size=4), thought=st.one_of(st.none(), NASTY_TEXT))
def test_no_action_escapes_step_and_every_step_can_be_kept(
    shared_env: Environment, actions: list[dict[str, Any]], thought: str | None
) -> None:
    env = shared_env
    if env._kernel_now is None or env.done:  # a fresh episode only when the last one ended (a submission)
        env.reset(make_task())
        env.step({"type": "execute", "content": "open('f.txt', 'w').write('hello\\n')"})
    for action in actions:
        if env.done:
            break
        step = env.step(action, thought=thought)
        assert step.outcome in ("ok", "error", "invalid", "timeout", "interrupted", "kernel_died")
        assert env.trajectory.stop_reason in (None, "submitted")
    _kept(env)


@pytest.mark.parametrize("kind", ["execute", "edit", "submit"])
def test_far_too_deep_content_is_refused_in_every_action(shared_env: Environment, kind: str) -> None:
    env = shared_env
    if env._kernel_now is None or env.done:
        env.reset(make_task())
    step = env.step({"type": kind, "content": _deep(5000)})
    assert step.outcome == "invalid" and env.trajectory.stop_reason is None
    _kept(env)


@pytest.mark.parametrize("kind", ["execute", "edit", "submit"])
def test_an_int_too_long_to_write_out_is_refused_not_raised(shared_env: Environment, kind: str) -> None:
    env = shared_env
    if env._kernel_now is None or env.done:
        env.reset(make_task())
    step = env.step({"type": kind, "content": 10**5000})  # str() of it raises ValueError (4,300 digits at most)
    assert step.outcome == "invalid" and "more than 4,300 digits" in step.observation, step.observation
    assert env.trajectory.stop_reason is None
    _kept(env)


LATE = st.sampled_from(
    [
        {"type": "edit", "content": "f.txt\n<<<BEFORE_EDIT>>>\nhello\n<<<AFTER_EDIT>>>\nbye\n"},
        {"type": "execute", "content": "print(1)"},
        {"type": "submit", "content": {"a": 1}},
        {"type": "interrupt"},
        {"type": "continue_wait"},
    ]
)


@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
@given(action=LATE)
def test_an_action_after_the_wall_time_limit_ends_the_episode_as_the_agents(
    tmp_path_factory: pytest.TempPathFactory, action: dict[str, Any]
) -> None:
    root = tmp_path_factory.mktemp("late")
    sandbox = SandboxConfig(root=root, wall_time_limit=2, **backend_settings("bwrap"))
    with Environment(EnvConfig(cell_timeout=10, sandbox=sandbox)) as env:
        env.reset(make_task())
        env.step({"type": "execute", "content": "open('f.txt', 'w').write('hello\\n')"})
        time.sleep(max(0.0, (env.budget_left().wall_seconds or 0) + 0.1))  # the agent thinks past the limit
        step = env.step(action)
        assert (step.stop_reason, step.truncated) == ("max_wall_time", True)
        assert "wall-time limit (2 s) has passed" in step.observation
        assert not env.trajectory.submitted
        _kept(env)


def test_an_edit_after_the_disk_watch_fired_ends_the_episode_as_the_agents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(disk.WATCH, "interval", 0.2)
    sandbox = SandboxConfig(root=tmp_path, disk_limit=16 << 20, disk_enforcement="watch", **backend_settings("bwrap"))
    with Environment(EnvConfig(cell_timeout=30, sandbox=sandbox)) as env:
        env.reset(make_task())
        env.step({"type": "execute", "content": "open('f.txt', 'w').write('hello\\n')"})
        step = env.step({"type": "execute", "content": "!head -c 40000000 /dev/zero > big; sleep 20"})
        if not env.done:  # the watch fired between the agent's steps
            deadline = time.monotonic() + 20
            while not env._sandbox.disk_limit_passed and time.monotonic() < deadline:
                time.sleep(0.1)
            step = env.step({"type": "edit", "content": "f.txt\n<<<BEFORE_EDIT>>>\nhello\n<<<AFTER_EDIT>>>\nbye\n"})
        assert step.stop_reason == "max_disk"
        _kept(env)


@pytest.mark.parametrize("late", [False, True])
def test_through_the_runner_a_surrogate_answer_and_a_late_edit_are_the_agents_failures(
    tmp_path: Path, late: bool
) -> None:
    """The runner's own path (step log, trajectory file, scoring): no ``infra_error``, no retry."""
    edit = {"type": "edit", "content": "f.txt\n<<<BEFORE_EDIT>>>\nhello\n<<<AFTER_EDIT>>>\nbye\n"}
    actions = [
        {"type": "execute", "content": "open('f.txt', 'w').write('hello\\n')"},
        # The sleep outlasts its cell timeout, and waiting on it outlasts the wall-time limit (3 s, from the
        # sandbox's start): the limit passes during the agent's own step, whatever the machine's speed.
        *(
            [{"type": "execute", "content": "import time; time.sleep(4)"}, {"type": "continue_wait"}, edit]
            if late
            else []
        ),
        {"type": "execute", "content": "print('\\ud800'.encode('utf-8', 'surrogatepass'))"},
        {"type": "submit", "content": {"test_mse": "\ud800"}},
    ]
    path = tmp_path / "actions.json"
    path.write_text(json.dumps(actions))
    sandbox = SandboxConfig(root=tmp_path / "sb", wall_time_limit=3 if late else None, **backend_settings("bwrap"))
    config = RunConfig(
        agent=f"replay:{path}",
        task_ids=["tinyreg"],
        out=tmp_path / "run",
        env=EnvConfig(cell_timeout=2, sandbox=sandbox),
    )
    (result,) = run(config, progress=False).results
    assert result.status == "completed" and result.attempts == 1
    assert result.stop_reason == ("max_wall_time" if late else "agent_stopped")
    trajectory = Trajectory.load(tmp_path / "run" / str(result.trajectory))
    assert not trajectory.submitted
    if not late:
        assert "lone surrogate" in trajectory.steps[-1].observation
