"""Throughput at scale: large package installs through the package cache or without it, and many tasks at once
with a slow model.

A package index on loopback serves synthetic wheels of random bytes (they do not compress), all connections
together no faster than a set bandwidth (one link, shared); a model server (OpenAI's chat API) answers every
request after a set delay.

- install: two tasks, one after the other, each ``pip install`` every wheel in a sandbox of its own (bwrap
  where it works, else local), with the cache (``--package-cache link``) and without (``off``). Reported: each
  install's time, the disk the host gave it (the growth of the sandboxes' and the cache's directories, each
  file counted once, measured after the install), and the bytes the index sent. Targets: with the cache the
  second install is at least 5x faster than the first and takes at most half its disk.
- workers: N tasks of the react-super agent (reply 1: install every wheel, or for "model only" a trivial
  cell; reply 2: submit) on 1, 4 and 16 workers, with the cache on and off: wall time, peak disk (sandboxes
  and cache), peak memory (the resident memory of the harness and every process under it, summed), bytes
  the index sent. Target: with 16 workers, the model-only tasks (which wait on the model, as real ones on an
  API) finish at least 6x faster than with 1.

- prestart (only when asked for): N model-only tasks on each number of workers, with ``--prestart auto`` and
  ``off`` in turn, ``--repeats`` times each: median wall times, and how many tasks' environments were started
  ahead and taken.

    python benchmarks/bench_scale.py                          # 4 wheels of 200 MB at 50 MB/s, 16 tasks
    python benchmarks/bench_scale.py --wheels 4 --wheel-mb 16 --mb-per-s 20 --tasks 16   # a reduced size
    python benchmarks/bench_scale.py --parts prestart --wheels 1 --wheel-mb 1 --tasks 12 --workers 2 4

It needs a few GB of free disk at full size (16 tasks without the cache install 16 copies). The helpers that
serve the index and the model are the test suite's (tests/), so it runs from a checkout.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil
from common import PrestartCount, Row, table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the test suite's index and model server

from tests.support.mirror_fixtures import package_index  # noqa: E402
from tests.support.model_server import Answer, ModelServer  # noqa: E402
from tests.support.sandboxes import tiny_wheel  # noqa: E402

from super_bench import EnvConfig, Environment, RunConfig, SandboxConfig, Task, run  # noqa: E402
from super_bench.models import ModelOptions  # noqa: E402
from super_bench.sandbox.backends.bwrap import bwrap_problem  # noqa: E402

UPLOADED = "2024-01-01T00:00:00Z"
MODES = ("link", "off")
SECOND_FASTER, DISK_SHARE, WORKERS_FASTER = 5.0, 0.5, 6.0


def backend() -> str:
    return "bwrap" if bwrap_problem() is None else "local"


def disk_used(*paths: Path) -> int:
    """Bytes allocated under ``paths`` together, each file once however many links it has (``du``)."""
    existing = [str(p) for p in paths if p.exists()]
    if not existing:
        return 0
    out = subprocess.run(["du", "-sc", "--block-size=1", *existing], capture_output=True, text=True).stdout
    return int(out.strip().splitlines()[-1].split()[0])


def tree_memory() -> int:
    """Resident bytes of this process and everything under it, summed."""
    me = psutil.Process()
    total = 0
    for process in [me, *me.children(recursive=True)]:
        try:
            total += process.memory_info().rss
        except psutil.Error:
            pass
    return total


@contextmanager
def peaks(measure: dict[str, Callable[[], int]], every: float = 0.5) -> Iterator[dict[str, int]]:
    """The highest value of each measure while the block runs, sampled every ``every`` seconds."""
    found = dict.fromkeys(measure, 0)
    stop = threading.Event()

    def sample() -> None:
        while True:
            for name, read in measure.items():
                found[name] = max(found[name], read())
            if stop.wait(every):
                return

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield found
    finally:
        stop.set()
        thread.join()
        for name, read in measure.items():
            found[name] = max(found[name], read())


def mb(n: float) -> str:
    return f"{n / 1e6:,.0f} MB"


def sent(requested: list[str], sizes: dict[str, int]) -> int:
    return sum(sizes[path.rsplit("/", 1)[-1]] for path in requested if path.startswith("/files/"))


class SlowModel(ModelServer):
    """A model that takes ``delay`` seconds a reply: first it installs ``packages``, then it submits."""

    def __init__(self, delay: float, packages: list[str]) -> None:
        super().__init__()
        self.delay = delay
        self.install = "!pip install --quiet " + " ".join(packages) if packages else "print('no install')"

    def _next(self, request: dict[str, Any], path: str, headers: dict[str, str]) -> Answer:
        time.sleep(self.delay)
        installed = any(self.install in str(m.get("content")) for m in request.get("messages", []))
        action, content = ("submit", "{}") if installed else ("execute", self.install)
        return Answer(text=f"Thought: go on.\nAction: {action}\n<content>\n{content}\n</content>")


def sandbox(root: Path, index: str, mode: str) -> SandboxConfig:
    return SandboxConfig(
        backend=backend(),  # type: ignore[arg-type]
        root=root / "sandboxes",
        pip_index=index,
        package_cache=mode,  # type: ignore[arg-type]
        package_cache_dir=root / "cache",
    )


def install_rows(root: Path, index: str, packages: list[str], requested: list[str], sizes: dict[str, int]) -> list[Row]:
    rows = []
    for mode in MODES:
        where = root / f"install-{mode}"
        env_config = EnvConfig(cell_timeout=3600, sandbox=sandbox(where, index, mode))
        times, disks, bytes_sent = [], [], []
        for i in (1, 2):
            env = Environment(env_config)
            env.reset(Task(task_id=f"install-{i}", query="install"))
            before, already = disk_used(where), len(requested)
            start = time.perf_counter()
            step = env.step({"type": "execute", "content": "!pip install --quiet " + " ".join(packages)})
            times.append(time.perf_counter() - start)
            if step.exit_code != 0:
                raise RuntimeError(f"the install failed: {step.raw_output[-2000:]}")
            disks.append(disk_used(where) - before)
            bytes_sent.append(sent(requested[already:], sizes))
            env.close()
        cache = "cache on" if mode == "link" else "cache off"
        for i in (0, 1):
            rows.append(
                Row(
                    "install",
                    f"{cache}, task {i + 1}",
                    f"{times[i]:.1f} s, disk {mb(disks[i])}, downloaded {mb(bytes_sent[i])}",
                )
            )
        if mode == "link":
            speedup, share = times[0] / times[1], disks[1] / max(1, disks[0])
            rows.append(
                Row(
                    "install",
                    "cache on: task 2 against task 1",
                    f"{speedup:.1f}x faster",
                    ratio=speedup,
                    target=f">= {SECOND_FASTER:.0f}x faster",
                    met=speedup >= SECOND_FASTER,
                )
            )
            rows.append(
                Row(
                    "install",
                    "cache on: task 2's disk against task 1's",
                    f"{share:.0%}",
                    ratio=share,
                    target=f"<= {DISK_SHARE:.0%}",
                    met=share <= DISK_SHARE,
                )
            )
        print(f"install, {cache}: {times} s, {disks} bytes", file=sys.stderr, flush=True)
    return rows


# The variants of the workers part: what each task's first reply runs, and the package cache.
VARIANTS = {"model only": ("link", False), "install, cache on": ("link", True), "install, cache off": ("off", True)}


def worker_rows(
    root: Path,
    index: str,
    packages: list[str],
    requested: list[str],
    sizes: dict[str, int],
    tasks: int,
    delay: float,
    workers: list[int],
) -> list[Row]:
    rows = []
    walls: dict[tuple[str, int], float] = {}
    for variant, (mode, installs) in VARIANTS.items():
        for n in workers:
            where = root / f"workers-{mode}-{installs}-{n}"
            with SlowModel(delay, packages if installs else []) as model:
                config = RunConfig(
                    agent="react-super",
                    model="openai/slow",
                    model_options=ModelOptions(base_url=model.base_url, cache=None),
                    workers=n,
                    out=where / "run",
                    env=EnvConfig(cell_timeout=3600, sandbox=sandbox(where, index, mode)),
                )
                chosen = [Task(task_id=f"scale-{i:02d}", query="install the packages") for i in range(tasks)]
                disk = functools.partial(disk_used, where / "sandboxes", where / "cache")
                already = len(requested)
                start = time.perf_counter()
                with peaks({"disk": disk, "memory": tree_memory}) as peak:
                    outcome = run(config, tasks=chosen, progress=False)
                wall = walls[variant, n] = time.perf_counter() - start
            done = sum(r.stop_reason == "submitted" for r in outcome.results)
            if done != tasks:
                raise RuntimeError(f"{tasks - done} task(s) did not submit: {[r.error for r in outcome.results]}")
            rows.append(
                Row(
                    "workers",
                    f"{tasks} tasks, {n} worker(s), {variant}",
                    f"{wall:.1f} s, peak disk {mb(peak['disk'])}, peak memory {mb(peak['memory'])}, "
                    f"downloaded {mb(sent(requested[already:], sizes))}",
                )
            )
            print(f"workers {n}, {variant}: {wall:.1f} s {peak}", file=sys.stderr, flush=True)
    if 1 in workers and max(workers) > 1:
        most = max(workers)
        for variant in VARIANTS:
            speedup = walls[variant, 1] / walls[variant, most]
            judged = variant == "model only" and most >= 16  # the target is the issue's: 16 workers, a 2 s model
            rows.append(
                Row(
                    "workers",
                    f"{most} workers against 1, {variant}",
                    f"{speedup:.1f}x faster",
                    ratio=speedup,
                    target=f">= {WORKERS_FASTER:.0f}x faster" if judged else "",
                    met=speedup >= WORKERS_FASTER if judged else None,
                )
            )
    return rows


def prestart_rows(root: Path, index: str, tasks: int, delay: float, workers: list[int], repeats: int) -> list[Row]:
    """Model-only tasks with ``--prestart auto`` and ``off``, alternating, ``repeats`` times each: the median
    wall times, and how many tasks' environments were started ahead (and taken by their worker)."""
    rows = []
    for n in workers:
        walls: dict[str, list[float]] = {"auto": [], "off": []}
        ahead: dict[str, list[str]] = {"auto": [], "off": []}
        for repeat in range(repeats):
            for prestart in ("auto", "off") if repeat % 2 == 0 else ("off", "auto"):
                where = root / f"prestart-{prestart}-{n}-{repeat}"
                with SlowModel(delay, []) as model:
                    config = RunConfig(
                        agent="react-super",
                        model="openai/slow",
                        model_options=ModelOptions(base_url=model.base_url, cache=None),
                        workers=n,
                        prestart=prestart,
                        out=where / "run",
                        env=EnvConfig(cell_timeout=3600, sandbox=sandbox(where, index, "off")),
                    )
                    chosen = [Task(task_id=f"scale-{i:02d}", query="run a cell") for i in range(tasks)]
                    load = os.getloadavg()[0]
                    start = time.perf_counter()
                    with PrestartCount() as count:
                        outcome = run(config, tasks=chosen, progress=False)
                    wall = time.perf_counter() - start
                done = sum(r.stop_reason == "submitted" for r in outcome.results)
                if done != tasks:
                    raise RuntimeError(f"{tasks - done} task(s) did not submit: {[r.error for r in outcome.results]}")
                walls[prestart].append(wall)
                ahead[prestart].append(f"{count.prepared}/{count.taken}")
                print(
                    f"prestart {prestart}, {n} workers: {wall:.1f} s, prepared/taken {count.prepared}/{count.taken}, "
                    f"load average {load:.1f}",
                    file=sys.stderr,
                    flush=True,
                )
        on, off = statistics.median(walls["auto"]), statistics.median(walls["off"])
        for prestart, wall in (("auto", on), ("off", off)):
            rows.append(
                Row(
                    "prestart",
                    f"{tasks} tasks, {n} workers, model only, --prestart {prestart}",
                    f"{wall:.1f} s (median of {', '.join(f'{w:.1f}' for w in walls[prestart])}; prepared/taken "
                    f"{', '.join(ahead[prestart])})",
                )
            )
        rows.append(Row("prestart", f"{n} workers, auto against off", f"{on:.1f} s", f"{off:.1f} s", on / off))
    return rows


