"""A landmark rewritten to search an output as it is (scoring.flatline) finds what the landmark finds in the
output with newlines as spaces, at the same place; what it cannot rewrite with certainty it leaves alone."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
import regex
from hypothesis import given, reject, settings
from hypothesis import strategies as st

from super_bench import Action, load_tasks
from super_bench.scoring import landmarks as landmarks_module
from super_bench.scoring.flatline import flat_pattern
from super_bench.scoring.landmarks import landmark_steps
from super_bench.tasks.model import compile_landmark
from super_bench.trajectory import Step

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)

# What an output is made of here: spaces and newlines above all, a tab, a carriage return, words and digits.
TEXT = st.text(alphabet=st.sampled_from(" \n\n  \tab1_B.\r:é"), max_size=24)

ATOMS = st.sampled_from(
    [
        " ", "\\n", "a", "b", "1", "B", "_", "é", r"\.", ":", ".", r"\s", r"\S", r"\w", r"\W", r"\d", r"\D",
        "[ a]", "[^ a]", "[\\n]", "[^\\n]", "[^ ]", "[ \\n]", "[^ \\n]", r"[\s]", r"[^\S\n]", r"[\t-\r]",
        r"[\x00-\x7f]", "[!-~]", "[ -~]", r"[^\w.]", r"[\W1]", "[a-z ]", r"\x20", r"\t", r"\n ",
    ]
)  # fmt: skip
ANCHORS = st.sampled_from(["^", "$", r"\A", r"\Z", r"\b", r"\B"])
FLAGS = st.sampled_from(["", "(?i)", "(?m)", "(?s)", "(?x)", "(?ms)", "(?is)", "(?a)", "(?im)"])


def _pattern() -> st.SearchStrategy[str]:
    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.lists(inner, min_size=1, max_size=4).map("".join),
            st.tuples(
                inner, st.sampled_from(["*", "+", "?", "*?", "+?", "??", "{2}", "{1,3}", "{,2}", "{2,}", "*+"])
            ).map(lambda t: f"(?:{t[0]}){t[1]}"),
            st.lists(inner, min_size=2, max_size=3).map(lambda alts: "(?:" + "|".join(alts) + ")"),
            inner.map(lambda x: f"({x})"),
            st.tuples(
                st.sampled_from(["(?=", "(?!", "(?<=", "(?<!", "(?>", "(?i:", "(?s:", "(?m:", "(?-i:"]), inner
            ).map(lambda t: f"{t[0]}{t[1]})"),
        )

    return st.recursive(st.one_of(ATOMS, ANCHORS), extend, max_leaves=8)


@settings(max_examples=1500, deadline=None)
@given(flags=FLAGS, body=_pattern(), text=TEXT)
def test_the_rewritten_landmark_finds_what_the_landmark_finds_with_newlines_as_spaces(
    flags: str, body: str, text: str
) -> None:
    pattern = flags + body
    if not _compiles(pattern):
        reject()  # a pattern the engine refuses is not a case
    original = compile_landmark(pattern)
    flat = flat_pattern(pattern)
    assert flat is not None, pattern  # every construct of this grammar is rewritten
    expected = original.search(text.replace("\n", " "))
    found = compile_landmark(flat).search(text)
    assert (found and found.span()) == (expected and expected.span()), (pattern, flat, text)


@pytest.mark.parametrize(
    "pattern",
    [
        r"(a) \1",  # a backreference
        r"(?P<x>a) (?P=x)",
        r"(a)?(?(1)b|c)",  # a conditional
        r"loss{e<=1}",  # a fuzzy match to regex, literal braces to re
        r"a{x}",
        r"[[:alpha:]]+",  # a POSIX class to regex, a possible nested set to re
        r"[a--b]",
        r"\p{L}+",  # regex-only syntax
        r"(?V1)a b",
        r"(?w)a b",
        r"a (?i)b",  # a flag not at the start
        r"(?L)a b",
        "(unclosed",
    ],
)
def test_what_is_not_certain_to_mean_the_same_is_left_alone(pattern: str) -> None:
    assert flat_pattern(pattern) is None


def test_escaped_braces_and_counts_are_rewritten() -> None:
    assert flat_pattern(r"\{'loss': 0\.\d{2}\}") == r"\x7b\x27loss\x27\x3a[ \n]0\x2e(?:[\d]){2,2}\x7d"


def test_the_landmarks_of_the_bundled_tasks_are_rewritten_and_still_found() -> None:
    line = "epoch 3 \n loss 0.25\ntraining finished: accuracy 0.9137\n"
    bundled = [
        landmark for name in ("expert", "masked", "auto") for t in load_tasks("demo", name) for landmark in t.landmarks
    ]
    assert len(bundled) > 20
    for pattern in [
        r"training finished: accuracy 0\.9\d+",
        r"loss\s+0\.\d+",
        r"^epoch 3\s+loss",
        r"0\.9137\s*$",
    ]:
        flat = flat_pattern(pattern)
        assert flat is not None
        expected = compile_landmark(pattern).search(line.replace("\n", " "))
        found = compile_landmark(flat).search(line)
        assert found is not None and expected is not None and found.span() == expected.span()
    for pattern in bundled:  # every one rewritten, and the same answer on the text above
        flat = flat_pattern(pattern)
        assert flat is not None, pattern
        expected = compile_landmark(pattern).search(line.replace("\n", " "))
        found = compile_landmark(flat).search(line)
        assert (found and found.span()) == (expected and expected.span()), pattern


def _step(index: int, output: str) -> Step:
    return Step(index=index, action=Action.execute("print(1)"), output=output, start_time=T0, end_time=T0)


@settings(max_examples=300, deadline=None)
@given(outputs=st.lists(TEXT, min_size=1, max_size=4), bodies=st.lists(_pattern(), min_size=1, max_size=3))
def test_landmarks_are_found_in_the_same_steps_whether_the_outputs_are_copied_or_not(
    outputs: list[str], bodies: list[str]
) -> None:
    landmarks = [body for body in bodies if _compiles(body)]
    steps = [_step(i, output) for i, output in enumerate(outputs)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(landmarks_module, "FLAT_CHARS", -1)  # every output searched as it is
        searched = landmark_steps(landmarks, steps)
    assert searched == landmark_steps(landmarks, steps)


def _compiles(pattern: str) -> bool:
    try:
        compile_landmark(pattern)
    except regex.error:
        return False
    return True
