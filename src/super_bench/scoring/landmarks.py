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
    patterns = [re.compile(p) for p in landmarks]
    found: list[int | None] = [None] * len(patterns)
    for step in steps:
        if all(f is not None for f in found):
            break
        text = step.raw_output.replace("\n", " ")
        for i, pattern in enumerate(patterns):
            if found[i] is None and pattern.search(text):
                found[i] = step.index
    return found


def landmark_score(landmarks: Sequence[str], steps: Sequence[Step]) -> float | None:
    if not landmarks:
        return None
    hits = landmark_steps(landmarks, steps)
    return sum(h is not None for h in hits) / len(hits)
