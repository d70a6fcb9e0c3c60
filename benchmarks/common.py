"""What the benchmarks share: a result row and the table of them, the machine, and timed commands."""

from __future__ import annotations

import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

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
