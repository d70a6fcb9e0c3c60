"""The labelled set: every submitted answer of the four published runs, labelled by hand before the rules
changed (tests/data/labels/provenance.json, with a reason for each). The rules were tuned on its dev half;
the docs report both halves, and the test keeps them equal to what the rules give now."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.helpers import REFERENCE_TRAJECTORIES
from tests.support.judgements import load, provenance_pairs, report, shown_block
from tests.support.labelled import Split, provenance_labels

from super_bench.runner.importer import import_trajectories
from super_bench.scoring import PROVENANCE_STATUSES, answer_provenance

RUNS = ("react-super_expert", "react-super_masked", "swe-agent_expert", "swe-agent_masked")
DOC = Path(__file__).resolve().parents[2] / "docs" / "verification.md"
# The dev half's agreement when the rules were last tuned on it: a floor that catches a rule made worse.
DEV_FLOOR = 0.94

needs_reference = pytest.mark.skipif(
    not (REFERENCE_TRAJECTORIES / RUNS[0]).is_dir(), reason="the paper's published trajectories are not here"
)


def test_the_labelled_set_is_well_formed() -> None:
    rows = provenance_labels("all")
    assert len({(r["run"], r["task_id"]) for r in rows}) == len(rows)
    for row in rows:
        assert row["run"] in RUNS and row["label"] in PROVENANCE_STATUSES and row["reason"], row
        assert row["step"] is None or isinstance(row["step"], int), row


@needs_reference
def test_every_submitted_answer_of_the_four_runs_is_labelled() -> None:
    submitted = {
        (run, p.name)
        for run in RUNS
        for p in (REFERENCE_TRAJECTORIES / run).iterdir()
        if (p / "history.ipynb").is_file() and load(run, p.name).submission is not None
    }
    assert {(r["run"], r["task_id"]) for r in provenance_labels("all")} == submitted


@needs_reference
def test_rules_agree_with_the_dev_half_of_the_labels() -> None:
    pairs = provenance_pairs("dev")
    agree = sum(label == got for _, label, got in pairs)
    assert agree >= DEV_FLOOR * len(pairs), report(pairs, PROVENANCE_STATUSES)


@needs_reference
@pytest.mark.parametrize(("split", "block"), [("dev", "provenance-dev"), ("test", "provenance-held-out")])
def test_the_docs_show_the_figures_computed(split: Split, block: str) -> None:
    assert shown_block(DOC, block) == report(provenance_pairs(split), PROVENANCE_STATUSES)


@needs_reference
def test_the_docs_say_how_many_held_out_verdicts_the_rules_sign() -> None:
    pairs = provenance_pairs("test")
    agree = sum(label == got for _, label, got in pairs)
    assert f"the rules sign {agree} of the {len(pairs)} verdicts" in DOC.read_text(encoding="utf-8")


@needs_reference
def test_the_importer_notes_the_provenance_the_rules_give(tmp_path: Path) -> None:
    # A user's import of a published run keeps, in each row, the verdict the rules give its trajectory.
    outcome = import_trajectories(REFERENCE_TRAJECTORIES / "swe-agent_expert", tmp_path / "run")
    given = {r.task_id: r.answer_provenance for r in outcome.run.results if r.answer_provenance is not None}
    for task_id, status in given.items():
        trace = answer_provenance(load("swe-agent_expert", task_id))
        assert trace is not None and status == trace.status, task_id
    assert len(given) == sum(1 for r in provenance_labels("all") if r["run"] == "swe-agent_expert")
