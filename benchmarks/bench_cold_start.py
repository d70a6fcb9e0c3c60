"""Cold start: one cell from the command line to its result, against a raw kernel doing the same.

Ours: ``super-bench run --query ... --agent replay:FILE`` with one cell, ``print(6 * 7)``, in a fresh
process: imports, sandbox, task environment, kernel, the cell, the trajectory, its score, the run
directory and the table. The reference, also a fresh process: ``jupyter_client``'s ``KernelManager``
(as ``start_new_kernel`` uses it), the same cell through ``execute_interactive``, and the kernel's
shutdown; for ``bwrap`` the raw kernel runs in a minimal bubblewrap container (read-only root, a
private ``/tmp``, its own PID and IPC namespaces, unix-socket transport), started by
``jupyter_client`` from a kernel spec.
Python's own start-up is measured too, since both sides pay it.

Where the benchmark may make cgroups (root), each side runs in a cgroup of its own, and the CPU time of all
its processes (the harness, the sandbox, the kernel, the watchdog) is set beside the wall time: the CPU
ratio, and the wall ratio idle and with two busy loops spinning on the machine's cores (``--busy``), as
where users run benchmarks beside other work. The two sides alternate, and each figure is a median.

With ``--against SRC`` (the ``src`` directory of an earlier release's checkout), the CPU figures set this
release's one-cell run beside that release's (run with ``SRC`` first on ``PYTHONPATH``) and the raw kernel, the
three in turn in every round, their order reversed in every second: the machine's speed drifts by a fifth
between runs minutes apart, so a change is judged by the median of the differences within the rounds.

    python benchmarks/bench_cold_start.py [--backends local bwrap docker] [--repeats 5] [--busy 2]
    python benchmarks/bench_cold_start.py --backends local bwrap --against ../earlier/src --repeats 9
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from common import (
    Row,
    available_backends,
    busy_loops,
    cpu_counting,
    median,
    ratio_row,
    seconds,
    super_bench,
    table,
    timed,
    timed_cpu,
)

TARGETS = {"local": 1.5, "bwrap": 2.0, "docker": 2.0}
# Measured in cgroups: all processes' CPU time, and the wall time idle and beside busy loops.
CPU_TARGET, IDLE_TARGET, BUSY_TARGET = 1.5, 1.1, 1.3

# What start_new_kernel does, with the kernel spec and transport as arguments.
RAW = """
import sys
from jupyter_client.manager import KernelManager
name, sockets = sys.argv[1:3]  # a kernel spec, and the path of its sockets and connection file
km = KernelManager(kernel_name=name, transport="ipc", ip=sockets, connection_file=sockets + ".json")
km.start_kernel()
kc = km.client()
kc.start_channels()
kc.wait_for_ready(timeout=60)
kc.execute_interactive("print(6 * 7)")
kc.stop_channels()
km.shutdown_kernel(now=True)
"""


def bwrap_kernel_spec(root: Path) -> dict[str, str]:
    """A kernel spec that starts ipykernel in a bare bubblewrap container; returns the environment
    that makes ``jupyter_client`` find it."""
    spec = root / "kernels" / "bwrap-raw"
    spec.mkdir(parents=True)
    bwrap = shutil.which("bwrap") or "bwrap"
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    # The private /tmp hides whatever lives under the host's /tmp: the Python that runs the kernel and
    # its packages (a virtual environment made there, say) are bound back on top of it, read-only.
    python = {sys.prefix, sys.base_prefix, str(Path(sys.executable).parent), str(Path(sys.executable).resolve().parent)}
    for path in sorted(p for p in python | set(sys.path) if p and Path(p).is_dir() and Path(p).is_relative_to("/tmp")):
        argv += ["--ro-bind", path, path]
    argv += ["--bind", str(root / "ipc"), str(root / "ipc"), "--unshare-pid", "--unshare-ipc", "--die-with-parent"]
    # Inside its PID namespace the kernel's parent is PID 1, which ipykernel would take for its
    # parent having exited, unless it is told that PID 1 is its parent.
    argv += ["--setenv", "JPY_PARENT_PID", "1"]
    argv += ["--", sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "bwrap raw", "language": "python"}))
    (root / "ipc").mkdir()
    return {**os.environ, "JUPYTER_PATH": str(root)}


def _commands(backend: str, root: Path) -> tuple[list[str], list[str], dict[str, str] | None]:
    """The one-cell run's command (its --out still to add), the raw kernel's, and the raw kernel's environment."""
    actions = root / "one-cell.json"
    actions.write_text(json.dumps([{"type": "execute", "content": "print(6 * 7)"}]))
    command = [*super_bench(), "run", "--query", "Print 6 * 7.", "--agent", f"replay:{actions}", "--sandbox", backend]
    # Unix sockets, as the sandboxes use (jupyter_client's default is TCP).
    raw_command = [sys.executable, "-c", RAW, "python3", str(root / "ipc" / "kernel")]
    raw_env = None
    if backend == "bwrap":
        raw_env = bwrap_kernel_spec(root)
        raw_command[3] = "bwrap-raw"
    else:
        (root / "ipc").mkdir()
    return command, raw_command, raw_env


