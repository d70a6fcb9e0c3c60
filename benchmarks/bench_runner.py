"""How the runner scales: the gold agent on the demo suite with 1 and 2 workers, and the alternatives.

Runs every task of the demo suite (Expert, Masked and Auto) with the local executor at 1 and 2 workers (threads),
each with ``--prestart off`` (no task's environment started ahead) and as by default (the next task's started ahead
while a core is idle, which one worker of the gold agent's computing tasks leaves and two seldom do). The runner's
scaling, which the target bounds, is 2 workers against 1 with neither starting tasks ahead. 2 workers start the
tasks that took longest first, balanced between them (``runner.schedule``), from the times the runner remembers
(the first repeat's first run records them, as a user's earlier run would); for comparison, 2 workers with the
tasks in the order given, 2 worker processes (a process pool calling the same episode function) and, where Ray is
installed, the Ray executor on a local 2-CPU instance. Reports the wall time, the speedup over 1 worker without
tasks started ahead (the ratio; higher is better here), and the CPU time of the harness process itself (its
threads; the kernels are separate processes), which shows whether threads are enough. Each repeat's times and the
machine's load average go to stderr as they come: other work on the machine slows every variant.

The order: each task's time alone (its wall time less any wait for room, from the last 1-worker run, as the runner
records it in ``durations.json``), the order the runner starts them in with 2 workers, and the bound that order
achieves: the end of the last task if each ran as long beside another as alone, each started on the first free
worker, against the sum over 2 (no order does better), longest first, the runner's plan of these very times and the
order given. The 2-worker figure is given per pair too (each repeat's 1-worker run over its 2-worker run): the
median and the spread of the pairs. ``--pairs-only`` runs those two variants alone. Last, what planning the order
costs for 5,000 and 20,000 tasks of random lengths (``--plan-only``: that alone).

    python benchmarks/bench_runner.py [--sets expert masked auto] [--repeats 1] [--no-processes] [--no-ray]
    python benchmarks/bench_runner.py --sets expert --pairs-only --repeats 5
    python benchmarks/bench_runner.py --plan-only
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from common import PrestartCount, Row, table

from super_bench import EnvConfig, RunConfig, SandboxConfig, load_tasks, run
from super_bench.agents import AgentOptions
from super_bench.runner.episode import run_episode
from super_bench.runner.results import TaskResult
from super_bench.runner.rundir import RunDir
from super_bench.runner.schedule import finish, plan
from super_bench.tasks.model import Task

ONE, TWO = "1 worker (thread)", "2 workers (threads)"
ONE_OFF = "1 worker (thread), --prestart off"
TWO_GIVEN = "2 workers (threads), tasks in the order given"
TWO_OFF = "2 workers (threads), --prestart off"
TARGET = 1.6  # 2 workers over 1, the whole suite
# The Expert set alone: its tasks are the longest, so that the runner's own gaps between them matter least.
EXPERT_TARGET = 1.8
Measure = Callable[[Path, str], tuple[float, float, list[TaskResult]]]


def self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def with_runner(tasks: list[Task], root: Path, name: str, **settings: object) -> tuple[float, float, list[TaskResult]]:
    env = EnvConfig(sandbox=SandboxConfig(root=root / "sandboxes"))
    config = RunConfig(env=env, out=root / name, **settings)  # type: ignore[arg-type]
    cpu, start = self_cpu(), time.perf_counter()
    with PrestartCount() as ahead:
        outcome = run(config, tasks=tasks)
    wall = time.perf_counter() - start
    if config.execution.prestart != "off" and config.execution.executor == "local":
        print(f"  prepared ahead: {ahead.prepared}, taken: {ahead.taken}", file=sys.stderr)
    return wall, self_cpu() - cpu, outcome.results


def _episode(args: tuple[Task, Path]) -> TaskResult:
    task, out = args
    env = EnvConfig(sandbox=SandboxConfig(root=out.parent / "sandboxes"))
    return run_episode(task, "gold", AgentOptions(), env, RunDir(out).task_dir(task.task_id), run_dir=out)


def with_processes(tasks: list[Task], root: Path, name: str, workers: int) -> tuple[float, float, list[TaskResult]]:
    out = root / name
    RunDir(out).create()
    start = time.perf_counter()
    with ProcessPoolExecutor(workers) as pool:
        results = list(pool.map(_episode, [(t, out) for t in tasks]))
    return time.perf_counter() - start, float("nan"), results  # the episodes' CPU is in the pool's processes


def variants(tasks: list[Task], processes: bool, with_ray: bool, pairs_only: bool = False) -> dict[str, Measure]:
    if pairs_only:
        return {
            ONE_OFF: lambda root, name: with_runner(tasks, root, name, workers=1, prestart="off"),
            TWO_OFF: lambda root, name: with_runner(tasks, root, name, workers=2, prestart="off"),
        }
    found: dict[str, Measure] = {
        ONE_OFF: lambda root, name: with_runner(tasks, root, name, workers=1, prestart="off"),
        ONE: lambda root, name: with_runner(tasks, root, name, workers=1),
        TWO: lambda root, name: with_runner(tasks, root, name, workers=2),
        TWO_GIVEN: lambda root, name: with_runner(tasks, root, name, workers=2, order="given"),
        TWO_OFF: lambda root, name: with_runner(tasks, root, name, workers=2, prestart="off"),
    }
    if processes:
        found["2 worker processes"] = lambda root, name: with_processes(tasks, root, name, 2)
    if with_ray:
        try:
            import ray
        except ImportError:
            print("ray is not installed: skipping the Ray executor")
        else:

            def on_ray(root: Path, name: str) -> tuple[float, float, list[TaskResult]]:
                ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
                try:
                    return with_runner(tasks, root, name, executor="ray")
                finally:
                    ray.shutdown()

            found["Ray, local 2-CPU instance"] = on_ray
    return found


def order_rows(tasks: list[Task], alone: list[TaskResult], two: list[TaskResult], where: str) -> list[Row]:
    """The tasks' times alone, the order 2 workers started them in, and the bound of that order against
    longest first, the runner's plan of these times and the order given."""
    index = {t.task_id: i for i, t in enumerate(tasks)}
    seconds = [max(0.0, r.wall_time - r.waited) for r in sorted(alone, key=lambda r: index[r.task_id])]
    longest = sorted(range(len(tasks)), key=lambda i: -seconds[i])
    started = [index[r.task_id] for r in sorted(two, key=lambda r: r.started_at.timestamp() if r.started_at else 0.0)]
    print("  the tasks alone, longest first: " + ", ".join(f"{seconds[i]:.2f}" for i in longest), file=sys.stderr)
    names = ", ".join(f"{tasks[i].task_id} ({seconds[i]:.2f} s)" for i in started)
    print(f"  started by 2 workers: {names}", file=sys.stderr)
    total = sum(seconds)
    by_runner = finish(started, seconds, 2)
    return [
        Row(
            "scaling, order",
            f"{where}, 2 workers, the order the runner used",
            f"ends at {by_runner:.2f} s if each ran as long as alone ({total / by_runner:.2f}x); longest first: "
            f"{finish(longest, seconds, 2):.2f} s; planned from these times: "
            f"{finish(plan(seconds, 2), seconds, 2):.2f} s; "
            f"in the order given: {finish(range(len(tasks)), seconds, 2):.2f} s",
            f"{total / 2:.2f} s (the sum over 2: {total:.2f} s / 2)",
            by_runner / (total / 2),
        )
    ]


