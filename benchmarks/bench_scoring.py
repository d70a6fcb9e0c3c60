"""Re-scoring throughput: ``super-bench score`` on a large synthetic run, in trajectories per second.

The run (made by ``bench_viewer.make_run``): N tasks, each a trajectory of 10 to 100 steps whose
outputs are training logs, one of them with a landmark line, and a submission to grade. Ours:
``rescore`` of the whole run (read every trajectory, grade answer and landmarks, rewrite
results.jsonl and summary.json), in this process, and ``super-bench score`` from the command
line. The reference: reading and parsing every ``trajectory.json`` with ``json.loads``, the least
any re-scorer must do.

    python benchmarks/bench_scoring.py [--tasks 2000] [--megabytes 40]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from bench_viewer import make_run
from common import Row, median, seconds, super_bench, table, timed

TARGET = 1000  # trajectories per second


def parse_all(run: Path) -> int:
    count = 0
    for path in (run / "tasks").glob("*/trajectory.json"):
        json.loads(path.read_bytes())
        count += 1
    return count


def rows(n_tasks: int, megabytes: float, repeats: int = 3) -> list[Row]:
    from super_bench.runner.rescore import rescore

    with tempfile.TemporaryDirectory(prefix="bench-scoring-") as tmp:
        run = make_run(Path(tmp) / "run", n_tasks, megabytes)
        parse_all(run)  # once, so that every variant reads from the page cache
        ours, reference, cli = [], [], []
        for _ in range(repeats):
            start = time.perf_counter()
            outcome = rescore(run)
            ours.append(time.perf_counter() - start)
            if len(outcome.results) != n_tasks or any(r.metrics.landmarks != 0.5 for r in outcome.results):
                raise RuntimeError("re-scoring lost tasks or graded the landmarks wrongly")
            start = time.perf_counter()
            parse_all(run)
            reference.append(time.perf_counter() - start)
            cli.append(timed([*super_bench(), "score", str(run)])[0])
    mine, raw, command = median(ours), median(reference), median(cli)
    speed, raw_speed, cli_speed = n_tasks / mine, n_tasks / raw, n_tasks / command
    where = f"{n_tasks} trajectories, {megabytes:g} MB"
    return [
        Row(
            "re-scoring",
            f"{where}, in process",
            f"{speed:.0f} trajectories/s ({seconds(mine)})",
            f"{raw_speed:.0f} trajectories/s (json.loads of each file)",
            mine / raw,
            f">= {TARGET} trajectories/s",
            speed >= TARGET,
        ),
        Row(
            "re-scoring",
            f"{where}, super-bench score",
            f"{cli_speed:.0f} trajectories/s ({seconds(command)}, with the command's start-up)",
            "",
            None,
            f">= {TARGET} trajectories/s",
            cli_speed >= TARGET,
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--megabytes", type=float, default=40.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(table(rows(args.tasks, args.megabytes, args.repeats)))


if __name__ == "__main__":
    main()
