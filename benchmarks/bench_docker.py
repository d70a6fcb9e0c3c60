"""The docker backend beside bubblewrap: the gold agent on a demo set with 2 workers, in pairs.

Each repeat runs the set once in bwrap and once in docker (the order alternating between repeats, so that
neither always runs first), through the runner in this process, and takes the ratio of the two wall times:
the target bounds the median of those ratios (docker / bwrap <= 1.3x). With ``--engine-per-operation``, a third
run per repeat has docker's guard serve nothing (a ``docker exec`` or ``docker cp`` per harness operation, as
before the guard served), for the before-and-after in the same minutes.

Where a docker task's time goes: every docker run is timed in its parts (the container's start, the guard's
connection, each kernel's start, the file reads, edits and writes, the sandbox's stop) and the engine's
commands it ran are counted by kind; per task, medians over the repeats, on stderr and as rows. The machine's
load average is printed with every run: other work on it slows every variant, so only the ratios within a
pair mean much.

    python benchmarks/bench_docker.py [--set masked] [--repeats 3] [--workers 2] [--engine-per-operation]
    python benchmarks/bench_docker.py --starts [--repeats 3]

``--starts``: a sandbox's start, its kernel's start and its stop alone, in bwrap and docker, one at a time and two
at once, to see what the container adds to each.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from common import Row, available_backends, table

from super_bench import EnvConfig, RunConfig, SandboxConfig, load_tasks, run
from super_bench.sandbox.backends import container_helper, docker
from super_bench.tasks.model import Task

TARGET = 1.3
# The parts of a docker task timed, by the method that does each.
PARTS = {
    "container start (engine run)": (docker.DockerSandbox, "_start_container"),
    "guard connection": (container_helper.GuardHelper, "connect"),
    "kernel start (launch to sockets open)": (docker.DockerSandbox, "launch_kernel"),
    "file reads": (docker.DockerSandbox, "read_file"),
    "edits": (docker.DockerSandbox, "edit_file"),
    "file writes": (docker.DockerSandbox, "write_file"),
    "stop (kills, engine rm, folders)": (docker.DockerSandbox, "stop"),
}


class Breakdown:
    """Seconds spent in each part and the engine's commands by kind, while installed (``with``)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = collections.defaultdict(float)
        self.commands: collections.Counter[str] = collections.Counter()

    @contextlib.contextmanager
    def installed(self) -> Iterator[Breakdown]:
        saved: list[tuple[Any, str, Any]] = []
        for part, (owner, name) in PARTS.items():
            original = owner.__dict__[name]
            saved.append((owner, name, original))
            setattr(owner, name, self._timed(part, original))
        popen_init = subprocess.Popen.__init__

        def counting(popen: Any, args: Any, *rest: Any, **kwargs: Any) -> None:
            if isinstance(args, list) and args and Path(str(args[0])).name in ("docker", "podman"):
                self.commands[_subcommand(args)] += 1
            popen_init(popen, args, *rest, **kwargs)

        subprocess.Popen.__init__ = counting  # type: ignore[method-assign]
        try:
            yield self
        finally:
            subprocess.Popen.__init__ = popen_init  # type: ignore[method-assign]
            for owner, name, original in saved:
                setattr(owner, name, original)

    def _timed(self, part: str, original: Any) -> Any:
        function = original.__func__ if isinstance(original, (classmethod, staticmethod)) else original

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[part] += time.perf_counter() - start

        return classmethod(timed) if isinstance(original, classmethod) else timed


def _subcommand(args: list[str]) -> str:
    """``exec``, ``cp``, ``run``, ``image inspect``...: the engine's subcommand, its global options skipped."""
    words = [str(a) for a in args[1:]]
    i = 0
    while i < len(words) and words[i].startswith("--"):
        i += 1 if "=" in words[i] else 2
    rest = words[i:]
    if rest[:1] == ["image"] or rest[:1] == ["container"]:
        return " ".join(rest[:2])
    return rest[0] if rest else "?"


def one_run(tasks: list[Task], backend: str, workers: int, root: Path) -> float:
    env = EnvConfig(sandbox=SandboxConfig(backend=backend, root=root / "sandboxes"))
    config = RunConfig(env=env, out=root / "run", workers=workers)
    start = time.perf_counter()
    outcome = run(config, tasks=tasks)
    wall = time.perf_counter() - start
    solved = sum(r.status == "completed" for r in outcome.results)
    if solved != len(tasks):
        raise RuntimeError(f"{backend}: only {solved} of {len(tasks)} tasks completed")
    return wall


@contextlib.contextmanager
def engine_per_operation() -> Iterator[None]:
    """Docker as before its guard served: no connection, so an engine command per operation."""
    original = container_helper.GuardHelper.connect
    container_helper.GuardHelper.connect = classmethod(lambda cls, *a, **k: None)  # type: ignore[method-assign, assignment]
    try:
        yield
    finally:
        container_helper.GuardHelper.connect = original  # type: ignore[method-assign]


