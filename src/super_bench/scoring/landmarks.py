"""Landmarks: regexes for milestones (a finished epoch, a loaded dataset) searched in the outputs.

Each landmark is searched in every step's output (pre-executed steps included) with newlines
replaced by spaces, as the reference does; the score is the fraction found. Corrected mode
searches the raw output, never the cleaned or truncated copy the model saw; reference mode
searches the reference agent's cleaned copy of it (see ``cleaning``), as the reference did.

Patterns run on the ``regex`` engine in its ``re``-compatible mode (``VERSION0``: the syntax and the
matches of Python's ``re``, which the reference used), because its searches take a time limit: a
pattern that backtracks catastrophically on some output cannot hang scoring. A search that runs out
of time counts as no match, with a warning; ``super-bench tasks validate`` finds such patterns first.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from super_bench.tasks.model import compile_landmark
from super_bench.trajectory import Step

log = logging.getLogger(__name__)

# Seconds one landmark may search one step's output (an ordinary pattern searches 100 MB in well under one).
SEARCH_TIMEOUT = 30.0


def raw_text(step: Step) -> str:
    return step.raw_output


def landmark_steps(
    landmarks: Sequence[str], steps: Sequence[Step], text: Callable[[Step], str] = raw_text
) -> list[int | None]:
    """For each landmark, the index of the first step whose output (``text`` of the step) matches it."""
    found: list[int | None] = [None] * len(landmarks)
    pending = {i: compile_landmark(p) for i, p in enumerate(landmarks)}
    for step in steps:
        if not pending:
            break
        flat = text(step).replace("\n", " ")
        for i, pattern in list(pending.items()):
            try:
                matched = pattern.search(flat, timeout=SEARCH_TIMEOUT) is not None
            except TimeoutError:
                log.warning(
                    "landmark %d (%r) searched the output of step %d for more than %g s; it counts as not found "
                    "from there on (a pattern that backtracks catastrophically: see `super-bench tasks validate`)",
                    i,
                    pattern.pattern,
                    step.index,
                    SEARCH_TIMEOUT,
                )
                matched = False
                del pending[i]
            if matched:
                found[i] = step.index
                del pending[i]
    return found
