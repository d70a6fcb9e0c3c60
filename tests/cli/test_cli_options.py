"""Options shared by the commands: words taken by --task-ids, defaults taken from where they are defined."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.support.helpers import cli


def parsed_ids(*args: str) -> list[str]:
    """The task ids a command was given, as its refusal of unknown ids lists them."""
    result = cli(*args)
    assert result.returncode == 2, result.stderr
    found = re.search(r"unknown task id\(s\): (.*)\. `super-bench tasks list[^`]*`", result.stderr)
    assert found, result.stderr
    return [re.sub(r" \(did you mean .*\)$", "", part).strip("'") for part in found.group(1).split("; ")]


@pytest.mark.parametrize(
    ("args", "ids"),
    [
        (["--task-ids", "nope1", "nope2", "nope3"], ["nope1", "nope2", "nope3"]),
        (["--task-ids", "nope1", "--task-ids", "nope2"], ["nope1", "nope2"]),
        (["--task-ids=nope1", "nope2", "--limit", "1"], ["nope1", "nope2"]),
        (
            ["--limit", "1", "--task-ids", "x_configuration,data", "nope2", "--set", "masked"],
            ["x_configuration,data", "nope2"],
        ),
    ],
)
def test_task_ids_take_every_word_up_to_the_next_option(args: list[str], ids: list[str], tmp_path: Path) -> None:
    assert parsed_ids("run", *args, "--out", str(tmp_path / "run")) == ids


@pytest.mark.parametrize("command", [["doctor"], ["construct", "mask"]])
def test_every_command_with_task_ids_reads_them_alike(command: list[str], tmp_path: Path) -> None:
    args = ["--task-ids", "nope1", "x_goal,data", "--out", str(tmp_path / "out"), "--task-ids", "nope3"]
    assert parsed_ids(*command, *args) == ["nope1", "x_goal,data", "nope3"]
