"""A full disk: the run directory's file system fills up during a run. The run must stop as a Ctrl-C stops it,
with one error line and exit status 74, every finished task's row whole (its trajectory in place), and, once there
is room again, resume to the end with every row equal to a clean run's (docs/runner.md#a-full-disk).

Runs the demo Expert set ``--epochs`` times over (36 rows by default) with 2 workers into a run directory on a
file system of its own (a tmpfs of ``--size``, 50 MB by default; mounting it needs root), fills that file system
once ``--after`` rows are written (6 by default), then frees it and resumes. A clean run of the same settings, on
the ordinary disk, gives the rows to compare with.

    python benchmarks/bench_full_disk.py [--epochs 4] [--after 6] [--size 50m] [--sandbox local]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import Row, scored_rows, super_bench, table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the test suite's disk filler

from tests.support.disks import fill

UNWRITABLE = 74  # the documented exit status of a run whose run directory cannot be written


def rows(
    epochs: int, after: int, size: str, sandbox: str, task_ids: tuple[str, ...] = (), workers: int = 2
) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="bench-full-disk-") as folder:
        base = Path(folder)
        command = [*super_bench(), "run", "--sandbox", sandbox, "--workers", str(workers), "--epochs", str(epochs)]
        if task_ids:
            command += ["--task-ids", *task_ids]
        clean = base / "clean"
        subprocess.run([*command, "--out", str(clean)], capture_output=True, check=True)
        disk = base / "disk"
        disk.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(disk)], check=True)
        try:
            return _fill_and_resume(command, disk / "run", disk, after, scored_rows(clean))
        finally:
            subprocess.run(["umount", "-l", str(disk)], check=False)


def _fill_and_resume(
    command: list[str], out: Path, disk: Path, after: int, clean: dict[tuple[str, int], object]
) -> list[Row]:
    results = out / "results.jsonl"
    with subprocess.Popen([*command, "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as run:
        while run.poll() is None and _lines(results) < after:
            time.sleep(0.05)
        written = _lines(results)
        fill(disk)
        _, raw = run.communicate(timeout=1800)
    stderr = raw.decode(errors="replace")
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    lines = results.read_bytes().splitlines(keepends=True)
    whole = sum(line.endswith(b"\n") and _trajectory_kept(out, line) for line in lines)
    kept_line = next((line for line in stderr.splitlines() if " task(s) finished, kept in " in line), "")
    (disk / "filler").unlink()
    resumed = subprocess.run([*command, "--out", str(out)], capture_output=True, text=True)
    final = scored_rows(out) if results.exists() else {}
    return [
        Row(
            "full disk",
            f"filled after {written} rows: exit status",
            str(run.returncode),
            target=str(UNWRITABLE),
            met=run.returncode == UNWRITABLE,
        ),
        Row(
            "full disk",
            "error lines (a traceback?)",
            f"{len(errors)} ({'yes' if 'Traceback' in stderr else 'no'})",
            target="1 (no)",
            met=len(errors) == 1 and "Traceback" not in stderr,
        ),
        Row("full disk", "the error", errors[0] if len(errors) == 1 else " / ".join(errors)),
        Row(
            "full disk",
            "rows kept: whole with their trajectory / written / said kept",
            f"{whole} / {len(lines)} / {kept_line.split(' of ', 1)[0] or '?'}",
            met=whole == len(lines) and kept_line.startswith(f"{len(lines)} of "),
        ),
        Row(
            "full disk",
            "resume: exit status, rows (clean run)",
            f"{resumed.returncode}, {len(final)} ({len(clean)})",
            met=resumed.returncode == 0 and len(final) == len(clean),
        ),
        Row(
            "full disk",
            "rows equal to the clean run's",
            str(sum(final.get(k) == v for k, v in clean.items())),
            target=str(len(clean)),
            met=final == clean,
        ),
        Row(
            "full disk",
            "reserve left after the resume",
            "yes" if (out / ".reserve").exists() else "no",
            met=not (out / ".reserve").exists(),
        ),
    ]


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except OSError:
        return 0


def _trajectory_kept(out: Path, line: bytes) -> bool:
    try:
        return (out / json.loads(line)["trajectory"]).is_file()
    except (ValueError, KeyError, TypeError):
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--after", type=int, default=6)
    parser.add_argument("--size", default="50m")
    parser.add_argument("--sandbox", default="local")
    args = parser.parse_args()
    print(table(rows(args.epochs, args.after, args.size, args.sandbox)))


if __name__ == "__main__":
    main()
