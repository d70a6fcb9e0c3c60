"""The cost of one step: a trivial cell through the whole harness against a raw round trip.

Ours: ``super-bench run --agent replay:FILE`` with 10, 100 and 400 steps of ``x = 1`` (a fresh
process each time: sandbox, kernel, environment, output cleaning, steps.jsonl, budget checks, the
runner, the trajectory and its score); the marginal cost of a step is the slope of the run's wall
time over its number of steps. The reference: ``execute_interactive`` of the same cell, through a
bare ``jupyter_client`` client, on a kernel that the same sandbox backend launched.

Flat in the number of steps: inside the longest run, the time from one step's start to the next,
fitted by least squares against the step's index (so that no single slow spell of the machine
decides), is the same at the run's end as at its beginning: the median over the repeats of the
fitted end over the fitted beginning. The slopes between the run lengths are shown beside it.

A shell step: in one environment, ``!true`` and ``x = 1`` in turn, each step timed from its start to its end;
the median ``!true`` step may cost at most 30 ms more than the median ``x = 1`` step (``--shell-only`` for
this measure alone).

    python benchmarks/bench_steps.py [--backends local bwrap docker] [--steps 10 100 400] [--repeats 3]
"""

from __future__ import annotations

import argparse
import itertools
import json
import secrets
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from common import Row, available_backends, median, ratio_row, super_bench, table, timed

CELL = "x = 1"
TARGETS = {"local": 1.3, "bwrap": 1.5, "docker": 1.5}
# The end of the longest run may take at most this much longer per step than its beginning.
FLAT = 1.1
# Seconds a `!true` step may cost beyond an `x = 1` step.
SHELL_EXTRA = 0.030


def raw_round_trip(backend: str, root: Path, n: int = 400) -> float:
    """Mean seconds of ``execute_interactive(CELL)`` on a kernel the backend launched."""
    from jupyter_client.blocking.client import BlockingKernelClient

    from super_bench.sandbox import SandboxConfig, create_sandbox

    sandbox = create_sandbox(SandboxConfig(backend=backend, root=root), "raw")
    sandbox.start()
    try:
        launch = sandbox.launch_kernel([], 60)
        client = BlockingKernelClient()
        client.load_connection_info(launch.connection)  # type: ignore[arg-type]
        client.start_channels()
        try:
            client.wait_for_ready(timeout=60)
            for _ in range(20):
                client.execute_interactive(CELL, output_hook=lambda msg: None)
            start = time.perf_counter()
            for _ in range(n):
                client.execute_interactive(CELL, output_hook=lambda msg: None)
            return (time.perf_counter() - start) / n
        finally:
            client.stop_channels()
    finally:
        sandbox.stop()


def harness_run(backend: str, steps: int, root: Path) -> tuple[float, list[float]]:
    """The wall time of ``super-bench run`` with ``steps`` trivial cells, and the seconds from each
    step's start to the next one's."""
    from super_bench.trajectory import Trajectory

    actions = root / f"actions-{steps}.json"
    actions.write_text(json.dumps([{"type": "execute", "content": CELL}] * steps))
    out = root / f"run-{backend}-{steps}-{secrets.token_hex(3)}"
    command = [*super_bench(), "run", "--query", "Run a trivial cell, many times.", "--agent", f"replay:{actions}"]
    command += ["--sandbox", backend, "--max-steps", str(steps), "--out", str(out)]
    wall, _ = timed(command)
    trajectory = Trajectory.load(out / "tasks" / "query")
    if len(trajectory.steps) != steps or any(s.outcome != "ok" for s in trajectory.steps):
        raise RuntimeError(f"{out}: expected {steps} good steps")
    starts = [s.start_time for s in trajectory.steps]
    return wall, [(b - a).total_seconds() for a, b in itertools.pairwise(starts)]


def fitted_ends(intervals: Sequence[float]) -> tuple[float, float]:
    """The least-squares line through the intervals, at the first step and at the last."""
    fit = statistics.linear_regression([float(i) for i in range(len(intervals))], list(intervals))
    return fit.intercept, fit.intercept + fit.slope * (len(intervals) - 1)


def slope(points: Sequence[tuple[int, float]]) -> float:
    """Least-squares seconds per step."""
    return statistics.linear_regression([float(n) for n, _ in points], [t for _, t in points]).slope


