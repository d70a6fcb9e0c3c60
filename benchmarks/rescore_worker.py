"""One side of ``bench_scoring.py --baseline``: re-scores one run each time a line arrives on its input and
answers with the CPU seconds that took. Run with an earlier release's source tree first on PYTHONPATH, it
times that release; without, this one.

    python benchmarks/rescore_worker.py RUN_DIR

Its first line says which super-bench it imported and how many rows the first re-scoring scored (every
trajectory, or that release could not read them all)."""

from __future__ import annotations

import sys
import time
from pathlib import Path


def main() -> None:
    import super_bench
    from super_bench.runner.rescore import rescore

    run = Path(sys.argv[1])
    # Once before any timing: the imports, the files read into the page cache, the rows written.
    outcome = rescore(run)
    # Scored: its landmarks graded (every task of the benchmark's run has some), and not marked unscored (a
    # mark releases before 0.2 did not make).
    scored = sum(1 for r in outcome.results if r.metrics.landmarks is not None and getattr(r, "unscored", None) is None)
    print(f"{Path(super_bench.__file__).parent} {scored}", flush=True)
    for _ in sys.stdin:
        start = time.process_time()
        rescore(run)
        print(time.process_time() - start, flush=True)


if __name__ == "__main__":
    main()
