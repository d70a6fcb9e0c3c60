"""Chaos: a run killed at random moments (SIGKILL, as an OOM killer or a lost node would) and resumed, then what
is left: the rows (none lost, none twice, every one equal to a clean run's), and the temporary folders, task
memory cgroups and processes the dead harnesses left (none, once the last resume is over).

Runs the demo Expert set, ``--epochs`` times over (36 rows by default), with 2 workers and ``--memory-limit 1001m``
(so that tasks get memory cgroups where this machine can make them, of a limit that tells them from others'), in a
temporary folder of its own (``TMPDIR``). Each of ``--kills`` attempts is SIGKILLed after a random ``--after``
seconds (between two bounds, 5 and 25 by default: a run's start takes a few seconds, its tasks a few each); the
last one together with its watchdog, which would otherwise clean up after it. A final resume runs to the end. A
clean run of the same settings gives the rows to compare with.

    python benchmarks/bench_chaos.py [--kills 10] [--epochs 4] [--after 5 25] [--seed 0] [--sandbox local]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import Row, scored_rows, super_bench, table

from super_bench.sandbox.conformance import pids_with
from super_bench.sandbox.lifetime.supervisor import watchdog_command
from super_bench.sandbox.limits.memory import cgroup_parent


def rows(
    kills: int,
    epochs: int,
    seed: int,
    sandbox: str,
    after: tuple[float, float] = (5, 25),
    resume_timeout: float | None = None,
) -> list[Row]:
    """``resume_timeout``: seconds the last resume may take, after which it is stopped and what each of its threads
    was doing is raised (a hang named, not a run that never ends)."""
    chance = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="bench-chaos-") as folder:
        base = Path(folder)
        tmp = base / "tmp"
        tmp.mkdir()
        # Python's fault handler prints every thread's stack on SIGABRT: what a resume that hangs was waiting on.
        env = {**os.environ, "TMPDIR": str(tmp), "COLUMNS": "120", "PYTHONFAULTHANDLER": "1"}
        common = [*super_bench(), "run", "--sandbox", sandbox, "--workers", "2", "--epochs", str(epochs)]
        common += ["--memory-limit", f"{LIMIT_MIB}m"]
        clean = base / "clean"
        subprocess.run([*common, "--out", str(clean)], env=env, capture_output=True, check=True)
        out = base / "chaos"
        cgroups_before = _task_cgroups()
        for attempt in range(kills):
            harness = subprocess.Popen(
                [*common, "--out", str(out)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            time.sleep(chance.uniform(*after))
            if attempt == kills - 1:  # the last: harness and watchdog together
                for pid in pids_with(watchdog_command()[-1], parent=harness.pid):
                    os.kill(pid, signal.SIGKILL)
            harness.kill()
            harness.wait()
            print(f"kill {attempt + 1}: {_count(out)} rows", file=sys.stderr)
        final = _resume([*common, "--out", str(out)], env, base / "resume.err", resume_timeout)
        time.sleep(2)  # the watchdogs of the killed attempts end theirs
        kept, clean_rows = scored_rows(out), scored_rows(clean)
        leftover_cgroups = _task_cgroups() - cgroups_before
        return [
            Row("chaos", f"{kills} SIGKILLs + resumes: exit status of the last resume", str(final.returncode)),
            Row("chaos", "rows (clean run)", f"{len(kept)} ({len(clean_rows)})", met=len(kept) == len(clean_rows)),
            Row("chaos", "rows equal to the clean run's", str(sum(kept.get(k) == v for k, v in clean_rows.items()))),
            Row("chaos", "super-bench-* temporary folders left", str(len(list(tmp.glob("super-bench-*"))))),
            Row("chaos", "task memory cgroups left", str(len(leftover_cgroups))),
            Row("chaos", "processes left", str(len(pids_with(str(tmp), environment=True)))),
        ]


def _resume(argv: list[str], env: dict[str, str], log: Path, timeout: float | None) -> subprocess.Popen[bytes]:
    """The last resume, run to its end, its standard error in ``log`` (a file, not a pipe: the tasks it leaves
    could hold a pipe open after it ended). Past ``timeout``: its threads' stacks, raised."""
    with log.open("wb") as err:
        process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=err)
        try:
            process.wait(timeout)
            return process
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGABRT)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    stacks = log.read_text(encoding="utf-8", errors="replace")[-12_000:]
    raise RuntimeError(f"the last resume did not end in {timeout:g} s; what it was doing:\n{stacks}")


def _count(out: Path) -> int:
    try:
        return len((out / "results.jsonl").read_text().splitlines())
    except OSError:
        return 0


# The tasks' memory limit, a value nothing else uses: the cgroups counted are this benchmark's own, not those of
# other runs on the machine at the same time (a test suite's, say), whose tasks have other limits.
LIMIT_MIB = 1001


def _task_cgroups() -> set[str]:
    parent = cgroup_parent()
    if parent is None:
        return set()
    return {str(p) for p in parent[1].glob("super-bench-*") if _limit(p) == LIMIT_MIB * 2**20}


def _limit(cgroup: Path) -> int | None:
    for name in ("memory.max", "memory.limit_in_bytes"):
        try:
            return int((cgroup / name).read_text().strip())
        except (OSError, ValueError):
            continue
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--after", type=float, nargs=2, default=(5, 25), metavar=("MIN", "MAX"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sandbox", default="local")
    args = parser.parse_args()
    print(table(rows(args.kills, args.epochs, args.seed, args.sandbox, tuple(args.after))))


if __name__ == "__main__":
    main()
