"""Do tasks still reproduce? The gold agent replays each task's solution through the runner, and
what it obtained is compared with what the task expects: the answer (per key, within the scoring
tolerance), every landmark, and the entrypoint's run. Shared by ``super-bench doctor`` (task rot)
and by ``construct mask``, which keeps only the Masked tasks that reproduce.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from super_bench.environment import EnvConfig
from super_bench.runner.config import AgentChoice, Reporter, RunConfig
from super_bench.runner.results import TaskResult
from super_bench.runner.run import run
from super_bench.sandbox import SandboxConfig
from super_bench.scoring.answer import score_answer
from super_bench.tasks.model import Task
from super_bench.trajectory import Step, Trajectory

OUTPUT_TAIL = 1500  # characters of a failing cell's output in a report
_FAILED = ("error", "kernel_died", "interrupted", "timeout", "invalid")  # "invalid": an edit that could not be made
# A gold run's entrypoint must run at least this many times the task's min_runtime: a threshold the gold
# run only just clears fails on a faster machine, or once the harness's own overhead shrinks.
MIN_RUNTIME_MARGIN = 2.0


@dataclass
class GoldCheck:
    """How one task's gold solution fared."""

    task_id: str
    status: str  # reproduces, rot (the run finished but differs), error (the run itself failed), no solution
    problems: list[str] = field(default_factory=list)  # what differs: answer keys, landmarks, entrypoint
    failed_cell: str | None = None  # the first cell that failed, with the tail of its output
    failed_pre_executed: list[int] = field(default_factory=list)  # step indices of failed pre-executed cells

    @property
    def reproduces(self) -> bool:
        return self.status == "reproduces"


def gold_env(
    *,
    sandbox: SandboxConfig | None = None,
    cell_timeout: float = EnvConfig.model_fields["cell_timeout"].default,
    max_compute: float | None = EnvConfig.model_fields["max_compute"].default,
) -> EnvConfig:
    """The environment of gold runs: no limit on steps, since a solution has the cells it has."""
    return EnvConfig(
        cell_timeout=cell_timeout, max_compute=max_compute, max_steps=None, sandbox=sandbox or SandboxConfig()
    )


def check_gold(
    tasks: list[Task],
    out: Path,
    *,
    env: EnvConfig | None = None,
    reporter: Reporter | None = None,
) -> list[GoldCheck]:
    """Run the gold solutions of ``tasks`` (their runs go to ``out``; a rerun resumes) and compare."""
    runnable = [t for t in tasks if t.solution]
    checks = {t.task_id: GoldCheck(t.task_id, "no solution") for t in tasks if not t.solution}
    if runnable:
        outcome = run(
            RunConfig(agent=AgentChoice(name="gold"), out=out, env=env or gold_env()), tasks=runnable, reporter=reporter
        )
        results = {r.task_id: r for r in outcome.results}
        for task in runnable:
            result = results[task.task_id]
            trajectory = Trajectory.load(outcome.run_dir.path / result.trajectory) if result.trajectory else None
            checks[task.task_id] = compare(task, result, trajectory)
    return [checks[t.task_id] for t in tasks]


def compare(task: Task, result: TaskResult, trajectory: Trajectory | None) -> GoldCheck:
    """What the gold run obtained against what the task expects."""
    check = GoldCheck(task.task_id, "reproduces")
    if result.status != "completed":
        check.status = "error"
        check.problems.append(f"the run failed ({result.status}): {(result.error or '').strip()[-OUTPUT_TAIL:]}")
    if task.answer is not None and result.metrics.output_match != 1.0:
        check.problems.extend(answer_diff(task.answer, result.submission))
    landmark_steps = result.details.get("landmark_steps") or [None] * len(task.landmarks)
    for pattern, step in zip(task.landmarks, landmark_steps):
        if step is None:
            check.problems.append(f"landmark not found: {pattern}")
    if task.entrypoint and result.metrics.entrypoint != 1.0:
        runs = result.details.get("entrypoint_runs") or []
        why = "; ".join(f"step {r['step_index']}: {r['reason']}" for r in runs) or "no cell ran it"
        check.problems.append(f"the entrypoint {task.entrypoint} did not run successfully ({why})")
    elif task.entrypoint:
        check.problems.extend(min_runtime_problems(task, result))
    if trajectory is not None:
        failed = [s for s in trajectory.steps if _failed(s)]
        check.failed_pre_executed = [s.index for s in failed if s.pre_executed]
        if failed:
            check.failed_cell = _describe(failed[0])
    if check.problems and check.status == "reproduces":
        check.status = "rot"
    return check


def min_runtime_problems(task: Task, result: TaskResult) -> list[str]:
    """A problem where the entrypoint's successful runs cleared the task's ``min_runtime`` by too little."""
    runs = result.details.get("entrypoint_runs") or []
    longest = max((float(r["duration"]) for r in runs if r.get("success")), default=None)
    needed = MIN_RUNTIME_MARGIN * task.effective_min_runtime
    if longest is None or longest >= needed:
        return []
    return [
        f"the entrypoint {task.entrypoint} ran {longest:.2f} s, less than {MIN_RUNTIME_MARGIN:g}x the task's "
        f"min_runtime of {task.effective_min_runtime:g} s: a faster machine may fail it (lower min_runtime)"
    ]


def answer_diff(gold: Any, submitted: Any) -> list[str]:
    """One line per part of the answer that does not match: ``f1: gold 0.75, obtained 0.61``."""
    if submitted is None:
        return [f"answer: gold {json.dumps(gold)}, nothing was submitted"]
    parts: list[str] = []
    if isinstance(gold, dict) and isinstance(submitted, dict):
        parts = [
            f"answer[{key!r}]: gold {json.dumps(value)}, obtained "
            + (json.dumps(submitted[key]) if key in submitted else "nothing (missing key)")
            for key, value in gold.items()
            if score_answer(submitted.get(key), value) < 1.0
        ]
    elif isinstance(gold, list) and isinstance(submitted, list) and len(gold) == len(submitted):
        parts = [
            f"answer[{i}]: gold {json.dumps(g)}, obtained {json.dumps(s)}"
            for i, (g, s) in enumerate(zip(gold, submitted))
            if score_answer(s, g) < 1.0
        ]
    return parts or [f"answer: gold {json.dumps(gold)}, obtained {json.dumps(submitted)}"]


def _failed(step: Step) -> bool:
    if step.action.type not in ("execute", "edit"):
        return False
    return step.outcome in _FAILED or step.exit_code not in (None, 0)


def _describe(step: Step) -> str:
    content = str(step.action.content or "").strip()
    first = content.splitlines()[0] if content else ""
    kind = "pre-executed cell" if step.pre_executed else "cell"
    status = step.outcome if step.outcome != "ok" else f"exit status {step.exit_code}"
    tail = step.raw_output.strip()[-OUTPUT_TAIL:]
    return f"{kind} {step.index} ({first[:80]!r}) failed ({status}); its output ends with:\n{tail}"
