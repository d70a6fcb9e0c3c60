"""``super-bench view``: one self-contained HTML file for a run that opens from disk with no network.

The page carries the summary and the task table as JSON, and each task's trajectory as gzip-compressed
JSON in its own inert ``<script>`` element, decoded only when that task is opened; observations are cut
to a head, a tail and a window around every landmark match, so a run of hundreds of tasks and 100 MB
of trajectories stays a file of a few megabytes that opens at once. Figures are embedded up to a
budget per task; the rest are counted, and stay in the trajectory.
"""

from __future__ import annotations

import base64
import gzip
import html
import json
import logging
import os
import re
from collections.abc import Callable, Sequence
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any, get_args

import regex
from pydantic import ValidationError

from super_bench._names import METRICS, MetricName, TaskStatus
from super_bench.analysis import CAUSES
from super_bench.divergence import DivergenceKind
from super_bench.errors import RunDirError
from super_bench.reading import read_trajectory
from super_bench.runner.results import TaskResult
from super_bench.runner.rundir import RunDir, inside
from super_bench.runner.verify_records import VerifyResult, read_rows, summarize_verification
from super_bench.scoring.landmarks import landmark_steps
from super_bench.scoring.provenance import PROVENANCE_STATUSES
from super_bench.tasks.model import Task, compile_landmark
from super_bench.trajectory import Step, StepOutcome, Trajectory, atomic_write

from .excerpts import Span, answer_rows, capped, excerpt, landmark_spans
from .runs import RunData, load_run

log = logging.getLogger(__name__)

THOUGHT_LIMIT = 4000
ACTION_HEAD, ACTION_TAIL = 6000, 2000
FIGURE_CHARS = 8_000_000  # base64 characters of figures embedded per task (a figure is some tens of thousands)
COLUMNS = ["task", "set", "category", "status", "stop", "steps", *METRICS, "answer", "cause", "cost", "time"]
REPRODUCED = {True: "yes", False: "no", None: "not checked"}
# The badge of each failure cause (docs/failure-analysis.md): the task's own shortfall is a warning, the rest bad.
_CAUSE_BADGES = {"wrong_result": "warn", "scoring_rule": "warn"}
_DIVERGENCE_BADGES = {"agent": "bad", "answer_not_reproduced": "bad"}
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


def build_view(
    run_path: Path,
    out: Path | None = None,
    progress: Callable[[int, int], None] | None = None,
    tasks: list[Task] | None = None,
) -> Path:
    """Write the viewer of the run at ``run_path`` (default ``RUN_DIR/view.html``) and return its path.

    ``tasks`` (gold answers and landmarks) default to the run's own ``tasks.jsonl``."""
    run = load_run(run_path)
    if tasks is not None:
        run.tasks = {t.task_id: t for t in tasks}
    out = out or run.path / "view.html"
    verification = {row.key: row for row in read_rows(RunDir(run.path))}
    payloads = []
    for k, result in enumerate(run.results):
        data = task_payload(run, result, verification.get(result.key))
        # "replace": a lone surrogate (possible in JSON read from disk) must not abort the whole page.
        raw = _json(data).encode("utf-8", "replace")
        blob = base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode("ascii")
        payloads.append(f'<script type="application/gzip+base64" id="t{k}">{blob}</script>')
        if progress is not None:
            progress(k + 1, len(run.results))
    page = page_data(run, verification)
    template = resources.files("super_bench.report").joinpath("static")
    parts = {
        "TITLE": html.escape(f"super-bench: {run.name}"),
        "CSS": template.joinpath("viewer.css").read_text(encoding="utf-8"),
        "JS": template.joinpath("viewer.js").read_text(encoding="utf-8"),
        "DATA": _json(page, ascii_only=True),
        "TASKS": "\n".join(payloads),
    }
    page_template = template.joinpath("viewer.html").read_text(encoding="utf-8")
    # One pass, so that nothing inserted is itself searched for placeholders.
    atomic_write(out, _PLACEHOLDER.sub(lambda m: parts[m.group(1)], page_template))
    return out


