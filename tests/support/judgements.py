"""The rules' verdicts on the labelled published trajectories, and the aggregate figures the docs report.

Only aggregates leave this module for the test half (agreement, per class precision and recall, per agent,
Cohen's kappa, the confusion table): rules are tuned on the dev half alone (tests/support/labelled.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from tests.support.helpers import REFERENCE_TRAJECTORIES
from tests.support.labelled import Split, failure_labels, provenance_labels

from super_bench.analysis import FailureCause, analyze_failure
from super_bench.runner.importer import METRICS_FILE, NOTEBOOK, recorded_metrics
from super_bench.runner.paper_notebooks import notebook_trajectory
from super_bench.scoring import answer_provenance
from super_bench.stats import bootstrap_mean
from super_bench.trajectory import Trajectory

Pair = tuple[str, str, str]  # (agent, label, the rules' verdict)


@cache
def load(run: str, task_id: str) -> Trajectory:
    return notebook_trajectory(REFERENCE_TRAJECTORIES / run / task_id / NOTEBOOK, task_id)


def _agent(run: str) -> str:
    return run.split("_", 1)[0]


def rules_verdict(label: dict[str, Any]) -> tuple[Trajectory, FailureCause | None]:
    """A labelled trajectory and the rules' verdict on it, from the metrics its run recorded."""
    metrics, _ = recorded_metrics(REFERENCE_TRAJECTORIES / label["run"] / label["task_id"] / METRICS_FILE)
    trajectory = load(label["run"], label["task_id"])
    return trajectory, analyze_failure(trajectory, metrics)


@cache
def failure_pairs(split: Split) -> tuple[Pair, ...]:
    found = []
    for label in failure_labels(split):
        _, cause = rules_verdict(label)
        found.append((_agent(label["run"]), label["cause"], cause.cause if cause is not None else "none"))
    return tuple(found)


def against_each_labeller(split: Split) -> str:
    """The rules beside a person: how often the two labellers' first readings agree with each other, and how
    often the rules agree with each (and with the settled label), on one half."""
    labels = failure_labels(split)
    verdicts = [got for _, _, got in failure_pairs(split)]
    n = len(labels)

    def share(k: int) -> str:
        return f"{k} of {n} ({100 * k / n:.0f}%)"

    both = sum(row["first"] == row["second"] for row in labels)
    first = sum(got == row["first"] for got, row in zip(verdicts, labels))
    second = sum(got == row["second"] for got, row in zip(verdicts, labels))
    settled = sum(got == row["cause"] for got, row in zip(verdicts, labels))
    return (
        f"The two labellers agree on {share(both)}; the rules agree with the first on {share(first)}, with the "
        f"second on {share(second)}, with the settled label on {share(settled)}."
    )


@cache
def provenance_pairs(split: Split) -> tuple[Pair, ...]:
    found = []
    for label in provenance_labels(split):
        trace = answer_provenance(load(label["run"], label["task_id"]))
        status = trace.status if trace is not None else None
        found.append((_agent(label["run"]), label["label"], status or "none"))
    return tuple(found)


def kappa(pairs: Sequence[Pair]) -> float:
    """Cohen's kappa of the labels and the verdicts."""
    n = len(pairs)
    observed = sum(label == got for _, label, got in pairs) / n
    labels = Counter(label for _, label, _ in pairs)
    verdicts = Counter(got for _, _, got in pairs)
    expected = sum(labels[c] * verdicts[c] for c in labels) / (n * n)
    return 1.0 if expected == 1 else (observed - expected) / (1 - expected)


def interval(pairs: Sequence[Pair]) -> str:
    """The agreement's 95% interval (``65-80%``), by bootstrap over the trajectories as a run's means have
    theirs: a figure from a hundred-odd labels is read with its uncertainty."""
    estimate = bootstrap_mean([1.0 if label == got else 0.0 for _, label, got in pairs])
    assert estimate.low is not None and estimate.high is not None
    return f"{100 * estimate.low:.0f}-{100 * estimate.high:.0f}%"


def _agreement(pairs: Sequence[Pair]) -> str:
    agree = sum(label == got for _, label, got in pairs)
    return f"{agree} of {len(pairs)} ({100 * agree / len(pairs):.0f}%, 95% interval {interval(pairs)})"


def report(pairs: Sequence[Pair], classes: Sequence[str]) -> str:
    """The markdown the docs show: agreement, per agent, kappa, per class precision and recall, the
    confusion table (a row per labelled class, a column per verdict)."""
    lines = [f"Agreement: {_agreement(pairs)}; Cohen's kappa {kappa(pairs):.2f}."]
    for agent in sorted({a for a, _, _ in pairs}):
        lines.append(f"{agent}: {_agreement([p for p in pairs if p[0] == agent])}.")
    used = [c for c in classes if any(c in (label, got) for _, label, got in pairs)]
    used += sorted({got for _, _, got in pairs} - set(used))
    lines += ["", "| class | labelled | verdicts | precision | recall |", "|---|---|---|---|---|"]
    for c in used:
        labelled = sum(label == c for _, label, _ in pairs)
        given = sum(got == c for _, _, got in pairs)
        hit = sum(label == got == c for _, label, got in pairs)
        precision = f"{hit / given:.2f}" if given else "-"
        recall = f"{hit / labelled:.2f}" if labelled else "-"
        lines.append(f"| {c} | {labelled} | {given} | {precision} | {recall} |")
    counts = Counter((label, got) for _, label, got in pairs)
    lines += ["", "| label \\ rules | " + " | ".join(used) + " |", "|" + "---|" * (len(used) + 1)]
    for label in used:
        if any(lab == label for _, lab, _ in pairs):
            row = [str(counts[(label, got)]) if counts[(label, got)] else "." for got in used]
            lines.append(f"| {label} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def shown_block(doc: Path, name: str) -> str:
    """The text between ``<!-- name -->`` and ``<!-- /name -->`` in a doc."""
    text = doc.read_text(encoding="utf-8")
    return text.split(f"<!-- {name} -->")[1].split(f"<!-- /{name} -->")[0].strip()


def write_block(doc: Path, name: str, body: str) -> None:
    """Put ``body`` between the doc's markers (how the docs' tables are made: ``python -m tests.support.judgements``)."""
    text = doc.read_text(encoding="utf-8")
    head, rest = text.split(f"<!-- {name} -->")
    _, tail = rest.split(f"<!-- /{name} -->")
    doc.write_text(f"{head}<!-- {name} -->\n{body}\n<!-- /{name} -->{tail}", encoding="utf-8")


def main() -> None:
    """Write the figures into the docs: ``python -m tests.support.judgements`` (the tests then hold them equal)."""
    from super_bench.analysis import CAUSES
    from super_bench.scoring import PROVENANCE_STATUSES

    docs = Path(__file__).resolve().parents[2] / "docs"
    for split, name in (("dev", "dev"), ("test", "held-out")):
        write_block(docs / "failure-analysis.md", f"failure-{name}", report(failure_pairs(split), CAUSES))
        write_block(docs / "failure-analysis.md", f"beside-labellers-{name}", against_each_labeller(split))
        write_block(
            docs / "verification.md", f"provenance-{name}", report(provenance_pairs(split), PROVENANCE_STATUSES)
        )


if __name__ == "__main__":
    main()