def measure(backend: str, counts: Sequence[int], repeats: int) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="bench-steps-") as tmp:
        root = Path(tmp)
        raw = median([raw_round_trip(backend, root) for _ in range(repeats)])
        walls: dict[int, list[float]] = {n: [] for n in counts}
        growth: list[tuple[float, float]] = []
        for _ in range(repeats):
            for n in counts:  # interleaved, so that a slow spell of the machine hits every count alike
                wall, intervals = harness_run(backend, n, root)
                walls[n].append(wall)
                if n == max(counts):
                    growth.append(fitted_ends(intervals[1:]))  # the first step also warms the kernel up
    points = [(n, w) for n, ws in walls.items() for w in ws]
    per_step = slope(points)
    medians = {n: median(ws) for n, ws in walls.items()}
    ordered = sorted(counts)
    segments = [f"{a}-{b}: {(medians[b] - medians[a]) / (b - a) * 1000:.1f}" for a, b in itertools.pairwise(ordered)]
    first, last = sorted(growth, key=lambda ends: ends[1] / ends[0])[len(growth) // 2]  # the median repeat
    runs = ", ".join(f"{n}: {medians[n]:.2f} s" for n in ordered)
    return [
        ratio_row(
            "step cost",
            backend,
            per_step,
            raw,
            TARGETS[backend],
            ours_text=f"{per_step * 1000:.2f} ms per step (slope; whole runs {runs})",
            reference_text=f"{raw * 1000:.2f} ms (raw execute_interactive)",
        ),
        Row(
            "step cost, flat",
            backend,
            f"ms per step between step counts {'; '.join(segments)}; "
            f"step to step in the {max(counts)}-step run, fitted: {first * 1000:.2f} at its start, "
            f"{last * 1000:.2f} at its end",
            "its own start",
            last / first,
            f"<= {FLAT:g}x",
            last / first <= FLAT,
        ),
    ]


def shell_step(backend: str, pairs: int = 40) -> Row:
    """The median ``!true`` step over the median ``x = 1`` step, taken in turn in one environment."""
    from super_bench import Action, EnvConfig, Environment, SandboxConfig, Task

    with tempfile.TemporaryDirectory(prefix="bench-shell-") as tmp:
        env = Environment(EnvConfig(sandbox=SandboxConfig(backend=backend, root=Path(tmp)), max_steps=None))
        try:
            env.reset(Task(task_id="shell", query="Run trivial cells."))
            times: dict[str, list[float]] = {CELL: [], "!true": []}
            for i in range(pairs + 3):
                for cell in (CELL, "!true"):
                    step = env.step(Action.execute(cell))
                    if step.outcome != "ok":
                        raise RuntimeError(f"{cell}: {step.outcome}: {step.observation}")
                    if i >= 3:  # the first steps also warm the kernel up
                        times[cell].append((step.end_time - step.start_time).total_seconds())
        finally:
            env.close()
    shell, trivial = median(times["!true"]), median(times[CELL])
    return Row(
        "shell step",
        backend,
        f"`!true`: {shell * 1000:.1f} ms per step, {(shell - trivial) * 1000:.1f} ms more than `{CELL}` "
        f"(medians of {pairs}, in turn)",
        f"`{CELL}`: {trivial * 1000:.1f} ms per step",
        shell / trivial,
        f"<= +{SHELL_EXTRA * 1000:.0f} ms",
        shell - trivial <= SHELL_EXTRA,
    )


def rows(backends: Sequence[str], counts: Sequence[int], repeats: int, shell_only: bool = False) -> list[Row]:
    found: list[Row] = []
    for backend, problem in available_backends(backends).items():
        if problem is not None:
            found.append(Row("step cost", backend, f"not measured: {problem}"))
            continue
        if not shell_only:
            found += measure(backend, counts, repeats)
        found.append(shell_step(backend))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backends", nargs="+", default=["local", "bwrap", "docker"])
    parser.add_argument("--steps", nargs="+", type=int, default=[10, 100, 400])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--shell-only", action="store_true", help="Only the shell step's cost.")
    args = parser.parse_args()
    print(table(rows(args.backends, args.steps, args.repeats, args.shell_only)))


if __name__ == "__main__":
    main()
