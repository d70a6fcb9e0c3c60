"""``analyze`` of one long trajectory: the time at N steps and at four times N (linear: about 4x), against the
target of docs/threat-model.md (4,000 steps in under 5 s; once quadratic, 8,000 steps took 58 s).

    python benchmarks/bench_analyze.py [STEPS]
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from statistics import median

from common import Row, seconds

from super_bench import Action, Step
from super_bench.runner.analyze import analyze_run
from super_bench.trajectory import Trajectory

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
# A failing install, a missing module, a training run that fails its own way, a print: each again and again.
OUTPUTS = [
    ("!pip install foo{i}", "ERROR: No matching distribution found for foo{i}", "error"),
    ("import mod{i}", "Traceback (most recent call last):\nModuleNotFoundError: No module named 'mod{i}'", "error"),
    ("!python train.py --seed {i}", "epoch 1\nRuntimeError: shape mismatch {i}", "error"),
    ("print({i})", "{i}", "ok"),
]


def episode(steps: int) -> Trajectory:
    recorded = []
    for i in range(steps):
        code, output, outcome = OUTPUTS[i % len(OUTPUTS)]
        recorded.append(
            Step(
                index=i,
                action=Action.execute(code.format(i=i)),
                observation=output.format(i=i),
                outcome=outcome,  # type: ignore[arg-type]
                start_time=T0 + timedelta(seconds=i),
                end_time=T0 + timedelta(seconds=i + 1),
            )
        )
    return Trajectory(task_id="long", query="run it", steps=recorded)


def run_dir(parent: Path, steps: int) -> Path:
    out = parent / f"run-{steps}"
    (out / "tasks" / "long").mkdir(parents=True)
    (out / "tasks" / "long" / "trajectory.json").write_text(episode(steps).model_dump_json())
    row = {"task_id": "long", "task_set": "expert", "status": "completed", "trajectory": "tasks/long/trajectory.json"}
    (out / "results.jsonl").write_text(json.dumps({**row, "metrics": {"output_match": 0.0, "landmarks": 0.0}}) + "\n")
    return out


def rows(steps: int = 4000, repeats: int = 3) -> list[Row]:
    times = []
    with tempfile.TemporaryDirectory() as parent:
        for n in (steps, 4 * steps):
            out = run_dir(Path(parent), n)
            runs = []
            for _ in range(repeats):
                start = time.perf_counter()
                outcome = analyze_run(out)
                runs.append(time.perf_counter() - start)
                assert outcome.results[0].failure is not None
            times.append(median(runs))
    growth = times[1] / times[0]
    target = 5.0 * steps / 4000
    return [
        Row(
            "analyze",
            f"one trajectory of {steps:,} steps, and 4x that",
            f"{seconds(times[0])} (4x the steps: {growth:.1f}x the time)",
            "",
            None,
            f"< {target:g} s; about 4x, not 16x",
            times[0] < target and growth < 8,
        )
    ]


if __name__ == "__main__":
    for row in rows(int(sys.argv[1]) if len(sys.argv) > 1 else 4000):
        print(row)
