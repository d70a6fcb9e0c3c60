"""The SUPER edit action: the parser, the matcher, and the action on real files in a kernel's sandbox."""

from __future__ import annotations

from typing import Any

import pytest
from tests.support.helpers import make_task

from super_bench import Environment
from super_bench.environment.edit import EditFailed, apply_edit, parse_edit

SOURCE = "def train(lr):\n    epochs = 10\n    return lr * epochs\n\n\ndef test(lr):\n    epochs = 10\n    return lr\n"


def edit(path: str, before: str, after: str, context: str = "") -> str:
    ctx = context + "\n" if context else ""
    return f"{path}\n{ctx}<<<BEFORE_EDIT>>>\n{before}\n<<<AFTER_EDIT>>>\n{after}"


def test_replace_lines() -> None:
    request = parse_edit(edit("m.py", "    return lr * epochs", "    return lr * epochs * 2"))
    text, message = apply_edit(SOURCE, request)
    assert "    return lr * epochs * 2\n" in text
    assert text.count("\n") == SOURCE.count("\n")
    assert "Edit applied to m.py: lines 3-3" in message


def test_ambiguous_edit_is_refused_with_the_line_numbers() -> None:
    with pytest.raises(EditFailed, match=r"occur 2 times .*at lines 2, 7"):
        apply_edit(SOURCE, parse_edit(edit("m.py", "    epochs = 10", "    epochs = 1")))


def test_context_lines_disambiguate() -> None:
    request = parse_edit(edit("m.py", "    epochs = 10", "    epochs = 1", context="def test(lr):"))
    text, _ = apply_edit(SOURCE, request)
    assert text.splitlines()[6] == "    epochs = 1"
    assert text.splitlines()[1] == "    epochs = 10"


def test_no_match_shows_the_closest_lines() -> None:
    request = parse_edit(edit("m.py", "def train(lr):\n    epochs = 20", "x"))
    with pytest.raises(EditFailed) as info:
        apply_edit(SOURCE, request)
    assert "not found" in str(info.value)
    assert "closest lines (1 of 2 lines match)" in str(info.value)
    assert "    1 | def train(lr):" in str(info.value)


def test_whitespace_only_differences_are_pointed_out() -> None:
    with pytest.raises(EditFailed, match="check the indentation"):
        apply_edit(SOURCE, parse_edit(edit("m.py", "  epochs = 10\n  return lr", "x")))


def test_insertion_after_context_lines() -> None:
    text, message = apply_edit("a\nb\n", parse_edit("f.txt\na\n<<<BEFORE_EDIT>>>\n<<<AFTER_EDIT>>>\ninserted"))
    assert text == "a\ninserted\nb\n"
    assert "inserted after line 1" in message


def test_windows_line_endings_are_kept() -> None:
    text, _ = apply_edit("a\r\nb\r\n", parse_edit(edit("f.txt", "b", "c")))
    assert text == "a\r\nc\r\n"


@pytest.mark.parametrize(
    "content",
    [
        "",
        "<<<BEFORE_EDIT>>>\nx\n<<<AFTER_EDIT>>>\ny",
        "f.py\nx\ny",
        "f.py\n<<<AFTER_EDIT>>>\ny\n<<<BEFORE_EDIT>>>\nx",
        "f.py\n<<<BEFORE_EDIT>>>\n<<<AFTER_EDIT>>>\ny",
    ],
)
def test_malformed_edits_explain_the_format(content: str) -> None:
    with pytest.raises(EditFailed, match="BEFORE_EDIT"):
        parse_edit(content)


def test_edit_action_in_the_environment(env: Environment) -> None:
    env.step({"type": "execute", "content": f"%mkdir repo\n%cd repo\nopen('m.py', 'w').write({SOURCE!r})"})
    step = env.step({"type": "edit", "content": edit("m.py", "    return lr * epochs", "    return 0")})
    assert step.outcome == "ok", step.observation
    assert "Edit applied" in step.observation
    check = env.step({"type": "execute", "content": "print(open('m.py').read().splitlines()[2])"})
    assert check.observation == "    return 0\n"


def test_edit_of_a_missing_file_is_a_recorded_step(env: Environment) -> None:
    step = env.step({"type": "edit", "content": edit("nope.py", "a", "b")})
    assert step.outcome == "invalid"
    assert "does not exist" in step.observation
    assert env.trajectory.steps[-1] is step and not env.done


@pytest.mark.slow
@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (edit("m.py", "    epochs = 10", "x"), "occur 2 times"),
        (edit("m.py", "nothing like this", "x"), "not found"),
        ("m.py\nno markers", "BEFORE_EDIT"),
    ],
)
def test_failed_edits_in_the_environment_leave_the_file_alone(env: Environment, content: str, expected: str) -> None:
    env.step({"type": "execute", "content": f"open('m.py', 'w').write({SOURCE!r})"})
    step = env.step({"type": "edit", "content": content})
    assert step.outcome == "invalid" and expected in step.observation
    assert env._sandbox.read_file("m.py").decode() == SOURCE


@pytest.mark.slow
def test_edit_interrupts_a_running_cell_first(env_factory: Any) -> None:
    env = env_factory(cell_timeout=0.5)
    env.reset(make_task())
    env.step({"type": "execute", "content": f"open('m.py', 'w').write({SOURCE!r})\nimport time\ntime.sleep(30)"})
    step = env.step({"type": "edit", "content": edit("m.py", "    return lr", "    return -lr")})
    assert "interrupted first" in step.observation and step.outcome == "ok"
