"""Help, warnings and play's task text at 80 columns: wrapped at word boundaries, never cut ("...") and
never split mid-word by the terminal's edge."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest
from tests.report.test_tables_80 import STYLES

from super_bench import load_tasks
from super_bench.cli import main

ENV = {**os.environ, "COLUMNS": "80", "LINES": "50", "TERM": "xterm"}


def at_a_terminal(*args: str, cwd: Path, typed: bytes = b"", after: str = "") -> tuple[int, str]:
    """The exit status and what ``super-bench ARGS`` shows in a terminal of 80 columns, without styles;
    ``typed`` is typed once ``after`` has been shown."""
    controller, terminal = os.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "super_bench", *args], stdin=terminal, stdout=terminal, stderr=terminal, env=ENV, cwd=cwd
    )
    os.close(terminal)
    seen = b""
    deadline = time.monotonic() + 120
    while True:
        assert time.monotonic() < deadline, seen
        if typed and after.encode() in seen:
            os.write(controller, typed)
            typed = b""
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the command ended and closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(controller)
    return proc.wait(timeout=60), STYLES.sub("", seen.decode()).replace("\r", "")


def whole_at_80(shown: str, text: str) -> None:
    """Every line of ``shown`` fits in 80 columns and every word of ``text`` is in it whole."""
    assert all(len(line) <= 80 for line in shown.splitlines()), shown
    words = set(shown.split())
    for word in text.split():
        assert word in words, f"{word!r} is cut: {shown}"


def first_sentences(group: click.Group) -> dict[str, str]:
    context = click.Context(group)
    found = {}
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        assert command is not None and command.help
        found[name] = re.split(r"(?<=\.)\s+(?=[A-Z])", " ".join(command.help.split("\n\n")[0].split()))[0]
    return found


@pytest.mark.parametrize("group", [[], ["construct"], ["sandbox"], ["tasks"]])
def test_help_lists_each_command_whole_at_80_columns(group: list[str]) -> None:
    command: click.Command = main
    for name in group:
        found = main.get_command(click.Context(main), name)
        assert isinstance(found, click.Group)
        command = found
    assert isinstance(command, click.Group)
    done = subprocess.run(
        [sys.executable, "-m", "super_bench", *group, "--help"], capture_output=True, text=True, env=ENV, timeout=60
    )
    assert done.returncode == 0, done.stderr
    listing = done.stdout.split("Commands:\n")[1]
    assert "..." not in listing
    for sentence in first_sentences(command).values():
        whole_at_80(listing, sentence)
        # In the order written, the listing's wrapping aside.
        assert sentence in " ".join(listing.split()), (sentence, listing)


def test_a_warning_wraps_at_word_boundaries_at_80_columns(tmp_path: Path) -> None:
    from super_bench.sandbox import SandboxConfig, describe_backend

    # The warning a run of tasks outside the bundled demo gives on a machine where SUPER's environment was
    # never built.
    warning = describe_backend(SandboxConfig(backend="local")).warning
    if warning is None:
        pytest.skip("SUPER's task environment is built here: no warning to show")
    assert len(warning) > 80
    own = {"task_id": "own", "query": "q", "github_repo": "https://github.com/example/research", "answer": 1}
    (tmp_path / "tasks.jsonl").write_text(json.dumps({**own, "solution": "print(1)"}) + "\n")
    args = ("run", "--source", "tasks.jsonl", "--sandbox", "local", "--out", "r")
    status, shown = at_a_terminal(*args, cwd=tmp_path)
    assert status == 0, shown
    # The warning's lines: from its start to the progress bar, which redraws itself on one line.
    lines = shown[shown.index("WARNING") :].splitlines()
    whole_at_80(
        "\n".join(lines[: next(i for i, line in enumerate(lines) if "━" in line)]),
        f"WARNING super_bench.runner.run: {warning}",
    )


def test_plays_task_text_wraps_at_word_boundaries_at_80_columns(tmp_path: Path) -> None:
    (task,) = load_tasks("demo", "expert", task_ids=["tinyreg"])
    assert max(len(line) for line in task.query.splitlines()) > 80
    # Ctrl-D at the prompt: the end of input, which stops the episode.
    status, shown = at_a_terminal("play", "tinyreg", "--sandbox", "local", cwd=tmp_path, typed=b"\x04", after=">>> ")
    assert status == 0, shown
    text = shown.split("Type a cell")[0]
    whole_at_80(text, task.query)


def test_a_task_files_problems_wrap_at_word_boundaries_at_80_columns(tmp_path: Path) -> None:
    (tmp_path / "tasks.jsonl").write_text(json.dumps({"task_id": "a-task-with-nothing-else", "query": "Do it."}) + "\n")
    args = ["tasks", "validate", "tasks.jsonl", "--no-repos", "--offline"]
    piped = subprocess.run(
        [sys.executable, "-m", "super_bench", *args], capture_output=True, text=True, env=ENV, cwd=tmp_path
    )
    assert piped.returncode == 1 and max(len(line) for line in piped.stderr.splitlines()) > 80, piped.stderr
    status, shown = at_a_terminal(*args, cwd=tmp_path)
    assert status == 1
    whole_at_80(shown, piped.stderr)


def every_command(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    context = click.Context(group)
    found = [path]
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        if isinstance(command, click.Group):
            found += every_command(command, (*path, name))
        elif command is not None:
            found.append((*path, name))
    return found


def test_every_commands_help_fits_80_columns_and_splits_no_word() -> None:
    from click.testing import CliRunner

    for path in every_command(main):
        done = CliRunner().invoke(main, [*path, "--help"], terminal_width=80)
        assert done.exit_code == 0, (path, done.output)
        lines = done.output.splitlines()
        assert all(len(line) <= 80 for line in lines), (path, done.output)
        for line, after in itertools.pairwise(lines):
            # A word cut at a hyphen ("swe-" then "agent", "--memory-" then "swap") is no longer one to copy.
            assert not (re.search(r"\w-$", line) and re.match(r"\s*\w", after)), (path, line, after)
