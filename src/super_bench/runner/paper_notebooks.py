"""The SUPER paper's published trajectories: notebooks written by the reference harness, read back
into our ``Trajectory``.

Both published styles share one layout: a ``### Query`` cell, the agent's prompt (``### Prompt`` for
ReAct-SUPER; ``### System Prompt``, first, for SWE-agent), then per step a ``### Step N`` header,
``Execution Start time: HH:MM:SS, End time: HH:MM:SS (duration: N seconds)``, ``**Thought**: ...``,
``**Action (TYPE)**:`` and a code cell holding the action, whose output is the observation.

How the notebook's records map onto ours:

- ReAct-SUPER's ``execute``, ``edit``, ``submit``, ``interrupt`` and ``continue_wait`` are our action
  types. Any other label (empty for an unparsable reply, ``exception`` when the harness stopped the
  run, ``continue``, free text) becomes an ``invalid`` step that keeps the label in
  ``metadata["notebook_action"]``.
- SWE-agent's plain cells (``None``) are ``execute`` steps; its commands (``open``, ``goto``,
  ``edit 12:14 ... end_of_edit``, ``search_dir``, ...) are ``execute`` steps too, since that is what
  they were to the notebook, with the command in ``metadata["notebook_action"]``; ``submit <json>``
  is a submission; the closing ``exit_context`` / ``exit_max_compute_time`` cells are ``invalid``
  steps that give the stop reason.
- Pre-executed steps (Masked) have the thought ``[pre-executed by user]`` or ``EXECUTED BY USER``;
  SWE-agent's pre-executed edits (``EDITING `path. CHANGING: ... TO: ...``) become SUPER edits.
- Submissions in Python syntax (``{'acc': 0.5}``, ``None``) are read as the values they spell; the
  text itself is kept in the submit step's metadata (``answer_literal``) and is what scoring reads,
  so that a literal with integer keys (``{22896: 9}``) scores the same after it is saved as JSON.
- The notebooks record times of day only: steps are dated from ``IMPORT_DATE`` (UTC), a day is added
  where the clock wraps past midnight, and a step's end is its start plus the recorded duration.
  Steps with no recorded time (SWE-agent's pre-executed ones) are marked ``untimed``, last 0 s and take
  the time of a timed neighbour (the previous step's end; before any timed step, the first timed step's
  start), so that they invent no time: the trajectory starts at its first timed step, and a notebook
  with no timed step at all has no measured time (its waste is unknown).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Literal

from super_bench._files import read_regular
from super_bench.actions import Action
from super_bench.errors import TrajectoryImportError
from super_bench.reading import SWE_COMMANDS
from super_bench.scoring.submission import ANSWER_LITERAL, json_safe, parse_answer
from super_bench.trajectory import RECORDED_FROM, UNTIMED, Step, StepOutcome, StopReason, Trajectory

Style = Literal["react-super", "swe-agent"]
IMPORT_DATE = datetime(1970, 1, 1, tzinfo=timezone.utc)

_STEP = re.compile(r"### Step (\d+)\s*$")
_TIMING = re.compile(
    r"Execution Start time: (\d\d):(\d\d):(\d\d), End time: (\d\d):(\d\d):(\d\d) \(duration: ([\d.]+) seconds\)"
)
_THOUGHT = "**Thought**:"
_ACTION = re.compile(r"\*\*Action \((.*)\)\*\*:\s*$", re.DOTALL)
_PRE_EXECUTED = ("[pre-executed by user]", "EXECUTED BY USER")
_REACT_TYPES = {"execute", "edit", "submit", "interrupt", "continue_wait"}
_STOPS: dict[str, StopReason] = {
    "Total context tokens exceeded.": "max_tokens",
    "Total compute time exceeded.": "max_compute",
    "exit_context": "max_tokens",
    "exit_max_compute_time": "max_compute",
    "exit_cost": "max_cost",
}
_TIMEOUT_NOTE = "Your command has already run for"
_SWE_EDIT = re.compile(
    r"EDITING `(?P<path>[^\n]*?)\. CHANGING:\n\n\n(?P<before>.*)\n\n\nTO:\n\n\n(?P<after>.*)", re.DOTALL
)


@dataclass
class NotebookStep:
    """One ``### Step`` section as written in the notebook."""

    number: int
    clock: tuple[int, int, float] | None = None  # start and end as seconds of the day, duration
    thought: str | None = None
    label: str | None = None  # the TYPE of ``**Action (TYPE)**:``
    code: str = ""
    output: str = ""


