"""Landmarks are found in the first step whose output, newlines read as spaces, the pattern matches: the
scorer's search (a piece every match holds looked for first, many outputs joined) against the plain search of
each output's copy, on random patterns of every construct and random outputs."""

from __future__ import annotations

from datetime import datetime, timezone

import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from super_bench import Action, load_tasks
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
        r"[\x00-\x7f]", "[!-~]", "[ -~]", r"[^\w.]", r"[\W1]", "[a-z ]", r"\x20", r"\t", r"\n ", "ab", "b1",
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


def _step(index: int, output: str) -> Step:
    return Step(index=index, action=Action.execute("print(1)"), output=output, start_time=T0, end_time=T0)


def _plain(landmarks: list[str], outputs: list[str]) -> list[int | None]:
    """Each landmark's first step, by the plain search of every output with its newlines as spaces."""
    return [
        next(
            (i for i, text in enumerate(outputs) if compile_landmark(landmark).search(text.replace("\n", " "))),
            None,
        )
        for landmark in landmarks
    ]


@settings(max_examples=600, deadline=None)
@given(
    outputs=st.lists(TEXT, min_size=1, max_size=5),
    bodies=st.lists(st.tuples(FLAGS, _pattern()).map("".join), min_size=1, max_size=3),
)
def test_landmarks_are_found_where_the_plain_search_of_each_output_with_newlines_as_spaces_finds_them(
    outputs: list[str], bodies: list[str]
) -> None:
    landmarks = [body for body in bodies if _compiles(body)]
    steps = [_step(i, output) for i, output in enumerate(outputs)]
    assert landmark_steps(landmarks, steps) == _plain(landmarks, outputs)


def test_a_pattern_that_reads_a_newline_unlike_a_space_is_found_as_the_plain_search_finds_it() -> None:
    # Found by the property above against the landmark rewriting that searched long outputs as they were. The
    # ``regex`` engine itself finds no match of the first in a lone space (its alternation of two negated sets;
    # Python's ``re`` finds one): the scorer answers as the engine does on the copy, whatever the output's length.
    landmarks = [r"((?:\n|(?:[^\n]|[^ ])))", r"a\nb", r"a b", r"^b", r"a$"]
    outputs = [" ", "a\nb", "xa\n"]
    expected = _plain(landmarks, outputs)
    assert expected[1:] == [None, 1, None, None]
    assert landmark_steps(landmarks, [_step(i, o) for i, o in enumerate(outputs)]) == expected
    long = [" " * (2 << 20), "a\nb" + " " * (2 << 20), "xa\n"]
    assert landmark_steps(landmarks, [_step(i, o) for i, o in enumerate(long)]) == _plain(landmarks, long)


def test_the_landmarks_of_the_bundled_tasks_are_found_in_a_long_output_as_in_a_short_one() -> None:
    line = "epoch 3 \n loss 0.25\ntraining finished: accuracy 0.9137\n"
    bundled = [
        landmark for name in ("expert", "masked", "auto") for t in load_tasks("demo", name) for landmark in t.landmarks
    ]
    assert len(bundled) > 20
    long = "\r 42%|####      | 42/100\n" * 50_000 + line  # over a megabyte: once searched another way
    for pattern in [*bundled, r"training finished: accuracy 0\.9\d+", r"loss\s+0\.\d+", r"0\.9137\s*$"]:
        expected = _plain([pattern], [line])
        assert landmark_steps([pattern], [_step(0, line)]) == expected, pattern
        assert landmark_steps([pattern], [_step(0, long)]) == _plain([pattern], [long]), pattern


def _compiles(pattern: str) -> bool:
    try:
        compile_landmark(pattern)
    except regex.error:
        return False
    return True
