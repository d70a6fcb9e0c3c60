"""Measuring the optional judge on the labelled published trajectories (``python -m tests.support.measure_judge``):
through a real local OpenAI-compatible server, with requests at once; a judge that gives no usable verdict leaves
the rules' figures; the test half is counted, never listed."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from tests.support.helpers import REFERENCE_TRAJECTORIES
from tests.support.judgements import failure_pairs, report
from tests.support.labelled import failure_labels
from tests.support.measure_judge import main, measure, summary
from tests.support.model_server import model_server

from super_bench.analysis import CAUSES
from super_bench.models.mock import MockModel

pytestmark = pytest.mark.skipif(
    not (REFERENCE_TRAJECTORIES / "react-super_expert").is_dir(),
    reason="the published trajectories are not beside the checkout",
)
SAYS_COMPUTE = json.dumps({"cause": "compute", "step": None, "reason": "The time limit stopped it."})


def test_a_judge_through_a_local_server_is_counted_against_the_labels(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    labels = failure_labels("dev")
    with model_server(*[SAYS_COMPUTE] * len(labels)) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        code = main(
            ["--judge", "openai/gpt-4o-mini", "--split", "dev", "--workers", "4", "--base-url", server.base_url]
        )
        assert code == 0 and len(server.requests) == len(labels)
    shown = capsys.readouterr().out
    rules = list(failure_pairs("dev"))
    assert report(rules, CAUSES) in shown.split("## With the judge")[0]  # the rules alone: the docs' dev table
    # A judge that says compute every time agrees exactly where the label is compute.
    compute = sum(label == "compute" for _, label, _ in rules)
    assert f"Agreement: {compute} of {len(labels)} (" in shown.split("## With the judge")[1]
    confirmed = sum(got == "compute" for _, _, got in rules)
    right = sum(label == "compute" != got for _, label, got in rules)
    assert f"The judge: confirmed {confirmed}; changed to right {right};" in shown


def test_a_judge_without_a_usable_verdict_leaves_the_rules_figures() -> None:
    labels = failure_labels("dev")
    ticks = Counter[str]()
    judged = measure(
        "dev", MockModel("j", replies=["It failed."] * len(labels)), progress=lambda: ticks.update(["done"])
    )
    assert ticks["done"] == len(labels) and [j.task_id for j in judged] == [row["task_id"] for row in labels]
    assert all(j.judge == j.rules and j.by == "rules" for j in judged)
    assert f"no usable verdict {len(labels)}." in summary(judged)
    before, after = summary(judged).split("## With the judge")
    assert before.split("## The rules alone")[1].strip() == after.split("The judge:")[0].strip()


def test_the_test_half_is_counted_never_listed(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--judge", "mock/x", "--split", "test", "--misses"])
    assert stopped.value.code == 2 and "the dev half only" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stopped:
        main(["--judge", "nonsense"])
    assert stopped.value.code == 2 and "a model is named provider/name" in capsys.readouterr().err