def measure(
    tasks: list[Task], chosen: dict[str, Measure], repeats: int
) -> tuple[dict[str, tuple[list[float], list[float]]], dict[str, list[TaskResult]]]:
    """Each variant's wall times and harness CPU times, the variants interleaved in each repeat, in the order
    given and then in reverse (so that none always follows the same one); and each variant's last results."""
    times: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in chosen}
    last: dict[str, list[TaskResult]] = {}
    for repeat in range(repeats):
        order = list(enumerate(chosen.items()))
        for i, (name, run_variant) in order if repeat % 2 == 0 else reversed(order):
            with tempfile.TemporaryDirectory(prefix="bench-runner-") as tmp:
                wall, cpu, results = run_variant(Path(tmp), f"run{i}")
            solved = sum(r.status == "completed" for r in results)
            if solved != len(tasks):
                raise RuntimeError(f"{name}: only {solved} of {len(tasks)} tasks completed")
            print(
                f"  [{repeat + 1}] {name}: {wall:.1f} s wall, harness CPU {cpu:.1f} s, "
                f"load average {os.getloadavg()[0]:.1f}",
                file=sys.stderr,
            )
            times[name][0].append(wall)
            times[name][1].append(cpu)
            last[name] = results
    return times, last


def rows(
    sets: list[str], repeats: int = 1, processes: bool = True, with_ray: bool = True, pairs_only: bool = False
) -> list[Row]:
    tasks = [t for task_set in sets for t in load_tasks("demo", task_set)]
    times, last = measure(tasks, variants(tasks, processes, with_ray, pairs_only), repeats)
    median = {name: statistics.median(walls) for name, (walls, _) in times.items()}
    # The runner's scaling is 2 workers against 1 with neither starting tasks ahead: one worker that starts the
    # next task on the idle core is no longer one core's worth of work.
    base = median[ONE_OFF]
    limit = EXPERT_TARGET if sets == ["expert"] else TARGET
    where = f"{len(tasks)} demo tasks, gold agent"
    found = [
        Row("scaling", f"{where}, {ONE_OFF}", f"{base:.1f} s, harness CPU {statistics.median(times[ONE_OFF][1]):.1f} s")
    ]
    for name, (_, cpus) in times.items():
        if name == ONE_OFF:
            continue
        wall = median[name]
        cpu = f", harness CPU {statistics.median(cpus):.1f} s" if name in (ONE, TWO) else ""
        target, met = (f">= {limit:g}x faster", base / wall >= limit) if name == TWO_OFF else ("", None)
        found.append(
            Row(
                "scaling",
                f"{where}, {name}",
                f"{wall:.1f} s{cpu}",
                f"{base:.1f} s ({ONE_OFF})",
                base / wall,
                target,
                met,
            )
        )
    pairs = sorted(one / two for one, two in zip(times[ONE_OFF][0], times[TWO_OFF][0]))
    found.append(
        Row(
            "scaling",
            f"{where}, 2 workers over 1 per pair, --prestart off",
            f"median {statistics.median(pairs):.2f}x over {len(pairs)} pairs, from {pairs[0]:.2f}x to {pairs[-1]:.2f}x",
            ", ".join(f"{p:.2f}" for p in pairs),
            statistics.median(pairs),
            f">= {limit:g}x",
            statistics.median(pairs) >= limit,
        )
    )
    if TWO in median:
        found.append(
            Row(
                "scaling",
                f"{where}, 2 workers against 1, both as by default",
                f"{median[TWO]:.1f} s",
                f"{median[ONE]:.1f} s",
                median[ONE] / median[TWO],
            )
        )
    return found + order_rows(tasks, last[ONE_OFF], last[TWO_OFF], where)


