"""How far the optional judge moves the rules on the labelled published trajectories:

    python -m tests.support.measure_judge --judge openai/gpt-4o [--split test] [--workers 4]

For each labelled failure of the half asked for, the rules' verdict and the judge's (``judge_failure``, given
the rules' verdict) are set against the settled label: the same tables as docs/failure-analysis.md, for the
rules alone and with the judge, and what the judge did (confirmed, changed to right, changed to wrong, no usable
verdict). One request per trajectory (131 on the test half); the model's reply cache serves a repeat, so an
interrupted measurement resumes where it stopped. On the test half only aggregates are printed: the prompt is
tuned on the dev half (``--misses`` lists the dev half's disagreements one by one, and refuses the test half).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from rich.progress import Progress
from tests.support.judgements import Pair, report, rules_verdict
from tests.support.labelled import Split, failure_labels

from super_bench.analysis import CAUSES, judge_failure
from super_bench.errors import SuperBenchError
from super_bench.models import ChatModel, ModelOptions, create_model


@dataclass(frozen=True)
class Judged:
    """One labelled trajectory: its label, the rules' verdict and the judge's."""

    run: str
    task_id: str
    label: str
    rules: str
    judge: str
    by: str  # ``judge:<model>`` where the judge gave a verdict, ``rules`` where it gave none usable
    reason: str

    @property
    def agent(self) -> str:
        return self.run.split("_", 1)[0]


def judge_one(label: dict[str, Any], model: ChatModel) -> Judged:
    trajectory, cause = rules_verdict(label)
    if cause is None:  # every metric met: nothing for the judge to weigh
        return Judged(label["run"], label["task_id"], label["cause"], "none", "none", "rules", "")
    judged = judge_failure(trajectory, cause, model)
    return Judged(label["run"], label["task_id"], label["cause"], cause.cause, judged.cause, judged.by, judged.reason)


def measure(
    split: Split, model: ChatModel, workers: int = 1, progress: Callable[[], None] | None = None
) -> list[Judged]:
    """Every labelled trajectory of the half judged, in the labels' order (the requests ``workers`` at once)."""
    labels = failure_labels(split)

    def one(label: dict[str, Any]) -> Judged:
        judged = judge_one(label, model)
        if progress is not None:
            progress()
        return judged

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, labels))


def summary(judged: Sequence[Judged]) -> str:
    """The tables for the rules alone and with the judge, and what the judge did."""
    rules: list[Pair] = [(j.agent, j.label, j.rules) for j in judged]
    with_judge: list[Pair] = [(j.agent, j.label, j.judge) for j in judged]
    did = Counter(_what_it_did(j) for j in judged)
    kinds = ("confirmed", "changed to right", "changed to wrong", "changed, both wrong", "no usable verdict")
    return "\n".join(
        [
            "## The rules alone",
            "",
            report(rules, CAUSES),
            "",
            "## With the judge",
            "",
            report(with_judge, CAUSES),
            "",
            "The judge: " + "; ".join(f"{kind} {did[kind]}" for kind in kinds) + ".",
        ]
    )


def _what_it_did(j: Judged) -> str:
    if not j.by.startswith("judge:"):
        return "no usable verdict"
    if j.judge == j.rules:
        return "confirmed"
    if j.judge == j.label:
        return "changed to right"
    return "changed to wrong" if j.rules == j.label else "changed, both wrong"


def misses(judged: Sequence[Judged]) -> str:
    """The dev half's disagreements with the label, one line each (never the test half's)."""
    return "\n".join(
        f"{j.run} {j.task_id}: label {j.label}, rules {j.rules}, judge {j.judge} ({j.by}): {j.reason}"
        for j in judged
        if j.judge != j.label
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.measure_judge", description=__doc__.split("\n")[0])
    parser.add_argument("--judge", required=True, help="the model, PROVIDER/NAME (openai/gpt-4o, a local server's)")
    parser.add_argument("--split", choices=("dev", "test"), default="test", help="the half to measure (test)")
    parser.add_argument("--workers", type=int, default=1, help="requests at once (1)")
    parser.add_argument("--base-url", help="an OpenAI-compatible server's endpoint")
    parser.add_argument("--misses", action="store_true", help="list each disagreement (the dev half only)")
    args = parser.parse_args(argv)
    if args.misses and args.split != "dev":
        parser.error("--misses lists trajectories one by one: the dev half only (the test half is counted, not read)")
    if args.workers < 1:
        parser.error("--workers must be 1 or more")
    try:
        model = create_model(args.judge, ModelOptions(base_url=args.base_url))
    except SuperBenchError as e:
        parser.error(str(e))
    with Progress(transient=True) as bar:
        task = bar.add_task(f"judging the {args.split} half", total=len(failure_labels(args.split)))
        judged = measure(args.split, model, args.workers, lambda: bar.advance(task))
    print(summary(judged))
    if args.misses:
        print("\n" + misses(judged))
    return 0


if __name__ == "__main__":
    sys.exit(main())