def measure_cpu(backend: str, repeats: int, busy: int) -> list[Row]:
    """CPU and wall time of the one-cell run and of the raw kernel, in cgroups, idle and beside busy loops."""
    found: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="bench-cold-cpu-") as tmp:
        root = Path(tmp)
        command, raw_command, raw_env = _commands(backend, root)
        for loops in sorted({0, busy}):
            ours: list[tuple[float, float]] = []
            raw: list[tuple[float, float]] = []
            with busy_loops(loops):
                for i in range(repeats):
                    wall, cpu, _ = timed_cpu([*command, "--out", str(root / f"run-{loops}-{i}")])
                    ours.append((wall, cpu))
                    wall, cpu, stdout = timed_cpu(raw_command, env=raw_env)
                    if "42" not in stdout:
                        raise RuntimeError(f"the raw kernel printed {stdout!r}")
                    raw.append((wall, cpu))
            walls = median([w for w, _ in ours]), median([w for w, _ in raw])
            cpus = median([c for _, c in ours]), median([c for _, c in raw])
            where = "idle" if loops == 0 else f"{loops} busy loops"
            found.append(
                ratio_row(
                    "cold start, wall",
                    f"{backend}, {where}",
                    walls[0],
                    walls[1],
                    IDLE_TARGET if loops == 0 else BUSY_TARGET,
                    ours_text=f"{seconds(walls[0])} (median of {repeats}, alternating)",
                    reference_text=f"{seconds(walls[1])} (raw kernel + one cell)",
                )
            )
            found.append(
                ratio_row(
                    "cold start, CPU",
                    f"{backend}, {where}",
                    cpus[0],
                    cpus[1],
                    CPU_TARGET,
                    ours_text=f"{seconds(cpus[0])} of CPU, all processes (cgroup)",
                    reference_text=f"{seconds(cpus[1])} of CPU (raw kernel + one cell)",
                )
            )
    return found


def measure(backend: str, repeats: int) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="bench-cold-") as tmp:
        root = Path(tmp)
        command, raw_command, raw_env = _commands(backend, root)
        ours, raw, python = [], [], []
        for i in range(repeats):
            out = root / f"run{i}"
            wall, _ = timed([*command, "--out", str(out)])
            if "42" not in (out / "tasks" / "query" / "trajectory.json").read_text():
                raise RuntimeError(f"{out}: the cell's output is missing")
            ours.append(wall)
            wall, stdout = timed(raw_command, env=raw_env)
            if "42" not in stdout:
                raise RuntimeError(f"the raw kernel printed {stdout!r}")
            raw.append(wall)
            python.append(timed([sys.executable, "-c", "pass"])[0])
    mine, reference, floor = median(ours), median(raw), median(python)
    row = ratio_row(
        "cold start",
        backend,
        mine,
        reference,
        TARGETS[backend],
        ours_text=f"{seconds(mine)} (super-bench run, one cell)",
        reference_text=f"{seconds(reference)} (raw kernel{' in bwrap' if backend == 'bwrap' else ''} + one cell)",
    )
    row.ours += f"; {seconds(mine - reference)} more than the raw kernel; Python's start-up {seconds(floor)}"
    return [row]


def measure_against(backend: str, repeats: int, source: Path) -> list[Row]:
    """The one-cell run's CPU (all processes, cgroups), this release's against the earlier one in ``source``
    (a ``src`` directory), with the raw kernel's beside them; the three in turn in every round."""
    earlier = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(source), os.environ.get("PYTHONPATH")) if p)}
    cpu: dict[str, list[float]] = {"ours": [], "earlier": [], "raw": []}
    with tempfile.TemporaryDirectory(prefix="bench-cold-against-") as tmp:
        root = Path(tmp)
        command, raw_command, raw_env = _commands(backend, root)
        sides = {
            "ours": lambda i: timed_cpu([*command, "--out", str(root / f"ours-{i}")]),
            "earlier": lambda i: timed_cpu([*command, "--out", str(root / f"earlier-{i}")], env=earlier),
            "raw": lambda i: timed_cpu(raw_command, env=raw_env),
        }
        for i in range(repeats):
            for side in list(sides) if i % 2 == 0 else list(sides)[::-1]:
                _, used, _ = sides[side](i)
                cpu[side].append(used)
    ours, before, raw = (median(cpu[side]) for side in ("ours", "earlier", "raw"))
    less = median([b - o for o, b in zip(cpu["ours"], cpu["earlier"])])
    return [
        ratio_row(
            "cold start, CPU, against an earlier release",
            backend,
            ours,
            before,
            1.0,
            ours_text=f"{seconds(ours)} of CPU, {ours / raw:.2f}x the raw kernel; {seconds(less)} less a round",
            reference_text=f"{seconds(before)} (earlier), {before / raw:.2f}x the raw kernel's {seconds(raw)}",
        )
    ]


def rows(backends: Sequence[str], repeats: int, busy: int = 2) -> list[Row]:
    found: list[Row] = []
    for backend, problem in available_backends(backends).items():
        if problem is not None:
            found.append(Row("cold start", backend, f"not measured: {problem}"))
            continue
        found += measure(backend, repeats)
        if cpu_counting():
            found += measure_cpu(backend, repeats, busy)
        else:
            found.append(Row("cold start, CPU", backend, "not measured: no cgroup can be made here (needs root)"))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backends", nargs="+", default=["local", "bwrap", "docker"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--busy", type=int, default=2, help="Busy loops beside the second round of CPU figures.")
    parser.add_argument("--cpu-only", action="store_true", help="Only the figures measured in cgroups.")
    parser.add_argument(
        "--against", type=Path, metavar="SRC", help="Only the CPU figures, against the earlier release in SRC."
    )
    args = parser.parse_args()
    if args.against is not None:
        print(table([row for b in args.backends for row in measure_against(b, args.repeats, args.against.resolve())]))
    elif args.cpu_only:
        print(table([row for b in args.backends for row in measure_cpu(b, args.repeats, args.busy)]))
    else:
        print(table(rows(args.backends, args.repeats, args.busy)))


if __name__ == "__main__":
    main()