def rows(
    wheels: int = 4,
    wheel_mb: float = 200,
    mb_per_s: float = 50,
    tasks: int = 16,
    delay: float = 2.0,
    workers: tuple[int, ...] = (1, 4, 16),
    parts: tuple[str, ...] = ("install", "workers"),
    repeats: int = 3,
) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        root = Path(tmp)
        (root / "wheels").mkdir()
        made = {
            f"sbscale{i}": tiny_wheel(root / "wheels", f"sbscale{i}", i, padding=int(wheel_mb * 1e6))
            for i in range(wheels)
        }
        sizes = {wheel.name: wheel.stat().st_size for wheel in made.values()}
        packages = list(made)
        served = {name: {"1.0": (wheel, UPLOADED)} for name, wheel in made.items()}
        with package_index(served, bytes_per_second=mb_per_s * 1e6) as (index, requested):
            found: list[Row] = []
            if "install" in parts:
                found += install_rows(root, index, packages, requested, sizes)
            if "workers" in parts:
                found += worker_rows(root, index, packages, requested, sizes, tasks, delay, list(workers))
            if "prestart" in parts:
                found += prestart_rows(root, index, tasks, delay, list(workers), repeats)
    size = f"{wheels} wheels of {wheel_mb:g} MB at {mb_per_s:g} MB/s, {backend()}, model {delay:g} s a reply"
    return [
        Row(r.benchmark, f"{r.case} [{size}]" if i == 0 else r.case, r.ours, r.reference, r.ratio, r.target, r.met)
        for i, r in enumerate(found)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wheels", type=int, default=4)
    parser.add_argument("--wheel-mb", type=float, default=200)
    parser.add_argument("--mb-per-s", type=float, default=50, help="Bandwidth of the link to the index.")
    parser.add_argument("--tasks", type=int, default=16)
    parser.add_argument("--delay", type=float, default=2.0, help="Seconds the model takes a reply.")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument(
        "--parts", nargs="+", choices=["install", "workers", "prestart"], default=["install", "workers"]
    )
    parser.add_argument("--repeats", type=int, default=3, help="Runs of each side of the prestart part.")
    parser.add_argument("--json", action="store_true", help="The rows as JSON instead of a table.")
    args = parser.parse_args()
    found = rows(
        args.wheels,
        args.wheel_mb,
        args.mb_per_s,
        args.tasks,
        args.delay,
        tuple(args.workers),
        tuple(args.parts),
        args.repeats,
    )
    print(json.dumps([r.__dict__ for r in found], indent=1) if args.json else table(found))
    sys.exit(0 if all(r.met is not False for r in found) else 1)


if __name__ == "__main__":
    main()
