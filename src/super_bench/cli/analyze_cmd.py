"""``super-bench analyze``."""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.command("analyze")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the counts and each failed task's cause as JSON.")
@click.option(
    "--judge",
    metavar="PROVIDER/NAME",
    help="Ask this model for a second opinion on each cause the rules found (optional; recorded as judge:MODEL).",
)
@click.option("--no-cache", is_flag=True, help="With --judge: do not use or fill the on-disk cache of model replies.")
def analyze_command(run_dir: Path, as_json: bool, judge: str | None, no_cache: bool) -> None:
    """Find why each task of a saved run failed: one primary cause per task that did not fully succeed
    (docs/failure-analysis.md), with the step and the line that show it.

    Reads the run's trajectories (any run directory, imported ones included), rewrites its results.jsonl
    and summary.json with the causes (the metrics as they were), and prints the counts per category and
    each failed task's evidence. Infrastructure failures and unscored rows get no cause. The rules are
    offline and deterministic; --judge adds a model's verdict, which may change a cause and says so.
    """
    from super_bench.cli._causes import causes_table, evidence_lines
    from super_bench.cli._display import console
    from super_bench.runner.analyze import analyze_run

    chat = None
    if judge is not None:
        from super_bench.models import ModelOptions, create_model

        chat = create_model(judge, ModelOptions(**({"cache": None} if no_cache else {})))
    outcome = analyze_run(run_dir, chat)
    summary = outcome.summary
    if as_json:
        tasks = [
            {"task_id": r.task_id, "epoch": r.epoch, **r.failure.model_dump()}
            for r in outcome.results
            if r.failure is not None
        ]
        data = {
            "failure_causes": summary.failure_causes,
            "failure_causes_by_category": summary.failure_causes_by_category,
            "tasks": tasks,
        }
        click.echo(json.dumps(data, indent=2))
        return
    failed = sum(summary.failure_causes.values())
    title = f"{outcome.run_dir.path}: {failed} of {summary.n_scored} scored task(s) failed, by primary cause"
    console.print(causes_table(summary, title))
    left_out = summary.n_tasks - summary.n_scored
    if left_out:
        console.print(f"  {left_out} row(s) not scored or failed on the infrastructure: no cause (not the agent's)")
    for line in evidence_lines(outcome.results):
        console.print(line)
    written = outcome.run_dir.path
    console.print(f"Wrote {written / 'results.jsonl'} and {written / 'summary.json'}")
