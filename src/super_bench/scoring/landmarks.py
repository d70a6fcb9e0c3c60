"""Landmarks: regexes for milestones (a finished epoch, a loaded dataset) searched in the outputs.

Each landmark is searched in every step's output (pre-executed steps included) with newlines
replaced by spaces, as the reference does; the score is the fraction found. Corrected mode
searches the raw output, never the cleaned or truncated copy the model saw; reference mode
searches the reference agent's cleaned copy of it (see ``cleaning``), as the reference did.

Patterns run on the ``regex`` engine in its ``re``-compatible mode (``VERSION0``: the syntax and the
matches of Python's ``re``, which the reference used), because its searches take a time limit: a
pattern that backtracks catastrophically on some output cannot hang scoring. A search that runs out
of time counts as no match, with a warning; ``super-bench tasks validate`` finds such patterns first.
A time limit costs a few microseconds a search, more than the search of a short output itself, so only
the outputs that hold the text every match of the pattern contains (``required_text``) are searched: that
text is looked for in the outputs joined (``texts.Chunks``), many steps at once. An output is copied with its
newlines as spaces once, for all the landmarks that search it, and the copy is let go with its chunk of steps.
An output kept in a file (``Step.output_file``) is searched there, a window at a time (``windows``), with the
answer the whole of it gives.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from super_bench.scoring.texts import Chunks, Text, outputs
from super_bench.scoring.windows import search_file
from super_bench.tasks.model import compile_landmark
from super_bench.trajectory import Step

if TYPE_CHECKING:
    import regex  # imported by compile_landmark, on first use

log = logging.getLogger(__name__)

# Seconds one landmark may search one step's output (an ordinary pattern searches 100 MB in well under one).
SEARCH_TIMEOUT = 30.0


def raw_text(step: Step) -> str:
    return step.raw_output


def landmark_steps(
    landmarks: Sequence[str], steps: Sequence[Step], text: Callable[[Step], str] = raw_text
) -> list[int | None]:
    """For each landmark, the index of the first step whose output (``text`` of the step) matches it."""
    texts = outputs if text is raw_text else lambda some: [text(s) for s in some]
    return find_landmarks(landmarks, Chunks(steps, texts))


def find_landmarks(landmarks: Sequence[str], chunks: Chunks) -> list[int | None]:
    """``landmark_steps`` in texts joined already (scoring's, which answer provenance searches too)."""
    found: list[int | None] = [None] * len(landmarks)
    # Each landmark with the longest space-free piece of the text its matches contain: a piece without
    # spaces is in the output as printed whenever it is in the output with newlines as spaces, so it is
    # looked for in the joined outputs as they are, and only the outputs that hold it are searched.
    pending = {i: (compile_landmark(landmark), _required_piece(landmark)) for i, landmark in enumerate(landmarks)}
    # Outputs kept in files are searched there (below); the text of theirs joined here is only a head and a tail.
    in_files = chunks.texts is outputs
    spilled = [(s.index, s) for s in chunks.steps if in_files and s.output_record is not None]
    unread = [s.index for s in chunks.steps if in_files and s.output_file is not None and s.output_record is None]
    if unread and landmarks:
        log.warning(
            "steps %s keep their outputs in files, but the trajectory was not read from its folder "
            "(Trajectory.load): their landmarks are searched in the head and tail they keep",
            unread,
        )
    searched = dict(pending)
    for steps, joined in chunks:
        if not pending:
            break
        flat: dict[int, str] = {}  # the outputs searched, newlines as spaces, shared by the landmarks
        for i, (pattern, piece) in list(pending.items()):
            k = _find_piece(joined, piece, 0)
            while k is not None:
                if in_files and steps[k].output_record is not None:
                    k = _find_piece(joined, piece, k + 1)
                    continue
                if k not in flat:
                    flat[k] = joined.texts[k].replace("\n", " ")
                try:
                    matched = pattern.search(flat[k], timeout=SEARCH_TIMEOUT) is not None
                except TimeoutError:
                    log.warning(
                        "landmark %d (%r) searched the output of step %d for more than %g s; it counts as not "
                        "found from there on (a pattern that backtracks catastrophically: see `super-bench tasks "
                        "validate`)",
                        i,
                        pattern.pattern,
                        steps[k].index,
                        SEARCH_TIMEOUT,
                    )
                    del pending[i]
                    break
                if matched:
                    found[i] = steps[k].index
                    del pending[i]
                    break
                k = _find_piece(joined, piece, k + 1)
    for i, (pattern, piece) in searched.items():
        for index, step in spilled:
            first = found[i]
            if first is not None and first <= index:
                break
            if _search_file(i, pattern, piece, step):
                found[i] = index
                break
    return found


def _search_file(i: int, pattern: regex.Pattern[str], piece: str, step: Step) -> bool:
    """Whether landmark ``i`` matches the output ``step`` keeps in a file; a search that runs out of time, or a
    file that cannot be read, counts as no match, with a warning."""
    record, output_file = step.output_record, step.output_file
    if record is None or output_file is None:
        return False
    try:
        return search_file(pattern, piece, record, output_file.name, SEARCH_TIMEOUT)
    except TimeoutError:
        log.warning(
            "landmark %d (%r) searched the output of step %d for more than %g s; not found there",
            i,
            pattern.pattern,
            step.index,
            SEARCH_TIMEOUT,
        )
    except OSError as e:
        log.warning(
            "landmark %d: the output of step %d could not be read from %s: %s", i, step.index, output_file.name, e
        )
    return False


def _find_piece(joined: Text, piece: str, k: int) -> int | None:
    """The first of the joined texts from the ``k``-th on that holds ``piece`` (every one, for no piece)."""
    if k >= len(joined.texts):
        return None
    if not piece:
        return k
    at = joined.text.find(piece, joined.starts[k] if k else 0)
    return None if at < 0 else joined.locate(at)[0]


@functools.lru_cache(maxsize=4096)
def _required_piece(landmark: str) -> str:
    """The longest space-free piece of the text every match of ``landmark`` contains (read once a pattern)."""
    return max(required_text(compile_landmark(landmark)).split(" "), key=len)


_META = set(".^$*+?{}[]|()\\")
_QUANTIFIERS = set("*+?{")
# Escapes that stand for a class or a position and take no argument.
_PLAIN_ESCAPES = set("dDwWsSbBAZntrfva")


def required_text(pattern: regex.Pattern[str]) -> str:
    """The longest run of literal characters that every match of ``pattern`` contains ("" when none is
    sure): a run outside any group or character class, in a pattern without a top-level alternative and
    without case-folding or verbose syntax. Read from the pattern's source, conservatively: whatever is
    unusual ends a run."""
    import regex  # loaded already: ``pattern`` was compiled by it

    if pattern.flags & (regex.IGNORECASE | regex.VERBOSE):
        return ""
    source = pattern.pattern
    runs: list[str] = []
    run: list[str] = []
    depth = i = 0
    while i < len(source):
        char = source[i]
        literal = None
        if char == "\\" and i + 1 < len(source):
            following = source[i + 1]
            if following.isalnum() and following not in _PLAIN_ESCAPES:
                return ""  # \x41, \N{...}, \p{...}, \1: escapes with arguments are not read here
            literal = following if not following.isalnum() and following.isascii() else None
            i += 2
        elif char == "[":
            i = _class_end(source, i)
            if i < 0:
                return ""
        elif char == "{":  # a count ({2,3}) or braces taken literally: either way, passed over
            end = source.find("}", i)
            i = len(source) if end < 0 else end + 1
        else:
            if char == "(":
                depth += 1
            elif char == ")":
                depth -= 1
            elif char == "|" and depth == 0:
                return ""
            literal = None if char in _META else char
            i += 1
        if literal is not None and depth == 0:
            if i < len(source) and source[i] in _QUANTIFIERS:
                literal = None  # the character may repeat zero times: it ends the run instead
            else:
                run.append(literal)
                continue
        runs.append("".join(run))
        run = []
    runs.append("".join(run))
    return max(runs, key=len)


def _class_end(source: str, start: int) -> int:
    """The index after the character class that opens at ``start``; -1 for a class with a "[" in it,
    which engines read differently (a member, a POSIX class, a nested set)."""
    i = start + 1
    if i < len(source) and source[i] == "^":
        i += 1
    if i < len(source) and source[i] == "]":  # a "]" first is a member
        i += 1
    while i < len(source) and source[i] != "]":
        if source[i] == "[":
            return -1
        i += 2 if source[i] == "\\" else 1
    return i + 1