@dataclass
class Notebook:
    style: Style
    query: str
    prompt: str | None
    steps: list[NotebookStep]


def read_notebook(path: Path) -> Notebook:
    """Parse a published ``history.ipynb``; a notebook in neither style raises TrajectoryImportError."""
    try:
        data = json.loads(read_regular(path).decode("utf-8"))
        cells = data["cells"]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as e:
        raise TrajectoryImportError(f"{path}: not a readable notebook ({e})") from e
    query: str | None = None
    prompt: str | None = None
    style: Style | None = None
    steps: list[NotebookStep] = []
    for number, cell in enumerate(cells, 1):
        source = _text(cell.get("source", ""))
        where = f"{path}, cell {number}"
        if cell.get("cell_type") == "code":
            if not steps:
                raise TrajectoryImportError(f"{where}: a code cell before the first '### Step' header")
            step = steps[-1]
            step.code, step.output = source, _outputs(cell.get("outputs", []))
            continue
        head, _, rest = source.partition("\n")
        if match := _STEP.match(head):
            steps.append(NotebookStep(number=int(match.group(1))))
        elif head.startswith("### Query"):
            query = rest.strip()
        elif head.startswith("### System Prompt"):
            style, prompt = "swe-agent", rest
        elif head.startswith("### Prompt"):
            style, prompt = "react-super", rest
        elif not steps:
            continue  # any other preamble cell
        elif match := _TIMING.match(source):
            h0, m0, s0, h1, m1, s1 = (int(g) for g in match.groups()[:6])
            steps[-1].clock = (h0 * 3600 + m0 * 60 + s0, h1 * 3600 + m1 * 60 + s1, float(match.group(7)))
        elif source.startswith(_THOUGHT):
            steps[-1].thought = source[len(_THOUGHT) :].strip()
        elif match := _ACTION.match(source):
            steps[-1].label = match.group(1)
        else:
            raise TrajectoryImportError(f"{where}: unexpected cell in step {steps[-1].number}: {source[:80]!r}")
    if query is None:
        raise TrajectoryImportError(f"{path}: no '### Query' cell; not a SUPER trajectory notebook")
    if style is None:
        raise TrajectoryImportError(f"{path}: no '### Prompt' or '### System Prompt' cell; unknown agent style")
    return Notebook(style=style, query=query, prompt=prompt, steps=steps)


def notebook_trajectory(path: Path, task_id: str, *, model: str | None = None) -> Trajectory:
    """The trajectory recorded in a published notebook."""
    notebook = read_notebook(path)
    trajectory = Trajectory(
        task_id=task_id,
        query=notebook.query,
        agent=notebook.style,
        model=model,
        started_at=IMPORT_DATE,
        metadata={RECORDED_FROM: path.name, "style": notebook.style, "times": "time of day only"},
    )
    clock = _Clock()
    for index, raw in enumerate(notebook.steps):
        step, stop = _step(index, raw, notebook.style, clock)
        trajectory.steps.append(step)
        if stop is not None:
            trajectory.stop_reason = stop
        elif step.action.type == "submit":
            trajectory.stop_reason, trajectory.submitted = "submitted", True
            trajectory.submission = step.action.content
    if trajectory.stop_reason is None:
        trajectory.stop_reason = "agent_stopped"
    first = next((step.start_time for step in trajectory.steps if step.timed), IMPORT_DATE)
    for step in trajectory.steps:  # untimed steps before the first timed one: no invented midnight
        if step.timed:
            break
        step.start_time = step.end_time = first
    trajectory.started_at = trajectory.steps[0].start_time if trajectory.steps else IMPORT_DATE
    trajectory.finished_at = trajectory.steps[-1].end_time if trajectory.steps else IMPORT_DATE
    return trajectory


