"""Shell escapes (``!command``) in every backend's kernel: output as it comes, the exit status, interrupts
and standard input, as IPython runs them (in a pseudo-terminal), without IPython's fixed wait at the end."""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.support.helpers import make_task
from tests.support.sandboxes import BACKENDS, backend_settings

from super_bench import Action, Environment


@pytest.fixture(params=BACKENDS)
def env(env_factory: Any, request: pytest.FixtureRequest) -> Environment:
    environment: Environment = env_factory(sandbox=backend_settings(request.param), cell_timeout=1.5)
    environment.reset(make_task())
    return environment


def run(env: Environment, code: str) -> Any:
    return env.step(Action.execute(code))


@pytest.mark.slow
def test_exit_status_as_ipython_gives_it(env: Environment) -> None:
    assert run(env, "!true").exit_code == 0
    assert run(env, "!exit 3").exit_code == 3
    assert run(env, "!kill -9 $$").exit_code == -9  # the signal that ended the command, negated
    assert run(env, "!exit 130").exit_code == -2  # a shell's 128 + n reads as signal n, as in IPython
    step = run(env, "!exit 4\nprint('status', _exit_code)")
    assert (step.observation, step.exit_code) == ("status 4\n", 4)
    step = run(env, "!false\n!true")
    assert step.exit_code == 0  # the cell's last command's


@pytest.mark.slow
def test_output_comes_as_it_is_written(env: Environment) -> None:
    # The command outlives the soft timeout: what it printed before is already there.
    step = run(env, "!echo first; sleep 2.5; echo second")
    assert step.outcome == "timeout"
    assert "first" in step.observation and "second" not in step.observation
    rest = env.step({"type": "continue_wait"})
    assert (rest.outcome, rest.exit_code) == ("ok", 0)
    assert "second" in rest.observation and "first" not in rest.observation
    # Through a terminal: stdout and stderr interleaved, newlines as a terminal writes them.
    step = run(env, "!echo out; echo err >&2; echo out again")
    assert step.raw_output == "out\r\nerr\r\nout again\r\n"


@pytest.mark.slow
def test_large_output_and_characters_split_between_reads(env: Environment) -> None:
    # 600,000 bytes of two-byte characters: reads of the terminal end inside characters, more than once.
    step = run(env, "!python3 -c \"print('é' * 300000)\"")
    assert step.exit_code == 0
    assert step.raw_output == "é" * 300000 + "\r\n"


@pytest.mark.slow
def test_an_interrupt_stops_the_command_and_the_cell(env: Environment) -> None:
    run(env, "kept = 'still here'")
    step = run(env, "!sleep 30\nprint('the line after, with status', _exit_code)")
    assert step.outcome == "timeout"
    started = time.monotonic()
    stopped = env.step({"type": "interrupt"})
    assert time.monotonic() - started < 5
    assert stopped.outcome == "interrupted"
    # As in IPython, the interrupt ends the command (^C through its terminal); the cell goes on.
    assert "the line after, with status -2" in stopped.observation
    # A command that ignores ^C is killed.
    assert run(env, "!trap '' INT; sleep 30").outcome == "timeout"
    started = time.monotonic()
    assert env.step({"type": "interrupt"}).outcome == "interrupted"
    assert time.monotonic() - started < 5
    assert run(env, "print(kept)").observation == "still here\n"


@pytest.mark.slow
def test_standard_input_is_a_terminal_nobody_types_into(env: Environment) -> None:
    step = run(env, "![ -t 0 ] && [ -t 1 ] && echo both terminals")
    assert "both terminals" in step.observation
    # A command that reads its input waits for it, as in IPython, until interrupted.
    step = run(env, "!read answer; echo got $answer")
    assert step.outcome == "timeout"
    assert env.step({"type": "interrupt"}).outcome == "interrupted"
    step = run(env, "!echo piped | cat")
    assert step.raw_output == "piped\r\n"


@pytest.mark.slow
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\x00"), max_size=3000))
def test_any_text_a_command_prints_comes_back(env: Environment, text: str) -> None:
    env._sandbox.write_file("printed.txt", text.encode("utf-8"))
    step = run(env, "!cat printed.txt")
    assert step.exit_code == 0
    # The terminal writes a newline as carriage return and newline, and nothing else changes.
    assert step.raw_output == text.replace("\n", "\r\n")


@pytest.mark.slow
def test_a_command_that_leaves_a_job_holding_its_terminal_keeps_its_output_and_does_not_wait_for_it(
    env: Environment,
) -> None:
    # The shell exits while a background job still holds the terminal: what the command wrote last still comes
    # back (Linux hands it over asynchronously), and the cell ends without waiting for the job.
    for i in range(15):
        started = time.monotonic()
        step = run(env, f"!(sleep 3 &); echo out{i}")
        assert (step.outcome, step.raw_output) == ("ok", f"out{i}\r\n"), i
        assert time.monotonic() - started < 1.5
