"""The hand labels of the paper's published trajectories (tests/data/labels/), and their fixed split.

Every label falls in the dev half or the test half by a hash of ``run/task_id`` that no rule can move:
rules are tuned on the dev half only, and the test half is only ever counted (docs/failure-analysis.md and
docs/verification.md report it). Every failure cause was labelled twice, independently, and settled by a
third reader where the two differed (``failure_causes.json``); a second labeller labelled a sample of the
answers' provenance again (``second_labeller.json``). The agreement between labellers is reported too.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

LABELS = Path(__file__).parents[1] / "data" / "labels"
Split = Literal["dev", "test", "all"]


def split_of(run: str, task_id: str) -> Literal["dev", "test"]:
    digest = hashlib.sha256(f"super-bench-split:{run}/{task_id}".encode()).digest()
    return "dev" if digest[0] % 2 == 0 else "test"


def _labels(name: str, split: Split) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads((LABELS / name).read_text(encoding="utf-8"))["labels"]
    return [row for row in rows if split == "all" or split_of(row["run"], row["task_id"]) == split]


def failure_labels(split: Split) -> list[dict[str, Any]]:
    """Each failed published trajectory's primary cause, as labelled."""
    return _labels("failure_causes.json", split)


def provenance_labels(split: Split) -> list[dict[str, Any]]:
    """Each submitted published answer's provenance, as labelled."""
    return _labels("provenance.json", split)


def second_labels() -> dict[str, list[dict[str, Any]]]:
    """The second labeller's provenance labels of a fixed sample."""
    data: dict[str, list[dict[str, Any]]] = json.loads((LABELS / "second_labeller.json").read_text(encoding="utf-8"))
    return data
