"""The labelled set: each submitted answer of the published ReAct-SUPER Expert trajectories, imported as a user
imports them, gets the provenance label a careful reader of the trajectory gives it (tests/data, with the
reason for each). Rows marked ``open`` are labels the rules do not give yet: the test asserts they still
differ, so that the day a rule gives them the row must be closed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.helpers import REFERENCE_TRAJECTORIES

from super_bench.report.importer import import_trajectories

SAMPLE = REFERENCE_TRAJECTORIES / "react-super_expert"
LABELS = Path(__file__).parent / "data" / "provenance_labels.json"


def _labels() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(LABELS.read_text(encoding="utf-8"))["labels"]
    return rows


def test_the_labelled_set_is_well_formed() -> None:
    rows = _labels()
    assert len({r["task_id"] for r in rows}) == len(rows)
    assert all(r["label"] in ("observed", "partly_observed", "given", "unobserved") and r["reason"] for r in rows)


@pytest.mark.skipif(not SAMPLE.is_dir(), reason="the paper's sample trajectories are not here")
def test_every_submitted_answer_of_the_published_expert_runs_gets_its_label(tmp_path: Path) -> None:
    outcome = import_trajectories(SAMPLE, tmp_path / "run")
    given = {r.task_id: r.answer_provenance for r in outcome.run.results if r.answer_provenance is not None}
    rows = {r["task_id"]: r for r in _labels()}
    assert set(given) == set(rows)  # every submitted answer is labelled, and only those
    closed = {t: r["label"] for t, r in rows.items() if "open" not in r}
    assert {t: given[t] for t in closed} == closed
    still_open = {t: (given[t], r["label"]) for t, r in rows.items() if "open" in r}
    assert all(got != want for got, want in still_open.values()), still_open
