"""The benchmarks still run, on small inputs. Their timings are not judged here (that is what
``benchmarks/run_all.py`` is for); what they check along the way is."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture
def benchmarks(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import run_all

    return run_all


def test_the_end_of_megabytes_of_progress_bars_is_graded(benchmarks: ModuleType) -> None:
    rows = benchmarks.bench_output.rows([0.5, 2], "local", repeats=1)
    runs = [r for r in rows if r.benchmark == "huge output"]
    assert len(runs) == 2 and all("landmark found" in r.ours for r in runs)
    assert runs[-1].met is not None and runs[-1].ratio is not None
    # The benchmark raises if clean_output and the naive cleaner disagree on the text.
    assert [r.case for r in rows if r.benchmark == "cleaning"] == ["0.5 MB", "2 MB"]


def test_rescoring_a_synthetic_run_keeps_every_task(benchmarks: ModuleType) -> None:
    rows = benchmarks.bench_scoring.rows(60, 1, repeats=1)
    assert [r.case for r in rows] == [
        "60 trajectories, 1 MB, in process",
        "60 trajectories, 1 MB, super-bench score --in-place",
        "60 trajectories, 1 MB, --mode reference (every output cleaned)",
    ]
    table = benchmarks.table(rows)
    assert table.count("\n") == len(rows) + 1 and "trajectories/s" in table


def test_the_reference_cleaning_benchmark_checks_linear_time(benchmarks: ModuleType) -> None:
    rows = benchmarks.bench_scoring.cleaning_rows(0.05, repeats=1)
    assert len(rows) == 4 and all("MB/s" in r.ours and r.met is not None for r in rows)
