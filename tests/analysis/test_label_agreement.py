"""The hand labels themselves: complete, well formed, and checked by a second labeller.

The second labeller's sample is fixed by a hash, and its agreement with the first labels (Cohen's kappa
among them) is what docs/failure-analysis.md and docs/verification.md state.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from pathlib import Path

from tests.support.judgements import interval
from tests.support.labelled import failure_labels, provenance_labels, second_labels, split_of

CAUSES = {"environment", "resource", "repository_error", "compute", "no_experiment", "wrong_result", "agent_format"}
PROVENANCE = {"observed", "partly_observed", "given", "unobserved"}
DOCS = Path(__file__).resolve().parents[2] / "docs"
RUNS = {"react-super_expert", "react-super_masked", "swe-agent_expert", "swe-agent_masked"}


def kappa(pairs: list[tuple[str, str]]) -> float:
    n = len(pairs)
    observed = sum(a == b for a, b in pairs) / n
    first, second = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    expected = sum(first[c] * second[c] for c in first) / n / n
    return (observed - expected) / (1 - expected)


def test_every_failed_and_every_submitted_published_trajectory_is_labelled() -> None:
    failures, answers = failure_labels("all"), provenance_labels("all")
    assert len(failures) == 260 and len(answers) == 218
    assert {row["run"] for row in failures} == {row["run"] for row in answers} == RUNS
    assert {row["cause"] for row in failures} == CAUSES
    assert {row["label"] for row in answers} <= PROVENANCE
    for row in failures + answers:
        assert row["reason"] and (row["step"] is None or row["step"] >= 0), row
    assert len({(row["run"], row["task_id"]) for row in failures}) == 260


def test_the_split_is_fixed_and_near_half() -> None:
    assert split_of("react-super_expert", "acqsurvey") == split_of("react-super_expert", "acqsurvey")
    for rows in (failure_labels("all"), provenance_labels("all")):
        dev = sum(split_of(row["run"], row["task_id"]) == "dev" for row in rows)
        assert 0.4 < dev / len(rows) < 0.6
    assert len(failure_labels("dev")) + len(failure_labels("test")) == 260


def _sample(rows: list[dict[str, str]], salt: str, size: int) -> set[tuple[str, str]]:
    def key(row: dict[str, str]) -> str:
        return hashlib.sha256(f"second-labeller:{salt}{row['run']}/{row['task_id']}".encode()).hexdigest()

    return {(row["run"], row["task_id"]) for row in sorted(rows, key=key)[:size]}


def test_the_second_labellers_sample_is_the_hashed_one() -> None:
    answers = [row for row in provenance_labels("all") if row["run"] != "react-super_expert"]
    assert {(r["run"], r["task_id"]) for r in second_labels()["provenance"]} == _sample(answers, "p:", 30)


def test_each_failure_cause_was_labelled_twice_and_settled_by_a_third_where_the_two_differed() -> None:
    for row in failure_labels("all"):
        assert row["first"] in CAUSES and row["second"] in CAUSES, row
        agreed = row["first"] == row["second"]
        assert row["settled"] == ("agreed" if agreed else "adjudicated"), row
        assert not agreed or row["cause"] == row["first"], row


def agreement() -> dict[str, tuple[int, int, float]]:
    """Per kind: items agreed, items compared, Cohen's kappa."""
    first_labels = {(r["run"], r["task_id"]): r["label"] for r in provenance_labels("all")}
    causes = [(r["first"], r["second"]) for r in failure_labels("all")]
    labels = [(first_labels[(r["run"], r["task_id"])], r["label"]) for r in second_labels()["provenance"]]
    return {
        kind: (sum(a == b for a, b in pairs), len(pairs), kappa(pairs))
        for kind, pairs in (("failure", causes), ("provenance", labels))
    }


def _block(doc: str, name: str) -> str:
    text = (DOCS / doc).read_text(encoding="utf-8")
    return text.split(f"<!-- {name} -->\n", 1)[1].split(f"\n<!-- /{name} -->", 1)[0]


def test_the_docs_state_the_two_labellers_agreement_as_computed() -> None:
    figures = agreement()
    agreed, compared, k = figures["failure"]
    span = interval([("", r["first"], r["second"]) for r in failure_labels("all")])
    assert _block("failure-analysis.md", "labeller-agreement") == (
        f"{agreed} of {compared} failure causes ({agreed / compared:.0%}, 95% interval {span}); Cohen's kappa {k:.2f}."
    )
    agreed, compared, _ = figures["provenance"]
    assert _block("verification.md", "labeller-agreement") == (
        f"{agreed} of {compared} provenance verdicts agree ({agreed / compared:.0%})."
    )


def test_the_docs_say_how_the_third_reader_settled_the_differences() -> None:
    settled = [row for row in failure_labels("all") if row["settled"] == "adjudicated"]
    second = sum(row["cause"] == row["second"] for row in settled)
    first = sum(row["cause"] == row["first"] for row in settled)
    expert = [row for row in settled if row["run"] == "react-super_expert"]
    text = " ".join((DOCS / "failure-analysis.md").read_text(encoding="utf-8").split())
    assert "(57 trajectories)" in text and len(settled) == 57
    assert (
        f"kept the second round's class in {second} and the first round's in {first} (in the ReAct-SUPER Expert "
        f"run, the second's in {sum(r['cause'] == r['second'] for r in expert)} of {len(expert)}), and chose "
        f"neither in {len(settled) - first - second}."
    ) in text


EXAMPLE = re.compile(r"(ReAct-SUPER|SWE-agent) (Expert|Masked), `([^`]+)`, step (\d+)(?:: `([^`]+)`)?")


def test_the_class_tables_examples_are_labelled_as_shown() -> None:
    labels = {(row["run"], row["task_id"]): row for row in failure_labels("all")}
    rows = [line for line in _block_lines("failure-analysis.md", "## The classes") if line.startswith("| `")]
    seen = 0
    for line in rows:
        cause = line.split("`")[1]
        for agent, task_set, task, step, quote in EXAMPLE.findall(line):
            label = labels[(f"{agent.lower()}_{task_set.lower()}", task)]
            assert (label["cause"], label["step"]) == (cause, int(step)), line
            assert " ".join(quote.split()) in " ".join(label["quote"].split()), (quote, label["quote"])
            seen += 1
    assert seen >= 7


def _block_lines(doc: str, heading: str) -> list[str]:
    text = (DOCS / doc).read_text(encoding="utf-8")
    return text.split(heading, 1)[1].split("\n## ", 1)[0].splitlines()
