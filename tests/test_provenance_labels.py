"""The labelled set: each submitted answer of the published ReAct-SUPER Expert trajectories, imported as a user
imports them, gets the provenance label a careful reader of the trajectory gives it (tests/data, with the
reason for each), and where a row names the step a reader cites, provenance cites that step for every
value."""

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
    assert all(set(r) <= {"task_id", "label", "reason", "step"} for r in rows)


@pytest.mark.skipif(not SAMPLE.is_dir(), reason="the paper's sample trajectories are not here")
def test_every_submitted_answer_of_the_published_expert_runs_gets_its_label(tmp_path: Path) -> None:
    outcome = import_trajectories(SAMPLE, tmp_path / "run")
    given = {r.task_id: r.answer_provenance for r in outcome.run.results if r.answer_provenance is not None}
    rows = {r["task_id"]: r for r in _labels()}
    assert set(given) == set(rows)  # every submitted answer is labelled, and only those
    assert {t: given[t] for t in rows} == {t: r["label"] for t, r in rows.items()}
    cites = {t: {r["step"]} for t, r in rows.items() if "step" in r}
    cited = {
        r.task_id: {f["step"] for f in r.details["provenance"]["fields"]}
        for r in outcome.run.results
        if r.task_id in cites
    }
    assert {t: cited[t] for t in cites} == cites
