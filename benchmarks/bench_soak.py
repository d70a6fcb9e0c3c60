"""Soak: a long run at several workers, and the harness's memory over time, which must stay flat once warm.

Runs the demo Expert set many epochs over (more than ``--minutes`` can finish) with ``--workers`` workers, samples
the harness process's resident memory (RSS), threads and open files every ``--every`` seconds, and stops the run
with a Ctrl-C (SIGINT) after ``--minutes``. Reports the rows finished, RSS after the first ``--warm-up`` minute and
at the end, its largest rise over the warm figure, and the most threads and open files seen. The samples go to
stderr as they come.

    python benchmarks/bench_soak.py [--workers 8] [--minutes 20] [--warm-up 1] [--every 10] [--sandbox local]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import Row, super_bench, table

TARGET_MB = 20.0  # the most RSS may rise once warm


def sample(pid: int) -> tuple[float, int, int]:
    """The process's RSS in MB, its threads and its open files."""
    status = Path(f"/proc/{pid}/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    rss = int(fields["VmRSS"].split()[0]) / 1024
    return rss, int(fields["Threads"]), len(os.listdir(f"/proc/{pid}/fd"))


def rows(workers: int, minutes: float, warm_up: float, every: float, sandbox: str) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="bench-soak-") as folder:
        out = Path(folder) / "run"
        command = [*super_bench(), "run", "--sandbox", sandbox, "--workers", str(workers), "--epochs", "10000"]
        harness = subprocess.Popen(
            [*command, "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True
        )
        start = time.monotonic()
        samples: list[tuple[float, float, int, int, int]] = []
        try:
            while (elapsed := time.monotonic() - start) < minutes * 60 and harness.poll() is None:
                rss, threads, files = sample(harness.pid)
                done = _count(out)
                samples.append((elapsed, rss, threads, files, done))
                print(
                    f"{elapsed:7.0f} s  {rss:6.1f} MB  {threads:3d} threads  {files:4d} files  {done} rows",
                    file=sys.stderr,
                )
                time.sleep(every)
        finally:
            harness.send_signal(signal.SIGINT)
            try:
                harness.wait(timeout=120)
            except subprocess.TimeoutExpired:
                harness.kill()
        warm = [s for s in samples if s[0] >= warm_up * 60] or samples[-1:]
        rise = max(s[1] for s in warm) - warm[0][1]
        return [
            Row("soak", f"{workers} workers, {minutes:g} min: rows finished", str(_count(out))),
            Row(
                "soak",
                f"harness RSS after {warm_up:g} min warm-up, at the end",
                f"{warm[0][1]:.1f} MB, {warm[-1][1]:.1f} MB",
            ),
            Row(
                "soak",
                "harness RSS rise once warm (largest)",
                f"{rise:.1f} MB",
                target=f"<= {TARGET_MB:g} MB",
                met=rise <= TARGET_MB,
            ),
            Row("soak", "most threads, open files", f"{max(s[2] for s in samples)}, {max(s[3] for s in samples)}"),
        ]


def _count(out: Path) -> int:
    try:
        with open(out / "results.jsonl", "rb") as f:
            return sum(1 for _ in f)
    except OSError:
        return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--minutes", type=float, default=20)
    parser.add_argument("--warm-up", type=float, default=1)
    parser.add_argument("--every", type=float, default=10)
    parser.add_argument("--sandbox", default="local")
    args = parser.parse_args()
    print(table(rows(args.workers, args.minutes, args.warm_up, args.every, args.sandbox)))


if __name__ == "__main__":
    main()
