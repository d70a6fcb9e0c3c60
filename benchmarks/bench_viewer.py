"""How the viewer scales: a synthetic run of 800 tasks and about 100 MB of trajectories.

Measures the time to build the page and its size, then, where Chromium and playwright are installed,
the time until the task table is shown, to open the largest task, and to sort and filter the table.

    python benchmarks/bench_viewer.py [--tasks 800] [--megabytes 100] [--keep DIR]
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

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


def make_run(root: Path, n_tasks: int, megabytes: float, seed: int = 0) -> Path:
    rng = random.Random(seed)
    run_dir = RunDir(root)
    run_dir.create()
    per_task = megabytes * 1e6 / n_tasks
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    tasks, results = [], []
    for t in range(n_tasks):
        task_id = f"repo{t // 4}_{['data', 'goal', 'issue', 'configuration,cpu'][t % 4]}"
        n_steps = rng.randint(10, 100)
        # Most outputs are short; a few are huge, as pip logs and training runs are.
        weights = [rng.paretovariate(1.2) for _ in range(n_steps)]
        scale = per_task / sum(weights)
        steps = []
        clock = start
        for i, weight in enumerate(weights):
            output = log_text(rng, int(weight * scale))
            if i == n_steps // 2:
                output = output[: len(output) // 2] + "\n*** Epoch 1 finished ***\n" + output[len(output) // 2 :]
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
        trajectory = Trajectory(task_id=task_id, query=f"Train {task_id}.", steps=steps, started_at=start)
        trajectory.submitted, trajectory.submission = True, {"acc": round(rng.random(), 2)}
        path = trajectory.save(run_dir.task_dir(task_id), notebook=False)
        tasks.append(Task(task_id=task_id, query=trajectory.query, task_set="masked", answer={"acc": 0.5},
                          landmarks=[r"Epoch \d+ finished", "never printed"]))
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=800)
    parser.add_argument("--megabytes", type=float, default=100.0)
    parser.add_argument("--keep", type=Path, help="Keep the run and page in this directory.")
    args = parser.parse_args()
    from super_bench.report.viewer import build_view

    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-viewer-"))
    try:
        t0 = time.perf_counter()
        run = make_run(root / "run", args.tasks, args.megabytes)
        size = sum(p.stat().st_size for p in (run / "tasks").rglob("trajectory.json"))
        print(f"run: {args.tasks} tasks, {size / 1e6:.0f} MB of trajectory.json, made in {time.perf_counter() - t0:.1f} s")
        t0 = time.perf_counter()
        page = build_view(run, root / "view.html")
        print(f"view: built in {time.perf_counter() - t0:.1f} s, {page.stat().st_size / 1e6:.1f} MB")
        browse(page)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


def browse(page: Path) -> None:
    chromium = shutil.which("chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        chromium = None
    if chromium is None:
        print("browser: skipped (needs chromium and playwright)")
        return
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=flags)
        tab = browser.new_page()
        t0 = time.perf_counter()
        tab.goto(page.resolve().as_uri())
        tab.wait_for_selector("#tasks tbody tr")
        print(f"browser: table of {tab.locator('#tasks tbody tr').count()} tasks shown {time.perf_counter() - t0:.2f} s after opening")
        t0 = time.perf_counter()
        tab.click("#tasks th[data-col=steps]")
        tab.wait_for_selector("#tasks th[data-col=steps][aria-sort=descending]")
        print(f"browser: sorted by steps in {time.perf_counter() - t0:.2f} s")
        t0 = time.perf_counter()
        tab.fill("#filters input[type=search]", "repo1")
        print(f"browser: filtered ({tab.locator('#count').inner_text()}) in {time.perf_counter() - t0:.2f} s")
        tab.fill("#filters input[type=search]", "")
        longest = tab.locator("#tasks tbody tr").first.get_attribute("data-task")
        t0 = time.perf_counter()
        tab.locator("#tasks tbody tr").first.click()
        tab.wait_for_selector("#task-view .step")
        steps = tab.locator("#task-view .step").count()
        marks = tab.locator("mark.lm").count()
        print(f"browser: opened {longest} ({steps} steps, {marks} landmark match) in {time.perf_counter() - t0:.2f} s")
        browser.close()


if __name__ == "__main__":
    main()
