"""What the benchmarks share: a result row and the table of them, the machine, and timed commands."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import platform
import secrets
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BACKENDS = ("local", "bwrap", "docker")


@dataclass
class Row:
    """One measurement beside its reference. ``ratio`` is ours over the reference (lower is better)
    unless the target says otherwise; ``met`` is None where there is no target or nothing was measured."""

    benchmark: str
    case: str
    ours: str
    reference: str = ""
    ratio: float | None = None
    target: str = ""
    met: bool | None = None


def table(rows: Sequence[Row]) -> str:
    """The rows as a Markdown table (readable as text too)."""
    header = ["benchmark", "case", "super-bench", "reference", "ratio", "target", "met"]
    lines = [header, ["---"] * len(header)]
    for r in rows:
        ratio = "" if r.ratio is None else f"{r.ratio:.2f}"
        met = "" if r.met is None else ("yes" if r.met else "**no**")
        lines.append([r.benchmark, r.case, r.ours, r.reference, ratio, r.target, met])
    return "\n".join("| " + " | ".join(cells) + " |" for cells in lines)


def seconds(value: float) -> str:
    return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.2f} s"


def machine() -> list[str]:
    """The facts about this machine that the numbers depend on."""
    cpu = "unknown CPU"
    memory = "unknown"
    try:
        cpu = next(
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
        kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines() if "MemTotal" in line)
        memory = f"{kb / 2**20:.0f} GiB"
    except (OSError, StopIteration):
        pass
    from super_bench._version import __version__

    bwrap = shutil.which("bwrap")
    bwrap_version = (
        subprocess.run([bwrap, "--version"], capture_output=True, text=True).stdout.strip() if bwrap else "none"
    )
    return [
        f"CPU: {cpu}, {os.cpu_count()} cores; memory: {memory}",
        f"system: {platform.platform()}; {bwrap_version}",
        f"Python {platform.python_version()}; super-bench {__version__}",
        f"load average at the start: {os.getloadavg()[0]:.2f}",
    ]


def super_bench() -> list[str]:
    """The ``super-bench`` command of the Python that runs the benchmarks."""
    script = Path(sys.executable).with_name("super-bench")
    if script.exists():
        return [str(script)]
    found = shutil.which("super-bench")
    return [found] if found else [sys.executable, "-m", "super_bench"]


def scored_rows(out: Path) -> dict[tuple[str, int], tuple[Any, ...]]:
    """The rows of the run in ``out`` by task and epoch, each with what decides its score (status, metrics,
    submission, steps): what a run stopped and resumed must share with a clean run of the same settings."""
    found = {}
    for line in (out / "results.jsonl").read_text().splitlines():
        row = json.loads(line)
        found[(row["task_id"], row["epoch"])] = (row["status"], row["metrics"], row["submission"], row["n_steps"])
    return found


def timed(command: Sequence[str], *, env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[float, str]:
    """Run a command to its end; returns its wall time and its stdout. A failure raises with its stderr."""
    start = time.perf_counter()
    proc = subprocess.run(list(command), capture_output=True, text=True, env=env, cwd=cwd)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return wall, proc.stdout


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def available_backends(names: Sequence[str] = BACKENDS) -> dict[str, str | None]:
    """Each backend, with None where it runs here and otherwise why not."""
    from super_bench.errors import SuperBenchError
    from super_bench.sandbox import SandboxConfig, check_backend

    found: dict[str, str | None] = {}
    for name in names:
        try:
            check_backend(SandboxConfig(backend=name))
            found[name] = None
        except SuperBenchError as e:
            found[name] = str(e)
    return found


def ratio_row(
    benchmark: str, case: str, ours: float, reference: float, limit: float, *, ours_text: str, reference_text: str
) -> Row:
    """A row whose target is ``ours / reference <= limit``."""
    ratio = ours / reference
    return Row(benchmark, case, ours_text, reference_text, ratio, f"<= {limit:g}x", ratio <= limit)


# Where a command's CPU time is counted, every process it starts included (kernels, sandboxes, the watchdog,
# whatever outlives it): a cgroup v1 ``cpuacct`` hierarchy (apart from the memory hierarchy, so the harness's
# memory limits work as ever), else a cgroup v2 one.
_CPUACCT = (Path("/sys/fs/cgroup/cpuacct"), "cpuacct.usage", 1e-9)
_UNIFIED = (Path("/sys/fs/cgroup"), "cpu.stat", 1e-6)


def _cpu_cgroup() -> tuple[Path, str, float] | None:
    for base, name, unit in (_CPUACCT, _UNIFIED):
        probe = base / f"bench-probe-{secrets.token_hex(3)}"
        try:
            probe.mkdir()
        except OSError:
            continue
        with contextlib.suppress(OSError):
            probe.rmdir()
        if (base / name).exists() or name == "cpu.stat":
            return base, name, unit
    return None


def cpu_counting() -> bool:
    """Whether this machine lets the benchmarks count a command's CPU time in a cgroup of its own."""
    return _cpu_cgroup() is not None


def timed_cpu(command: Sequence[str], *, env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """Run a command to its end in a cgroup of its own; its wall time, the CPU seconds of every process it
    started (counted until the last of them has ended), and its stdout."""
    found = _cpu_cgroup()
    if found is None:
        raise RuntimeError("no cgroup to count CPU time in (root and a cgroup file system are needed)")
    base, name, unit = found
    group = base / f"bench-{secrets.token_hex(4)}"
    group.mkdir()
    try:
        start = time.perf_counter()
        # A shell joins the cgroup, then becomes the command.
        join = ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(group / "cgroup.procs")]
        proc = subprocess.Popen([*join, *command], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        stdout, stderr = proc.communicate()
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed ({proc.returncode}):\n{stderr[-3000:]}")
        deadline = time.monotonic() + 10
        while (group / "cgroup.procs").read_text().strip() and time.monotonic() < deadline:
            time.sleep(0.01)  # a watchdog ends a moment after the harness: its time counts
        text = (group / name).read_text()
        used = int(text.split()[0]) if name != "cpu.stat" else int(text.split("usage_usec")[1].split()[0])
        return wall, used * unit, stdout
    finally:
        with contextlib.suppress(OSError):
            group.rmdir()


@contextlib.contextmanager
def busy_loops(count: int) -> Iterator[None]:
    """``count`` processes that spin on a core each, as other work on the machine would."""
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        time.sleep(0.2)
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


class PrestartCount(logging.Handler):
    """Counts, while installed (``with``), the environments the runner prepared ahead and those workers took."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.prepared = self.taken = 0
        self._logger = logging.getLogger("super_bench.runner.prestart")
        self._level = self._logger.level

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        self.prepared += message.startswith("prepared ")
        self.taken += message.startswith("a worker takes ")

    def __enter__(self) -> PrestartCount:
        self._logger.addHandler(self)
        self._logger.setLevel(logging.DEBUG)
        return self

    def __exit__(self, *exc: object) -> None:
        self._logger.removeHandler(self)
        self._logger.setLevel(self._level)