def plan_rows() -> list[Row]:
    """What planning the order costs: ``schedule.plan`` on random task times (exponential, fixed seed), against
    sorting them longest first."""
    import random

    found = []
    for tasks, workers in ((5_000, 16), (20_000, 64)):
        draw = random.Random(tasks)
        seconds = [draw.expovariate(1.0) for _ in range(tasks)]
        start = time.perf_counter()
        order = plan(seconds, workers)
        took = time.perf_counter() - start
        longest = sorted(range(tasks), key=lambda i: -seconds[i])
        gain = finish(longest, seconds, workers) / finish(order, seconds, workers)
        where = f"{tasks:,} tasks, {workers} workers, random times"
        found.append(Row("scaling, plan", where, f"{took:.3f} s to plan", "longest first's end over the plan's", gain))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", nargs="+", default=["expert", "masked", "auto"])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--no-processes", action="store_true")
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--pairs-only", action="store_true", help="Run 1 and 2 workers, --prestart off, alone.")
    parser.add_argument("--plan-only", action="store_true", help="Time the planning of the order alone.")
    args = parser.parse_args()
    if args.plan_only:
        print(table(plan_rows()))
        return
    found = rows(args.sets, args.repeats, not args.no_processes, not args.no_ray, args.pairs_only)
    print(table(found + plan_rows()))


if __name__ == "__main__":
    main()
