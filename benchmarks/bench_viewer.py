"""How the viewer scales: a synthetic run of 800 tasks and about 100 MB of trajectories.

Measures the time to build the page and its size, then, where Chromium and playwright are installed,
the time until the task table is shown, to open the largest task, and to sort and filter the table.

    python benchmarks/bench_viewer.py [--tasks 800] [--megabytes 100] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from common import Row, seconds, table

from super_bench.actions import Action
from super_bench.runner.results import TaskResult, summarize
from super_bench.runner.rundir import RunDir
from super_bench.scoring import Metrics
from super_bench.tasks.model import Task
from super_bench.trajectory import Step, Trajectory, Usage


def log_text(rng: random.Random, size: int) -> str:
    """Training-log-like text of about ``size`` characters."""
    lines, total, step = [], 0, 0
    while total < size:
        step += 1
        line = (
            f"[{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}] epoch {step // 50} step {step} "
            f"loss {rng.random():.4f} lr {rng.random() * 1e-3:.2e} it/s {rng.uniform(1, 9):.2f}"
        )
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)


def printed_answer(rng: random.Random) -> dict[str, float]:
    """An accuracy of two decimals."""
    return {"acc": round(rng.random(), 2)}


def make_run(
    root: Path,
    n_tasks: int,
    megabytes: float,
    seed: int = 0,
    answer: Callable[[random.Random], Any] = printed_answer,
    shown: bool = True,
) -> Path:
    """A run directory of ``n_tasks`` trajectories of training logs, ``megabytes`` in all, each submitting
    ``answer(rng)``; where ``shown``, the middle step's output prints it (as an evaluation after training
    does), beside the landmark line."""
    rng = random.Random(seed)
    run_dir = RunDir(root)
    run_dir.create()
    per_task = megabytes * 1e6 / n_tasks
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    tasks, results = [], []
    for t in range(n_tasks):
        task_id = f"repo{t // 4}_{['data', 'goal', 'issue', 'configuration,cpu'][t % 4]}"
        n_steps = rng.randint(10, 100)
        submission = answer(rng)
        # Most outputs are short; a few are huge, as pip logs and training runs are.
        weights = [rng.paretovariate(1.2) for _ in range(n_steps)]
        scale = per_task / sum(weights)
        steps = []
        clock = start
        for i, weight in enumerate(weights):
            output = log_text(rng, int(weight * scale))
            if i == n_steps // 2:
                finished = "\n*** Epoch 1 finished ***\n" + (f"eval: {json.dumps(submission)}\n" if shown else "")
                output = output[: len(output) // 2] + finished + output[len(output) // 2 :]
            steps.append(
                Step(
                    index=i,
                    thought=f"Step {i}: looking at the output and deciding what to run next.",
                    action=Action.execute(f"!python train.py --epochs 1 --seed {i}"),
                    observation=output,
                    pre_executed=i < 3,
                    start_time=clock,
                    end_time=clock + timedelta(seconds=weight),
                )
            )
            clock += timedelta(seconds=weight + 1)
        steps.append(Step(index=n_steps, action=Action.submit(submission), start_time=clock, end_time=clock))
        trajectory = Trajectory(task_id=task_id, query=f"Train {task_id}.", steps=steps, started_at=start)
        trajectory.submitted, trajectory.submission = True, submission
        path = trajectory.save(run_dir.task_dir(task_id))
        tasks.append(
            Task(
                task_id=task_id,
                query=trajectory.query,
                task_set="masked",
                answer={"acc": 0.5},
                landmarks=[r"Epoch \d+ finished", "never printed"],
            )
        )
        results.append(
            TaskResult(
                task_id=task_id,
                task_set="masked",
                status="completed",
                stop_reason="submitted",
                metrics=Metrics(output_match=float(rng.random() < 0.4), landmarks=0.5, submitted=1.0),
                submission=trajectory.submission,
                usage=Usage(model_calls=n_steps, cost=rng.random()),
                n_steps=n_steps,
                wall_time=(clock - start).total_seconds(),
                trajectory=str(path.relative_to(root)),
            )
        )
    run_dir.write_tasks(tasks)
    run_dir.write_results(results)
    run_dir.write_summary(summarize(results))
    return root


def rows(n_tasks: int = 800, megabytes: float = 100.0, keep: Path | None = None) -> list[Row]:
    from super_bench.report.viewer import build_view

    root = keep or Path(tempfile.mkdtemp(prefix="bench-viewer-"))
    where = f"{n_tasks} tasks"
    try:
        run = make_run(root / "run", n_tasks, megabytes)
        size = sum(p.stat().st_size for p in (run / "tasks").rglob("trajectory.json"))
        where += f", {size / 1e6:.0f} MB of trajectories"
        start = time.perf_counter()
        page = build_view(run, root / "view.html")
        built = time.perf_counter() - start
        found = [Row("viewer", where, f"page built in {seconds(built)}, {page.stat().st_size / 1e6:.1f} MB")]
        found += [Row("viewer", f"{where}, browser", f"{what}: {seconds(took)}") for what, took in browse(page)]
        return found
    finally:
        if keep is None:
            shutil.rmtree(root, ignore_errors=True)


def browse(page: Path) -> list[tuple[str, float]]:
    """The time of each thing a user does first in the page, in headless Chromium."""
    chromium = shutil.which("chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        chromium = None
    if chromium is None:
        print("browser: skipped (needs chromium and playwright)", file=sys.stderr)
        return []
    found = []
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=flags)
        tab = browser.new_page()
        start = time.perf_counter()
        tab.goto(page.resolve().as_uri())
        tab.wait_for_selector("#tasks tbody tr")
        found.append((f"table of {tab.locator('#tasks tbody tr').count()} tasks shown", time.perf_counter() - start))
        start = time.perf_counter()
        tab.click("#tasks th[data-col=steps]")
        tab.wait_for_selector("#tasks th[data-col=steps][aria-sort=descending]")
        found.append(("sorted by steps", time.perf_counter() - start))
        start = time.perf_counter()
        tab.fill("#filters input[type=search]", "repo1")
        found.append((f"filtered ({tab.locator('#count').inner_text()})", time.perf_counter() - start))
        tab.fill("#filters input[type=search]", "")
        start = time.perf_counter()
        tab.locator("#tasks tbody tr").first.click()
        tab.wait_for_selector("#task-view .step")
        steps = tab.locator("#task-view .step").count()
        found.append((f"the longest task opened ({steps} steps)", time.perf_counter() - start))
        browser.close()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=800)
    parser.add_argument("--megabytes", type=float, default=100.0)
    parser.add_argument("--keep", type=Path, help="Keep the run and page in this directory.")
    args = parser.parse_args()
    print(table(rows(args.tasks, args.megabytes, args.keep)))


if __name__ == "__main__":
    main()