def _step(index: int, raw: NotebookStep, style: Style, clock: _Clock) -> tuple[Step, StopReason | None]:
    pre_executed = raw.thought in _PRE_EXECUTED
    thought = None if pre_executed or not raw.thought else raw.thought
    action, label, stop, literal = _action(raw, style)
    outcome: StepOutcome = "ok"
    if stop is not None or (style == "react-super" and label is not None):
        outcome = "invalid"  # nothing ran: an unparsable reply, or the harness ending the run
    elif _TIMEOUT_NOTE in raw.output:
        outcome = "timeout"
    start, end = clock.times(raw.clock)
    metadata: dict[str, Any] = {"notebook_step": raw.number}
    if label is not None:
        metadata["notebook_action"] = label
    if literal is not None:
        metadata[ANSWER_LITERAL] = literal
    if raw.clock is None:
        metadata[UNTIMED] = True
    step = Step(
        index=index,
        thought=thought,
        action=action,
        observation=raw.output,
        outcome=outcome,
        pre_executed=pre_executed,
        start_time=start,
        end_time=end,
        metadata=metadata,
    )
    return step, stop


def _action(raw: NotebookStep, style: Style) -> tuple[Action, str | None, StopReason | None, str | None]:
    """Our action, the notebook's own label where it is not one of our types, any stop it caused, and
    a submission's text as written."""
    label, code = raw.label or "", raw.code
    if style == "react-super":
        if label == "submit":
            return _submit(code)
        if label in _REACT_TYPES:
            content = None if label in ("interrupt", "continue_wait") else code
            return Action(type=label, content=content), None, None, None
        return Action.execute(code), label, _STOPS.get(code.strip()) if label == "exception" else None, None
    command = code.split(None, 1)[0] if code.strip() else ""
    if label == "submit" or (label == "None" and command == "submit"):
        return _submit(code.strip()[len("submit") :])
    if label in SWE_COMMANDS:
        return Action.execute(code), label, None, None
    if code.strip() in _STOPS:
        return Action.execute(code), code.strip(), _STOPS[code.strip()], None
    if edit := _SWE_EDIT.match(code):
        before, after = edit.group("before"), edit.group("after")
        content = f"{edit.group('path')}\n<<<BEFORE_EDIT>>>\n{before}\n<<<AFTER_EDIT>>>\n{after}"
        return Action(type="edit", content=content), None, None, None
    return Action.execute(code), None if label == "None" else label, None, None


def _submit(text: str) -> tuple[Action, None, None, str]:
    return Action.submit(json_safe(parse_answer(text))), None, None, text.strip()


class _Clock:
    """Turns times of day into datetimes, moving on a day whenever the clock goes backwards."""

    def __init__(self) -> None:
        self.day = 0
        self.last = 0.0
        self.end = IMPORT_DATE

    def times(self, clock: tuple[int, int, float] | None) -> tuple[datetime, datetime]:
        if clock is None:
            return self.end, self.end
        start_s, _, duration = clock
        if start_s < self.last:
            self.day += 1
        self.last = start_s
        start = IMPORT_DATE + timedelta(days=self.day, seconds=start_s)
        self.end = start + timedelta(seconds=duration)
        return start, self.end


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def _outputs(outputs: list[dict[str, Any]]) -> str:
    parts = []
    for output in outputs:
        kind = output.get("output_type")
        if kind == "stream":
            parts.append(_text(output.get("text", "")))
        elif kind in ("execute_result", "display_data"):
            parts.append(_text(output.get("data", {}).get("text/plain", "")))
        elif kind == "error":
            parts.append("\n".join(output.get("traceback") or [f"{output.get('ename')}: {output.get('evalue')}"]))
    return "".join(parts)