def page_data(run: RunData, verification: dict[tuple[str, int], VerifyResult] | None = None) -> dict[str, Any]:
    """What the page shows before any task is opened: the run, its summary and the task table (with a
    column of reproductions when the run was verified)."""
    summary = run.summary
    verification = verification or {}
    replayed = any(r.replay_divergence is not None for r in run.results)
    columns = COLUMNS + (["replay"] if replayed else []) + (["reproduced"] if verification else [])
    rows = []
    for k, r in enumerate(run.results):
        row: list[Any] = [
            r.task_id,
            r.task_set,
            ",".join(run.categories(r.task_id)),
            r.status,
            r.stop_reason or "",
            r.n_steps,
            *(getattr(r.metrics, m) for m in METRICS),
            _label(r.answer_provenance),
            _label(r.failure.cause if r.failure is not None else None),
            r.usage.cost,
            round(r.wall_time, 1),
        ]
        if replayed:
            row.append(_label(r.replay_divergence.kind if r.replay_divergence is not None else None))
        if verification:
            checked = verification.get(r.key)
            row.append(REPRODUCED[checked.reproduced] if checked is not None else "")
        rows.append([*row, k])
    reproduced = summarize_verification(list(verification.values())) if verification else None
    return {
        "run": {
            "name": run.name,
            "path": str(run.path),
            "agent": run.agent,
            "model": run.model,
            "set": run.task_set,
            "primary": run.primary_metric,
            "mode": summary.mode,
            "created": run.manifest.created_at.isoformat() if run.manifest.created_at else None,
            "imported_from": run.manifest.imported_from,
            "has_gold": bool(run.tasks),
        },
        "generated": datetime.now().astimezone().isoformat(timespec="seconds"),
        "n_tasks": summary.n_tasks,
        "n_scored": summary.n_scored,
        "metrics": [{"name": m, **run.estimates[m].model_dump()} for m in METRICS],
        "status": summary.status_counts,
        "stop": summary.stop_reasons,
        "usage": summary.usage.model_dump(),
        "execution_time": summary.execution_time,
        "wall_time": run.wall_time,
        "waste": summary.waste.model_dump() if summary.waste is not None else None,
        "waited": summary.waited,
        "answer_observed": summary.answer_observed,
        "answer_given": summary.answer_given,
        "answers_traced": sum(r.in_means and r.answer_provenance is not None for r in run.results),
        "reproduced": reproduced.model_dump(mode="json") if reproduced is not None else None,
        "columns": columns,
        "rows": rows,
        "names": names(),
    }


def names() -> dict[str, Any]:
    """The names the page's script compares with, taken from the types that define them, so that the script
    never spells one itself; and the badge (good, warn, bad) of each value of the answer and reproduced
    columns."""
    submitted: MetricName = "submitted"
    completed: TaskStatus = "completed"
    ok: StepOutcome = "ok"
    return {
        "metrics": list(METRICS),
        "submitted": submitted,
        "completed": completed,
        "ok": ok,
        "answer": {_label(s): badge for s, badge in zip(PROVENANCE_STATUSES, ("good", "warn", "warn", "bad"))},
        "reproduced": dict(zip(REPRODUCED.values(), ("good", "bad", ""))),
        "cause": {_label(c): _CAUSE_BADGES.get(c, "bad") for c in CAUSES},
        "replay": {_label(k): _DIVERGENCE_BADGES.get(k, "warn") for k in get_args(DivergenceKind)},
    }


def _label(status: str | None) -> str:
    """A provenance status, cause or divergence as the table shows it: ``partly observed``; blank for none."""
    return (status or "").replace("_", " ")


def task_payload(run: RunData, result: TaskResult, verified: VerifyResult | None = None) -> dict[str, Any]:
    """Everything the page shows for one opened task."""
    task = run.tasks.get(result.task_id)
    data: dict[str, Any] = {
        "id": result.task_id,
        "status": result.status,
        "stop": result.stop_reason,
        "error": result.error,
        "metrics": result.metrics.model_dump(),
        "usage": result.usage.model_dump(),
        "wall_time": result.wall_time,
        "execution_time": result.execution_time,
        "waste": result.waste.model_dump() if result.waste is not None else None,
        "waited": result.waited,
        "node": result.node,
        "submission": result.submission,
        "entrypoint_runs": result.details.get("entrypoint_runs", []),
        # Rows scored before provenance existed have no such detail: the page says to re-score them.
        "provenance": result.details.get("provenance", False),
        "verified": verified.model_dump(mode="json", exclude={"schema_version"}) if verified is not None else None,
        "failure": result.failure.model_dump() if result.failure is not None else None,
        "divergence": result.replay_divergence.model_dump() if result.replay_divergence is not None else None,
    }
    trajectory = _load_trajectory(run, result)
    if isinstance(trajectory, str):
        data["load_error"] = trajectory
        trajectory = None
    if task is not None:
        data["gold"] = task.answer
        data["entrypoint"] = task.entrypoint
        if task.answer is not None:
            data["answer"] = answer_rows(result.submission, task.answer, result.submission is not None)
    found = _landmarks(task, result, trajectory)
    data["landmarks"] = [[p, s] for p, s in zip(task.landmarks, found)] if task is not None else []
    if trajectory is None:
        data["steps"] = []
        return data
    data.update(
        query=trajectory.query,
        agent=trajectory.agent,
        model=trajectory.model,
        started=trajectory.started_at.isoformat(),
        kernel_restarts=trajectory.kernel_restarts,
        recorded=trajectory.metadata.get("recorded_metrics"),
        times=trajectory.metadata.get("times"),
    )
    by_step: dict[int, list[tuple[int, regex.Pattern[str]]]] = {}
    for number, (pattern, step_index) in enumerate(zip(task.landmarks if task else [], found)):
        if step_index is not None:
            by_step.setdefault(step_index, []).append((number, compile_landmark(pattern)))
    shown = _answer_spans(data["provenance"])
    data["steps"] = [
        _step(step, trajectory.started_at, by_step.get(step.index, []), shown.get(step.index, []), deed.summary)
        for step, deed in zip(trajectory.steps, read_trajectory(trajectory))
    ]
    room = FIGURE_CHARS
    for step, entry in zip(trajectory.steps, data["steps"]):
        for figure in step.figures:
            if len(figure.data) > room:
                entry["figs_omitted"] = entry.get("figs_omitted", 0) + 1
            else:
                room -= len(figure.data)
                entry.setdefault("figs", []).append([figure.mime, figure.data])
    return data


