"""The gold agent: replays a task's gold solution and submits what its last cell prints.

A gold run proves that a task still works end to end: the repository still clones, the
packages still install, and the printed answer still matches the gold one.
"""

from __future__ import annotations

import ast
import json
from typing import TYPE_CHECKING, Any

from super_bench.agents.base import AgentOptions, refuse_model
from super_bench.errors import AgentError

if TYPE_CHECKING:
    from super_bench.environment import AgentEnv
    from super_bench.trajectory import Step

_NOTHING = object()


def printed_answer(output: str) -> Any:
    """The last line of ``output`` that is a JSON (or Python literal) object, list or number."""
    for raw_line in reversed(output.strip().splitlines()):
        line = raw_line.strip()
        if not line:
            continue
        for parse in (json.loads, ast.literal_eval):
            try:
                value = parse(line)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
            if isinstance(value, dict | list | int | float) and not isinstance(value, bool):
                return value
    return _NOTHING


class GoldAgent:
    name = "gold"
    needs_solution = True  # the runner refuses a run in which no task has a solution to replay

    def __init__(self, arg: str | None = None, options: AgentOptions | None = None) -> None:
        if arg:
            raise AgentError("the gold agent takes no argument")
        refuse_model("gold", options)

    def run(self, env: AgentEnv) -> None:
        task = env.task
        if not task.solution:
            return  # nothing to replay: the runner records the episode as stopped without a submission
        last: Step | None = None
        for i, action in enumerate(task.solution, start=1):
            if action.type == "submit":
                env.step(action, thought="Gold solution: submit the answer.")
                return
            last = self._finish(env, env.step(action, thought=f"Gold solution, cell {i} of {len(task.solution)}."))
            if env.done:
                return
        answer = printed_answer(last.raw_output) if last is not None else _NOTHING
        if answer is _NOTHING:
            env.step({"type": "submit", "content": None}, thought="The last solution cell printed no JSON answer.")
        else:
            env.step({"type": "submit", "content": answer}, thought="Submit the answer the last cell printed.")

    @staticmethod
    def _finish(env: AgentEnv, step: Step) -> Step:
        """Gold cells run to completion: wait through soft timeouts (budgets still apply)."""
        while step.outcome == "timeout" and not env.done:
            step = env.step({"type": "continue_wait"}, thought="The gold cell is still running; wait.")
        return step