def rows(task_set: str = "masked", repeats: int = 3, workers: int = 2, before: bool = False) -> list[Row]:
    where = f"demo {task_set.capitalize()} set, gold agent, {workers} workers"
    missing = {name: why for name, why in available_backends(("bwrap", "docker")).items() if why}
    if missing:
        return [Row("docker vs bwrap", where, f"not measured: {'; '.join(missing.values())}")]
    tasks = load_tasks("demo", task_set)
    variants: dict[str, Callable[[Path], float]] = {
        "bwrap": lambda root: one_run(tasks, "bwrap", workers, root),
        "docker": lambda root: one_run(tasks, "docker", workers, root),
    }
    if before:

        def old(root: Path) -> float:
            with engine_per_operation():
                return one_run(tasks, "docker", workers, root)

        variants["docker, an engine command per operation"] = old
    walls: dict[str, list[float]] = {name: [] for name in variants}
    parts: list[Breakdown] = []
    loads: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-docker-warm-") as warm:
        one_run(tasks, "docker", workers, Path(warm))  # the image's description noted, the caches filled
    for repeat in range(repeats):
        order = list(variants.items())
        for name, measure in order if repeat % 2 == 0 else reversed(order):
            load = os.getloadavg()[0]
            loads.append(load)
            breakdown = Breakdown()
            with tempfile.TemporaryDirectory(prefix="bench-docker-") as tmp:
                if name == "docker":
                    with breakdown.installed():
                        wall = measure(Path(tmp))
                    parts.append(breakdown)
                else:
                    wall = measure(Path(tmp))
            walls[name].append(wall)
            print(f"  [{repeat + 1}] {name}: {wall:.1f} s wall, load average {load:.1f} at its start", file=sys.stderr)
    pairs = sorted(d / b for d, b in zip(walls["docker"], walls["bwrap"]))
    found = [
        Row(
            "docker vs bwrap",
            f"{where}, per pair (load average {min(loads):.1f} to {max(loads):.1f})",
            f"docker {statistics.median(walls['docker']):.1f} s; median {statistics.median(pairs):.2f}x over "
            f"{len(pairs)} pairs, from {pairs[0]:.2f}x to {pairs[-1]:.2f}x",
            f"bwrap {statistics.median(walls['bwrap']):.1f} s; pairs " + ", ".join(f"{p:.2f}" for p in pairs),
            statistics.median(pairs),
            f"<= {TARGET:g}x",
            statistics.median(pairs) <= TARGET,
        )
    ]
    if before:
        name = "docker, an engine command per operation"
        old_pairs = sorted(o / b for o, b in zip(walls[name], walls["bwrap"]))
        found.append(
            Row(
                "docker vs bwrap",
                f"{where}, {name} (before the guard served)",
                f"{statistics.median(walls[name]):.1f} s; median {statistics.median(old_pairs):.2f}x the bwrap run "
                f"of its pair, from {old_pairs[0]:.2f}x to {old_pairs[-1]:.2f}x",
                f"bwrap {statistics.median(walls['bwrap']):.1f} s",
                statistics.median(old_pairs),
            )
        )
    count = len(tasks)
    for part in PARTS:
        per_task = statistics.median(b.seconds[part] for b in parts) / count
        found.append(Row("docker breakdown", f"{where}: {part}", f"{per_task * 1000:.0f} ms per task"))
    kinds = sorted({kind for b in parts for kind in b.commands})
    commands = ", ".join(f"{kind} {statistics.median(b.commands[kind] for b in parts) / count:.2f}" for kind in kinds)
    found.append(Row("docker breakdown", f"{where}: engine commands per task", commands or "none"))
    for line in (f"{row.case}: {row.ours}" for row in found[-len(PARTS) - 1 :]):
        print("  " + line, file=sys.stderr)
    return found


def start_rows(rounds: int = 3) -> list[Row]:
    """A sandbox's start, its kernel's start and its stop, in bwrap and docker in turn, one at a time and two at
    once (as 2 workers run them): medians of each part, in seconds."""
    from super_bench.environment.kernel.client import NotebookKernel
    from super_bench.sandbox import create_sandbox

    folder = tempfile.TemporaryDirectory(prefix="bench-docker-starts-")
    root = Path(folder.name)

    def one(backend: str, into: list[tuple[float, float, float]]) -> None:
        for _ in range(rounds):
            sandbox = create_sandbox(SandboxConfig(backend=backend, root=root))
            start = time.perf_counter()
            sandbox.start()
            started = time.perf_counter()
            kernel = NotebookKernel(sandbox, max_output_chars=1 << 20, startup_timeout=120, interrupt_grace=5)
            kernel.start()
            ready = time.perf_counter()
            kernel.shutdown()
            sandbox.stop()
            into.append((started - start, ready - started, time.perf_counter() - ready))

    found = []
    for at_once in (1, 2):
        for backend in ("bwrap", "docker"):
            parts: list[tuple[float, float, float]] = []
            threads = [threading.Thread(target=one, args=(backend, parts)) for _ in range(at_once)]
            load = os.getloadavg()[0]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            sandbox, kernel, stop = (statistics.median(p) for p in zip(*parts))
            found.append(
                Row(
                    "docker vs bwrap, starts",
                    f"{backend}, {at_once} at a time (load average {load:.1f})",
                    f"sandbox start {sandbox:.2f} s, kernel start {kernel:.2f} s, stop {stop:.2f} s",
                )
            )
            print(f"  {found[-1].case}: {found[-1].ours}", file=sys.stderr)
    folder.cleanup()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", default="masked", choices=["expert", "masked", "auto"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--engine-per-operation", action="store_true", help="A third run per repeat: docker as before its guard served."
    )
    parser.add_argument(
        "--starts", action="store_true", help="Only the sandbox, kernel and stop times, one and two at a time."
    )
    args = parser.parse_args()
    if args.starts:
        print(table(start_rows(args.repeats)))
        return
    print(table(rows(args.set, args.repeats, args.workers, args.engine_per_operation)))


if __name__ == "__main__":
    main()
