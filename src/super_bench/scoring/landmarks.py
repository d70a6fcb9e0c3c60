"""Landmarks: regexes for milestones (a finished epoch, a loaded dataset) searched in the outputs.

Each landmark is searched in every step's output (pre-executed steps included) with newlines
replaced by spaces, as the reference does; the score is the fraction found. Corrected mode
searches the raw output, never the cleaned or truncated copy the model saw; reference mode
searches the reference agent's cleaned copy of it (see ``cleaning``), as the reference did.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from super_bench.trajectory import Step


def raw_text(step: Step) -> str:
    return step.raw_output


def landmark_steps(
    landmarks: Sequence[str], steps: Sequence[Step], text: Callable[[Step], str] = raw_text
) -> list[int | None]:
    """For each landmark, the index of the first step whose output (``text`` of the step) matches it."""
    found: list[int | None] = [None] * len(landmarks)
    pending = {i: re.compile(p) for i, p in enumerate(landmarks)}
    for step in steps:
        if not pending:
            break
        flat = text(step).replace("\n", " ")
        for i, pattern in list(pending.items()):
            if pattern.search(flat):
                found[i] = step.index
                del pending[i]
    return found


def landmark_score(landmarks: Sequence[str], steps: Sequence[Step]) -> float | None:
    if not landmarks:
        return None
    hits = landmark_steps(landmarks, steps)
    return sum(h is not None for h in hits) / len(hits)
