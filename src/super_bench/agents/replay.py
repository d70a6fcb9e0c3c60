"""The replay agent: performs a fixed list of actions, the same for every task.

``replay:FILE`` where FILE is a JSON list of ``{"type", "content"}`` actions (optionally with a
``thought``), or a saved ``trajectory.json`` whose agent steps are replayed; the invalid steps of an
imported trajectory are recorded as invalid again, not run. A replayed trajectory is compared with its
recording at the end: when the replay did not reproduce it (the submitted answer not shown again, or, for
a run that submitted nothing, not the same first error), the first step that diverged and its kind
(``divergence``) go into the trajectory's ``metadata.replay_divergence``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from super_bench.actions import Action
from super_bench.agents.base import AgentOptions, refuse_model
from super_bench.divergence import divergence, replayed_steps, same_first_error
from super_bench.errors import AgentError, SuperBenchError
from super_bench.scoring import submission_of, trace_answer
from super_bench.trajectory import Trajectory

if TYPE_CHECKING:
    from super_bench.environment import AgentEnv

# A trajectory.json holds every step's output (up to the episode's limit of kept output, in JSON's
# escapes), and parsing takes several times a file's size in memory: refuse what no run writes.
MAX_REPLAY_BYTES = 1 << 30


@dataclass(frozen=True)
class Replayed:
    """One action to replay; ``invalid`` holds the recorded observation of a step that was not a
    valid action (an imported trajectory's unreadable reply), replayed as invalid without running."""

    action: Action
    thought: str | None = None
    invalid: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


def load_actions(path: Path) -> list[Replayed]:
    """The actions of an action list or a trajectory file."""
    return _actions(path, _read(path))


def _read(path: Path) -> Any:
    try:
        size = path.stat().st_size
        if size > MAX_REPLAY_BYTES:
            raise AgentError(
                f"replay: {path} is {size / 2**20:,.0f} MiB, more than a replay file may be "
                f"({MAX_REPLAY_BYTES >> 20:,} MiB); keep only the actions, for example with "
                "jq '[.steps[] | select(.pre_executed | not) | {action, thought}]'"
            )
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except RecursionError:
        raise AgentError(f"replay: cannot read actions from {path}: its JSON is nested too deeply") from None
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise AgentError(f"replay: cannot read actions from {path}: {e}") from e
    return data


def _actions(path: Path, data: Any) -> list[Replayed]:
    if isinstance(data, dict) and isinstance(data.get("steps"), list):
        items = [s for s in data["steps"] if not s.get("pre_executed")]
    elif isinstance(data, list):
        items = data
    else:
        raise AgentError(f"replay: {path} must hold a JSON list of actions or a trajectory.json")
    replayed = []
    for i, item in enumerate(items):
        try:
            record = item if isinstance(item, dict) else {}
            action = Action.coerce(record.get("action", item) if "action" in record else item)
        except SuperBenchError as e:
            raise AgentError(f"replay: {path}, action {i}: {e}") from e
        thought = record.get("thought")
        if thought is not None and not isinstance(thought, str):
            raise AgentError(f"replay: {path}, action {i}: the thought must be text, not {type(thought).__name__}")
        recorded = record.get("metadata") or {}
        # An imported step that was no action of ours (its notebook label kept) never ran: it is
        # replayed as the invalid step it was, not as the placeholder cell that stands for it.
        if record.get("outcome") == "invalid" and isinstance(recorded, dict) and "notebook_action" in recorded:
            label = {"notebook_action": recorded["notebook_action"]}
            replayed.append(Replayed(action, thought, str(record.get("observation") or ""), label))
        else:
            replayed.append(Replayed(action, thought))
    return replayed


class ReplayAgent:
    name = "replay"

    def __init__(self, arg: str | None = None, options: AgentOptions | None = None) -> None:
        if not arg:
            raise AgentError("the replay agent needs a file: --agent replay:actions.json")
        refuse_model("replay", options)
        self.path = Path(arg).expanduser()
        data = _read(self.path)
        self.actions = _actions(self.path, data)
        self.recording = _recording(data)

    def run(self, env: AgentEnv) -> None:
        for item in self.actions:
            if env.done:
                break
            if item.invalid is not None:
                env.record_invalid(item.action, item.invalid, thought=item.thought, metadata=item.metadata)
            else:
                env.step(item.action, thought=item.thought)
        if self.recording is not None:
            found = _diverged(self.recording, env.trajectory)
            if found is not None:
                env.trajectory.metadata["replay_divergence"] = found


def _recording(data: Any) -> Trajectory | None:
    """The file as a recorded trajectory, to compare the replay with; None for a list of actions."""
    if not isinstance(data, dict) or "task_id" not in data:
        return None
    try:
        return Trajectory.model_validate(data)
    except ValidationError:
        return None  # replayable actions, but no recording whose outcomes can be trusted for a comparison


def _diverged(recording: Trajectory, replay: Trajectory) -> dict[str, Any] | None:
    recorded, replayed = replayed_steps(recording.steps), replayed_steps(replay.steps)
    submission = submission_of(recording)
    traced = trace_answer(submission, replay.steps)
    if traced is not None and traced.status is not None:
        same = traced.status == "observed"
    else:
        same = same_first_error(recorded, replayed)
    return None if same else divergence(recorded, replayed, replay.stop_reason).model_dump(mode="json")
