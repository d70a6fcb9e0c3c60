"""How the runner scales: the gold agent on the demo suite with 1 and 2 workers, and the alternatives.

Runs every task of the demo suite (Expert, Masked and Auto) with the local executor at 1 and 2 workers
(threads), then, for comparison, 2 worker processes (a process pool calling the same episode function)
and, where Ray is installed, the Ray executor on a local 2-CPU instance. Reports the wall time, the
speedup over 1 worker, and the CPU time of the harness process itself (its threads; the kernels are
separate processes), which shows whether threads are enough. The machine's load average is printed
too: other work on it slows every variant.

    python benchmarks/bench_runner.py [--sets expert masked auto] [--repeats 1] [--no-processes] [--no-ray]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from super_bench import EnvConfig, RunConfig, SandboxConfig, load_tasks, run
from super_bench.agents import AgentOptions
from super_bench.runner.episode import run_episode
from super_bench.runner.results import TaskResult
from super_bench.runner.rundir import RunDir
from super_bench.tasks.model import Task


def self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def with_runner(tasks: list[Task], root: Path, name: str, **settings: object) -> tuple[float, float, list[TaskResult]]:
    env = EnvConfig(sandbox=SandboxConfig(root=root / "sandboxes"))
    config = RunConfig(env=env, out=root / name, **settings)  # type: ignore[arg-type]
    cpu, start = self_cpu(), time.perf_counter()
    outcome = run(config, tasks=tasks)
    return time.perf_counter() - start, self_cpu() - cpu, outcome.results


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", nargs="+", default=["expert", "masked", "auto"])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--no-processes", action="store_true")
    parser.add_argument("--no-ray", action="store_true")
    args = parser.parse_args()
    tasks = [t for task_set in args.sets for t in load_tasks("demo", task_set)]
    variants: dict[str, object] = {
        "1 worker (thread)": lambda root, name: with_runner(tasks, root, name, workers=1),
        "2 workers (threads)": lambda root, name: with_runner(tasks, root, name, workers=2),
    }
    if not args.no_processes:
        variants["2 worker processes"] = lambda root, name: with_processes(tasks, root, name, 2)
    if not args.no_ray:
        try:
            import ray
        except ImportError:
            print("ray is not installed: skipping the Ray executor")
        else:

            def on_ray(root: Path, name: str) -> tuple[float, float, list[TaskResult]]:
                ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
                try:
                    return with_runner(tasks, root, name, executor="ray")
                finally:
                    ray.shutdown()

            variants["Ray, local 2-CPU instance"] = on_ray

    print(f"{len(tasks)} tasks ({', '.join(args.sets)}), gold agent, {args.repeats} repeat(s), {os.cpu_count()} CPUs")
    walls: dict[str, list[float]] = {name: [] for name in variants}
    cpus: dict[str, list[float]] = {name: [] for name in variants}
    for repeat in range(args.repeats):
        for i, (name, measure) in enumerate(variants.items()):
            with tempfile.TemporaryDirectory(prefix="bench-runner-") as tmp:
                wall, cpu, results = measure(Path(tmp), f"run{i}")  # type: ignore[operator]
            solved = sum(r.status == "completed" for r in results)
            load = os.getloadavg()[0]
            print(
                f"  [{repeat + 1}] {name}: {wall:.1f} s wall, harness CPU {cpu:.1f} s, "
                f"{solved}/{len(tasks)} completed, load average {load:.1f}"
            )
            walls[name].append(wall)
            cpus[name].append(cpu)
    base = statistics.median(walls["1 worker (thread)"])
    print(f"\n{'variant':28} {'wall (s)':>9} {'speedup':>8} {'harness CPU (s)':>16}")
    for name in variants:
        wall = statistics.median(walls[name])
        print(f"{name:28} {wall:9.1f} {base / wall:8.2f} {statistics.median(cpus[name]):16.1f}")


if __name__ == "__main__":
    main()
