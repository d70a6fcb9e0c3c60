"""The benchmarks still run, on small inputs. Their timings are not judged here (that is what
``benchmarks/run_all.py`` is for); what they check along the way is."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

import pytest
from tests.support.sandboxes import backend_settings

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def benchmarks(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import run_all

    return run_all


def test_the_analyze_benchmark_reads_a_long_trajectory_and_finds_its_cause(benchmarks: ModuleType) -> None:
    (row,) = benchmarks.bench_analyze.rows(200, repeats=1)
    assert row.benchmark == "analyze" and "200 steps" in row.case and row.met is not None


@pytest.mark.slow
def test_the_end_of_megabytes_of_progress_bars_is_graded(benchmarks: ModuleType) -> None:
    rows = benchmarks.bench_output.rows([0.5, 2], "local", repeats=1)
    runs = [r for r in rows if r.benchmark == "huge output"]
    assert len(runs) == 2 and all("landmark found" in r.ours for r in runs)
    assert runs[-1].met is not None and runs[-1].ratio is not None
    (memory,) = [r for r in rows if r.benchmark == "huge output, memory"]
    assert memory.case == runs[-1].case and memory.ratio is not None and memory.met is not None
    # The benchmark raises if clean_output and the naive cleaner disagree on the text.
    assert [r.case for r in rows if r.benchmark == "cleaning"] == ["0.5 MB", "2 MB"]


@pytest.mark.slow
def test_rescoring_a_synthetic_run_keeps_every_task(benchmarks: ModuleType) -> None:
    rows = benchmarks.bench_scoring.rows(60, 1, repeats=1)
    assert [r.case for r in rows] == [
        "60 trajectories, 1 MB, in process",
        "60 trajectories, 1 MB, super-bench score --in-place",
        "60 trajectories, 1 MB, answer provenance traced against not",
        "60 trajectories, 1 MB, answers never printed (every output searched through for them)",
        "60 trajectories, 1 MB, --mode reference (every output cleaned)",
    ]
    # The benchmark raises if a printed answer is not found, an unprinted one is, or the switch leaves any traced.
    traced = rows[2]
    assert traced.ratio is not None and traced.ratio > 0
    table = benchmarks.table(rows)
    assert table.count("\n") == len(rows) + 1 and "trajectories/s" in table


def test_rescoring_is_compared_with_an_earlier_release_in_processes_of_their_own(benchmarks: ModuleType) -> None:
    import super_bench

    (row,) = benchmarks.bench_scoring.baseline_rows(20, 0.2, None)
    assert "not measured: give --baseline" in row.ours and row.met is None
    # This release given as the earlier one: both workers re-score every trajectory, and the row is a comparison.
    source = Path(super_bench.__file__).parent.parent
    (row,) = benchmarks.bench_scoring.baseline_rows(20, 0.2, source, rounds=2)
    assert row.ratio is not None and row.ratio > 0 and row.met is not None
    assert "trajectories/s (the earlier release)" in row.reference


def test_the_reference_cleaning_benchmark_checks_linear_time(benchmarks: ModuleType) -> None:
    rows = benchmarks.bench_scoring.cleaning_rows(0.05, repeats=1)
    assert len(rows) == 4 and all("MB/s" in r.ours and r.met is not None for r in rows)


def test_the_raw_kernel_in_bwrap_runs_a_python_that_lives_under_tmp(benchmarks: ModuleType) -> None:
    # The cold-start reference's container has a private /tmp: a virtual environment made under the
    # host's /tmp must still be seen inside it.
    backend_settings("bwrap")
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        python = venv / "bin" / "python"
        purelib = subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        # The new environment sees this one's packages (ipykernel, jupyter_client) through a .pth file.
        (Path(purelib) / "parent.pth").write_text("\n".join(p for p in sys.path if p.endswith("-packages")) + "\n")
        script = (
            "import subprocess, sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
            "import bench_cold_start as b; root = Path(sys.argv[2]); env = b.bwrap_kernel_spec(root); "
            "command = [sys.executable, '-c', b.RAW, 'bwrap-raw', str(root / 'ipc' / 'kernel')]; "
            "r = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120); "
            "print(r.stdout, r.stderr[-2000:])"
        )
        root = Path(tmp) / "root"
        root.mkdir()
        result = subprocess.run(
            [python, "-c", script, str(BENCHMARKS), str(root)], capture_output=True, text=True, timeout=180
        )
    assert result.stdout.split()[:1] == ["42"], result.stdout + result.stderr


@pytest.mark.slow
def test_the_scale_benchmark_downloads_once_with_the_cache_and_every_time_without(benchmarks: ModuleType) -> None:
    import bench_scale

    rows = bench_scale.rows(wheels=1, wheel_mb=1.2, mb_per_s=50, tasks=2, delay=0.2, workers=(1, 2))
    ours = {r.case.split(" [")[0]: r.ours for r in rows}
    assert ours["cache on, task 1"].endswith("downloaded 1 MB")
    assert ours["cache on, task 2"].endswith("downloaded 0 MB")
    assert ours["cache off, task 1"].endswith("downloaded 1 MB") and ours["cache off, task 2"].endswith("1 MB")
    assert ours["2 tasks, 2 worker(s), install, cache on"].endswith("downloaded 1 MB")  # one download, shared
    assert ours["2 tasks, 2 worker(s), install, cache off"].endswith("downloaded 2 MB")
    assert ours["2 tasks, 2 worker(s), model only"].endswith("downloaded 0 MB")
    assert [r.case for r in rows if r.target] == [
        "cache on: task 2 against task 1",
        "cache on: task 2's disk against task 1's",
    ]


def test_a_commands_cpu_counts_every_process_it_started(benchmarks: ModuleType) -> None:
    import common

    if not common.cpu_counting():
        pytest.skip("no cgroup can be made here (the CPU figures need root)")
    # The command's child spins 0.4 s of CPU after the command itself has ended: its time counts.
    spin = "import time; end = time.process_time() + 0.4\nwhile time.process_time() < end: pass"
    command = [sys.executable, "-c", f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', {spin!r}])"]
    _, cpu, _ = common.timed_cpu(command)
    assert cpu >= 0.4
    with common.busy_loops(1):
        _, cpu, stdout = common.timed_cpu([sys.executable, "-c", "print('counted apart')"])
    assert stdout == "counted apart\n" and cpu < 0.4  # the busy loop's time is not the command's


@pytest.mark.slow
def test_the_shell_step_benchmark_times_both_cells_in_one_environment(benchmarks: ModuleType) -> None:
    row = benchmarks.bench_steps.shell_step("local", pairs=3)
    assert (row.benchmark, row.case, row.target) == ("shell step", "local", "<= +30 ms")
    assert "`!true`" in row.ours and row.met is not None


def test_the_one_cell_runs_cpu_is_compared_with_an_earlier_release_round_by_round(benchmarks: ModuleType) -> None:
    import common

    import super_bench

    if not common.cpu_counting():
        pytest.skip("no cgroup can be made here (the CPU figures need root)")
    import bench_cold_start

    # This release given as the earlier one: each round runs both and the raw kernel, and the row compares them.
    source = Path(super_bench.__file__).parent.parent
    (row,) = bench_cold_start.measure_against("local", 1, source)
    assert row.benchmark == "cold start, CPU, against an earlier release" and row.case == "local"
    assert row.ratio is not None and row.ratio > 0 and row.met is not None
    assert "x the raw kernel" in row.ours and "(earlier)" in row.reference


def test_the_mcp_benchmark_times_tool_calls_beside_the_same_steps_in_process(benchmarks: ModuleType) -> None:
    (row,) = benchmarks.bench_mcp.rows("local", calls=5)
    assert row.benchmark == "mcp" and row.ratio is not None and row.met is not None
    assert "adds" in row.target and "median of 5" in row.case


@pytest.mark.slow
def test_the_chaos_benchmark_kills_resumes_and_counts_what_is_left(benchmarks: ModuleType) -> None:
    import bench_chaos

    # A resume takes seconds; one that hangs is stopped with its threads' stacks, well inside the test's timeout.
    ended = bench_chaos.rows(kills=1, epochs=1, seed=0, sandbox="local", after=(4, 6), resume_timeout=150)
    rows = {r.case: r for r in ended}
    assert rows["1 SIGKILLs + resumes: exit status of the last resume"].ours == "0"
    assert rows["rows (clean run)"].ours == "9 (9)" and rows["rows equal to the clean run's"].ours == "9"
    for case in ("super-bench-* temporary folders left", "task memory cgroups left", "processes left"):
        assert rows[case].ours == "0", case


@pytest.mark.slow
def test_the_soak_benchmark_samples_the_harness_and_stops_it(benchmarks: ModuleType) -> None:
    import bench_soak

    rows = {r.case: r for r in bench_soak.rows(workers=2, minutes=0.3, warm_up=0.1, every=2, sandbox="local")}
    assert int(rows["2 workers, 0.3 min: rows finished"].ours) >= 0  # how many: the machine's pace, not judged
    rise = rows["harness RSS rise once warm (largest)"]
    assert rise.ours.endswith(" MB") and rise.met is not None


@pytest.mark.slow
def test_the_full_disk_benchmark_fills_the_run_directorys_disk_and_resumes(benchmarks: ModuleType) -> None:
    import bench_full_disk

    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root")
    # Filled after the first of 6 rows: the run cannot have ended by then.
    rows = {r.case.split(":")[0]: r for r in bench_full_disk.rows(3, 1, "4m", "local", ("tinyreg", "tinyreg-lr"))}
    missed = [f"{r.case}: {r.ours}" for r in rows.values() if r.met is False]
    assert not missed, missed  # exit status 74, one error line, every row whole, the resume equal to a clean run
    assert [r.ours for case, r in rows.items() if case.startswith("filled after")] == ["74"]
    assert rows["resume"].ours == "0, 6 (6)" and rows["rows equal to the clean run's"].ours == "6"
    assert rows["the error"].ours.startswith("error: cannot write the run directory ")
