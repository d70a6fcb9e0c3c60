"""The replay agent: performs a fixed list of actions, the same for every task.

``replay:FILE`` where FILE is a JSON list of ``{"type", "content"}`` actions (optionally with a
``thought``), or a saved ``trajectory.json`` whose agent steps are replayed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from super_bench.actions import Action
from super_bench.agents.base import AgentOptions
from super_bench.errors import AgentError, SuperBenchError

if TYPE_CHECKING:
    from super_bench.environment import Environment

# A trajectory.json holds every step's output (up to the episode's limit of kept output, in JSON's
# escapes), and parsing takes several times a file's size in memory: refuse what no run writes.
MAX_REPLAY_BYTES = 1 << 30


def load_actions(path: Path) -> list[tuple[Action, str | None]]:
    """(action, thought) pairs from an action list or a trajectory file."""
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
    if isinstance(data, dict) and isinstance(data.get("steps"), list):
        items = [s for s in data["steps"] if not s.get("pre_executed")]
    elif isinstance(data, list):
        items = data
    else:
        raise AgentError(f"replay: {path} must hold a JSON list of actions or a trajectory.json")
    pairs = []
    for i, item in enumerate(items):
        try:
            record = item if isinstance(item, dict) else {}
            action = Action.coerce(record.get("action", item) if "action" in record else item)
        except SuperBenchError as e:
            raise AgentError(f"replay: {path}, action {i}: {e}") from e
        thought = record.get("thought")
        if thought is not None and not isinstance(thought, str):
            raise AgentError(f"replay: {path}, action {i}: the thought must be text, not {type(thought).__name__}")
        pairs.append((action, thought))
    return pairs


class ReplayAgent:
    name = "replay"

    def __init__(self, arg: str | None = None, options: AgentOptions | None = None) -> None:
        if not arg:
            raise AgentError("the replay agent needs a file: --agent replay:actions.json")
        self.path = Path(arg).expanduser()
        self.actions = load_actions(self.path)

    def run(self, env: Environment) -> None:
        for action, thought in self.actions:
            if env.done:
                return
            env.step(action, thought=thought)
