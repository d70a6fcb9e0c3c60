"""Landmarks: regexes for milestones (a finished epoch, a loaded dataset) searched in the outputs.

Each landmark is searched in every step's raw output (pre-executed steps included) with
newlines replaced by spaces, as the reference does; the score is the fraction found. The raw
output is used, never the cleaned or truncated copy the model saw.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from super_bench.trajectory import Step


def landmark_steps(landmarks: Sequence[str], steps: Sequence[Step]) -> list[int | None]:
    """For each landmark, the index of the first step whose output matches it (None if none)."""
    found: list[int | None] = [None] * len(landmarks)
    pending = {i: re.compile(p) for i, p in enumerate(landmarks)}
    for step in steps:
        if not pending:
            break
        text = step.raw_output.replace("\n", " ")
        for i, pattern in list(pending.items()):
            if pattern.search(text):
                found[i] = step.index
                del pending[i]
    return found


def landmark_score(landmarks: Sequence[str], steps: Sequence[Step]) -> float | None:
    if not landmarks:
        return None
    hits = landmark_steps(landmarks, steps)
    return sum(h is not None for h in hits) / len(hits)
