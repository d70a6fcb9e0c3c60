"""Run every benchmark and print one table: each measurement beside its reference, and its target.

    python benchmarks/run_all.py                 # everything, about 20 minutes on 2 cores
    python benchmarks/run_all.py --quick         # fewer repeats and smaller inputs, about 2 minutes
    python benchmarks/run_all.py --only steps cold-start

Run it on an otherwise idle machine: the step, cold-start and scaling figures are ratios of two
timings taken in the same run, which other work on the machine skews. Progress goes to stderr, the
table (Markdown) to stdout. The exit status is 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

import bench_analyze
import bench_cold_start
import bench_docker
import bench_mcp
import bench_output
import bench_runner
import bench_scale
import bench_scoring
import bench_steps
import bench_viewer
from common import Row, machine, table


def benchmarks(quick: bool) -> dict[str, Callable[[], list[Row]]]:
    repeats = 1 if quick else 3
    return {
        "steps": lambda: bench_steps.rows(["local", "bwrap", "docker"], [10, 100, 400], repeats),
        "cold-start": lambda: bench_cold_start.rows(["local", "bwrap", "docker"], 3 if quick else 5),
        "output": lambda: bench_output.rows([1, 10, 100], "local", repeats) + bench_output.shape_rows(100, "local"),
        "scaling": lambda: bench_runner.rows(
            ["expert"] if quick else ["expert", "masked", "auto"], 1, processes=False, with_ray=not quick
        ),
        "docker": lambda: bench_docker.rows("masked", 1 if quick else 3),
        "scoring": lambda: (
            bench_scoring.rows(1000 if quick else 2000, 20 if quick else 40, repeats)
            + bench_scoring.baseline_rows(1000 if quick else 2000, 20 if quick else 40, bench_scoring.BASELINE)
            + bench_scoring.cleaning_rows(1.0 if quick else 2.0, repeats)
            + bench_scoring.paper_rows(bench_scoring.PAPER)
        ),
        "mcp": lambda: bench_mcp.rows("local", 50 if quick else 200),
        "viewer": lambda: bench_viewer.rows(200 if quick else 800, 25 if quick else 100),
        "analyze": lambda: bench_analyze.rows(1000 if quick else 4000, repeats),
        # At the reduced size of docs/performance.md (bench_scale.py's own defaults are the full size).
        "scale": lambda: bench_scale.rows(
            4, 5 if quick else 25, 10, 4 if quick else 16, 2.0, (1, 4) if quick else (1, 4, 16)
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="Fewer repeats and smaller inputs.")
    parser.add_argument("--only", nargs="+", choices=list(benchmarks(False)), help="Run only these benchmarks.")
    args = parser.parse_args()
    chosen = {name: bench for name, bench in benchmarks(args.quick).items() if not args.only or name in args.only}
    facts = machine()
    rows: list[Row] = []
    for name, bench in chosen.items():
        print(f"{name} ...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        try:
            rows += bench()
        except Exception as e:  # one broken benchmark must not hide the others' numbers
            rows.append(Row(name, "failed", f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"))
            print(f"{name} failed:\n{e}", file=sys.stderr)
        print(f"{name}: {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    print("\n".join(f"- {fact}" for fact in facts))
    print()
    print(table(rows))
    missed = [r for r in rows if r.met is False or r.case == "failed"]
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