def _answer_spans(provenance: Any) -> dict[int, list[Span]]:
    """Where each value of the answer was printed, by step: ``(start, end, field)``; at the agent's step that
    showed it, else at the given (pre-executed) cell that did."""
    spans: dict[int, list[Span]] = {}
    fields = provenance.get("fields", []) if isinstance(provenance, dict) else []
    for field in fields:
        step = field.get("step")
        step = step if step is not None else field.get("pre_executed_step")
        offset, text = field.get("offset"), field.get("text")
        if isinstance(step, int) and isinstance(offset, int) and isinstance(text, str):
            spans.setdefault(step, []).append((offset, offset + len(text), str(field.get("field") or "(answer)")))
    return spans


def _step(
    step: Step,
    start: datetime,
    patterns: list[tuple[int, regex.Pattern[str]]],
    answers: Sequence[Span] = (),
    did: str = "",
) -> dict[str, Any]:
    landmarks = landmark_spans(step.raw_output, patterns) if patterns else []
    # An answer's value is marked whole: a landmark that covers it (``'exact': 0.0``) is marked around it, not
    # over it, so that the page's pointer to the value lands on the print itself.
    spans = [*_around(landmarks, answers), *answers]
    content = step.action.content
    if isinstance(content, str):
        action_text: str | None = content
    elif content is None and step.action.type != "submit":  # interrupt, continue_wait: nothing to show
        action_text = None
    else:
        action_text = json.dumps(content, ensure_ascii=False, indent=1)
    entry: dict[str, Any] = {
        "i": step.index,
        "type": step.action.type,
        "label": step.metadata.get("notebook_action"),
        "did": did,  # what the step did, read in its agent's grammar (``reading``)
        "outcome": step.outcome,
        "exit": step.exit_code,
        "pre": step.pre_executed,
        "t": (step.start_time - start).total_seconds(),
        "clock": step.start_time.strftime("%H:%M:%S"),
        "dur": step.duration,
        "untimed": bool(step.metadata.get("untimed")),
        "thought": capped(step.thought, THOUGHT_LIMIT),
        "action": excerpt(action_text, head=ACTION_HEAD, tail=ACTION_TAIL) if action_text else None,
        "lm": [n for _, _, n in landmarks],
        "ans": [n for _, _, n in answers],
    }
    if step.output is None:
        entry["obs"] = excerpt(step.observation, spans)
    else:
        # The model saw a cleaned copy; landmarks were matched on the raw output, shown beside it.
        entry["obs"] = excerpt(step.observation)
        entry["raw"] = excerpt(step.output, spans)
    return entry


def _around(spans: Sequence[Span], holes: Sequence[Span]) -> list[Span]:
    """``spans`` with the ranges of ``holes`` cut out of them (a span cut in two where a hole lies inside it)."""
    pieces = list(spans)
    for hole_start, hole_end, _ in holes:
        cut: list[Span] = []
        for start, end, name in pieces:
            if end <= hole_start or start >= hole_end:
                cut.append((start, end, name))
                continue
            if start < hole_start:
                cut.append((start, hole_start, name))
            if end > hole_end:
                cut.append((hole_end, end, name))
        pieces = cut
    return pieces


def _landmarks(task: Task | None, result: TaskResult, trajectory: Trajectory | None) -> list[int | None]:
    """The step where each landmark first matched: from the scoring details, else found again."""
    if task is None or not task.landmarks:
        return []
    recorded = result.details.get("landmark_steps")
    if isinstance(recorded, list) and len(recorded) == len(task.landmarks):
        return recorded
    return landmark_steps(task.landmarks, trajectory.steps) if trajectory is not None else [None] * len(task.landmarks)


def _load_trajectory(run: RunData, result: TaskResult) -> Trajectory | str | None:
    """The task's trajectory; a message when it is unreadable; None when the run kept none."""
    if not result.trajectory:
        return None
    try:
        path = inside(run.path, result.trajectory)
    except RunDirError as e:
        log.warning("%s", e)
        return str(e)
    if path.is_dir() or not os.path.lexists(path):
        return None
    try:
        return Trajectory.load(path)  # a FIFO or a huge file is refused at once, and said so on the page
    except (OSError, ValidationError, ValueError) as e:
        log.warning("%s: unreadable trajectory: %s", path, e)
        return f"unreadable trajectory {path.name}: {e}"


def _json(data: Any, ascii_only: bool = False) -> str:
    """Compact JSON that is safe inside a <script> element: no "<" can close it or open a comment."""
    return json.dumps(data, ensure_ascii=ascii_only, separators=(",", ":"), default=str).replace("<", "\\u003c")
