"""The notebook as Inspect tools: one per SUPER action, backed by the sample's environment.

Each tool call is one step of the trajectory, so it is graded exactly as any other agent's.
Outputs are cleaned and capped by the environment (``observation_limit``), so Inspect's own
truncation is turned off for these tools.
"""

from __future__ import annotations

from inspect_ai.tool import Tool, ToolError, tool

from super_bench import messages
from super_bench.actions import Action
from super_bench.environment.edit import AFTER, BEFORE
from super_bench.integrations.inspect_ext.notebook import current_notebook


async def act(action: Action) -> str:
    """Perform one action in the sample's notebook; what the agent is shown."""
    notebook = current_notebook()
    step = await notebook.step(action)
    if step.outcome == "invalid":
        raise ToolError(step.observation)
    text = step.observation or "(no output)"
    if step.stop_reason not in (None, "submitted"):
        text += messages.episode_over(step.stop_reason)
    return text


@tool(max_output=0)
def execute() -> Tool:
    async def run(code: str) -> str:
        """Run a cell in the Jupyter notebook: Python code, `!shell` commands or `%magic` lines.

        Python state persists between cells; use `%cd DIR` (not `!cd`) to change the working
        directory of later cells. A cell still running when the time limit expires returns its
        output so far and keeps running: then call `continue_wait` or `interrupt`; any other
        action interrupts it first.

        Args:
            code: The cell's source.
        """
        return await act(Action.execute(code))

    return run


@tool(max_output=0)
def continue_wait() -> Tool:
    async def run() -> str:
        """Keep waiting for a cell that is still running; returns its new output."""
        return await act(Action(type="continue_wait"))

    return run


@tool(max_output=0)
def interrupt() -> Tool:
    async def run() -> str:
        """Interrupt a cell that is still running (like Ctrl-C); returns its last output."""
        return await act(Action(type="interrupt"))

    return run


@tool
def edit() -> Tool:
    async def run(path: str, before: str, after: str, context: str = "") -> str:
        """Replace lines of a text file. `before` (with `context`, if given) must match exactly one place.

        Args:
            path: The file, relative to the notebook's current directory.
            before: The exact lines to replace; empty to insert `after` right after `context`.
            after: The lines to put in their place; empty to delete them.
            context: Optional lines just before `before`, to make the match unique. They are kept.
        """
        lines = [path, *_lines(context), BEFORE, *_lines(before), AFTER, *_lines(after)]
        return await act(Action(type="edit", content="\n".join(lines)))

    return run


@tool
def submit() -> Tool:
    async def run(answer: str) -> str:
        """Submit your final answer and end the task.

        Args:
            answer: The answer as JSON, structured as the task asks, e.g. {"accuracy": 0.81}.
        """
        await act(Action.submit(answer))
        return answer

    return run


def notebook_tools() -> list[Tool]:
    """Every notebook tool but ``submit`` (agents usually treat submitting specially)."""
    return [execute(), continue_wait(), interrupt(), edit()]


def _lines(text: str) -> list[str]:
    return text.removesuffix("\n").split("\n") if text else []
