"""The one reading of a trajectory's steps (``super_bench.reading``): what each step did, in its agent's
grammar; and that any step is read, always the same way."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.support.helpers import step, trajectory

from super_bench import Action
from super_bench.reading import Deed, edited_files, file_kind, read_steps, read_trajectory


def swe(*steps: Any) -> list[Deed]:
    episode = trajectory(*steps)
    episode.metadata["style"] = "swe-agent"
    return read_trajectory(episode)


def test_swe_agent_commands_are_views_searches_and_edits_not_runs() -> None:
    window = "[File: /content/proj/{} (40 lines total)]\n1:import os\n2:x = 0.85"
    deeds = swe(
        step(0, Action.execute("open proj/train.py"), window.format("train.py")),
        step(1, Action.execute("goto 20"), window.format("train.py")),
        step(2, Action.execute("scroll_down"), window.format("train.py")),
        step(3, Action.execute("search_file acc"), "Found 2 matches"),
        step(4, Action.execute("edit 2:2\nx = 0.9\nend_of_edit"), window.format("train.py")),
        step(5, Action.execute("edit 2:2\nx = (\nend_of_edit"), "Your changes have NOT been applied."),
        step(6, Action.execute("open results/preds.jsonl"), window.format("../results/preds.jsonl")),
        step(7, Action.execute("continue_wait"), "still running"),
        step(8, Action.execute("!python proj/train.py"), "acc 0.9"),
        step(9, Action.execute('action: {"type": "execute"}'), ""),
        step(10, Action.execute("search_file acc"), "No file open. Use the open command first."),
    )
    assert [(d.kind, d.file_kind, d.applied) for d in deeds] == [
        ("view", "source", None),
        ("view", "source", None),
        ("view", "source", None),
        ("search", None, None),
        ("edit", None, True),
        ("edit", None, False),
        ("view", "data", None),
        ("wait", None, None),
        ("run", None, None),
        ("invalid", None, None),
        ("search", None, None),
    ]
    assert [d.refused for d in deeds] == [False] * 5 + [True, False, False, False, True, True]
    assert deeds[4].path == "/content/proj/train.py" and deeds[5].failed_edit
    assert [d.evidence for d in deeds] == [False, False, False, False, False, False, True, True, True, False, False]
    assert edited_files(deeds) == {"train.py"}


def test_the_same_words_in_a_plain_cell_grammar_are_python() -> None:
    deeds = read_trajectory(trajectory(step(0, Action.execute("open('x.py')"), "")))
    assert deeds[0].kind == "run"


@pytest.mark.parametrize(
    ("code", "kind", "shown"),
    [
        ("!python train.py --lr 1e-5", "run", "source"),
        ("!python -c 'print(1)'", "run", "source"),
        ("!pip install torch==2.0", "install", "source"),
        ("!cat README.md", "view", "source"),
        ("!head -n 5 conf/base.yaml", "view", "source"),
        ("!cat results/eval.json", "view", "data"),
        ("!tail -n 20 train.log", "view", "data"),
        ("!ls data", "shell", "source"),
        ("%%writefile data/train.csv\na,b", "edit", "source"),
    ],
)
def test_cells_are_read_for_what_they_do(code: str, kind: str, shown: str) -> None:
    deed = read_trajectory(trajectory(step(0, Action.execute(code), "")))[0]
    assert deed.kind == kind
    if kind == "view":
        assert deed.file_kind == shown


def test_super_edits_say_whether_they_applied_and_a_refused_reply_is_invalid() -> None:
    edit = "proj/train.py\n<<<BEFORE_EDIT>>>\na\n<<<AFTER_EDIT>>>\nb"
    deeds = read_trajectory(
        trajectory(
            step(0, Action(type="edit", content=edit), "Edit was successful. Here's the relevant content"),
            step(1, Action(type="edit", content=edit), "Could not find the following lines to replace"),
            step(2, Action(type="edit", content=edit), "Found multiple (3) occurrences of the <<<BEFORE_EDIT>>>"),
            step(3, Action.execute(""), "Thought or action not provided", outcome="invalid"),
            step(4, Action(type="interrupt"), "KeyboardInterrupt"),
        )
    )
    assert [(d.kind, d.applied) for d in deeds] == [
        ("edit", True),
        ("edit", False),
        ("edit", False),
        ("invalid", None),
        ("interrupt", None),
    ]
    assert edited_files(deeds) == {"train.py"}


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("train.py", "source"),
        ("README.md", "source"),
        ("readme", "source"),
        ("conf.yaml", "source"),
        ("requirements.txt", "source"),
        ("preds.jsonl", "data"),
        ("train.log", "data"),
        ("out/metrics.json", "data"),
    ],
)
def test_files_are_told_by_name(path: str, kind: str) -> None:
    assert file_kind(path) == kind


WORDS = st.sampled_from(
    [
        "open",
        "goto",
        "edit 1:2",
        "end_of_edit",
        "create x.py",
        "scroll_down",
        "search_dir x",
        "!python a.py",
        "!cat a.json",
        "!pip install x",
        "continue_wait",
        "python -c",
        "%%writefile a.txt",
        "> out.txt",
        "sed -i s/a/b/ f.py",
        "action:",
        "\n",
        " ",
        "x",
    ]
)
OUTPUTS = st.sampled_from(
    ["", "[File: /a/b.py (3 lines total)]", "Your changes have NOT been applied.", "Edit was successful.", "ok"]
)


@settings(max_examples=150, deadline=None)
@given(
    cells=st.lists(
        st.tuples(
            st.lists(WORDS, max_size=6).map(" ".join), OUTPUTS, st.sampled_from(["execute", "edit"]), st.booleans()
        ),
        max_size=8,
    ),
    grammar=st.sampled_from(["cells", "react-super", "swe-agent"]),
)
def test_any_steps_are_read_in_any_grammar_the_same_way_twice(cells: list[Any], grammar: Any) -> None:
    steps = [
        step(i, Action(type=kind, content=code), out, outcome="invalid" if bad else "ok")
        for i, (code, out, kind, bad) in enumerate(cells)
    ]
    first, second = read_steps(steps, grammar), read_steps(steps, grammar)
    assert first == second and len(first) == len(steps)
    for deed, one in zip(first, steps):
        assert deed.step is one and isinstance(deed.summary, str)
        assert (deed.kind == "invalid") is (one.outcome == "invalid" or deed.command == "action")
        assert deed.evidence is (
            deed.kind in ("run", "install", "shell", "wait", "interrupt")
            or (deed.kind == "view" and deed.file_kind == "data")
        )
    assert all(isinstance(name, str) and "/" not in name for name in edited_files(first))
