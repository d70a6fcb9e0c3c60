"""The MCP server: SUPER's actions as tools with typed arguments and descriptions written for a model.

Every tool but ``start_task`` and ``read_task`` is one step of the task's trajectory, performed by the
episode's ``ClientAgent``: observations are cleaned and capped by the environment, as every agent's are.
Arguments are the agent's input: their sizes are bounded by the schemas, and what they name (a file to edit)
is resolved inside the task's sandbox by the environment, never by the harness.
"""

from __future__ import annotations

from typing import Annotated, Protocol

from anyio import to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from super_bench._names import TaskSet
from super_bench._version import __version__
from super_bench.actions import MAX_ANSWER_CHARS, Action
from super_bench.environment.edit import AFTER, BEFORE
from super_bench.integrations.mcp_ext.episode import ClientAgent, ToolCallError
from super_bench.messages import pre_executed_text
from super_bench.tasks.model import Task
from super_bench.trajectory import Step

# The largest cell, edit part or id a client may send: far above any real one, small enough that a tool call
# cannot make the harness hold much of the client's text.
MAX_CELL_CHARS = 1_000_000
MAX_ID_CHARS = 300
_PART = Field(max_length=MAX_CELL_CHARS)  # (at module level: the SDK reads the annotations in the module's scope)

INSTRUCTIONS = (
    "A SUPER task: set up and run an experiment from a research repository in a stateful Jupyter notebook "
    "inside a sandbox. Read the task, run cells with execute_cell, change files with edit_file, and finish "
    "with submit_answer, which ends the task; the answer is scored against the task's gold answer."
)


class Hub(Protocol):
    """Which episode a connection's tool calls act in (``key``: the MCP session id; ``stdio`` over stdio)."""

    @property
    def offers_start(self) -> bool:
        """Whether clients choose their task (``start_task``), or it is given (the ``mcp:COMMAND`` agent)."""
        ...

    async def start_task(
        self, key: str, client: str | None, task_id: str, task_set: TaskSet | None, source: str | None
    ) -> tuple[Task, list[Step]]: ...

    def agent(self, key: str) -> tuple[Task, list[Step], ClientAgent]:
        """The connection's task, its pre-executed cells and its agent; ``ToolCallError`` without one."""
        ...


def task_text(task: Task, pre_executed: list[Step]) -> str:
    """The task as the client's model reads it: its id, its instructions and the cells already run."""
    parts = [f"Task {task.task_id}:\n\n{task.query}"]
    if pre_executed:
        parts.append(pre_executed_text(pre_executed))
    parts.append("Use execute_cell, edit_file, continue_wait and interrupt_cell to work; submit_answer ends the task.")
    return "\n\n".join(parts)


def _key(ctx: Context) -> str:
    headers = ctx.headers or {}
    return headers.get("mcp-session-id") or "stdio"


def _client(ctx: Context) -> str | None:
    params = ctx.session.client_params
    return params.client_info.name if params is not None and params.client_info.name else None


def _lines(text: str) -> list[str]:
    return text.removesuffix("\n").split("\n") if text else []


def edit_content(path: str, before: str, after: str, context: str = "") -> str:
    """The SUPER edit action's text for ``edit_file``'s arguments; ``ToolCallError`` for arguments it cannot
    hold: a path of more than one line, or a line that is one of the action's markers."""
    if "\n" in path or "\r" in path or not path.strip():
        raise ToolCallError("path must be one line, not empty")
    for name, text in (("before", before), ("after", after), ("context", context)):
        if any(line.strip() in (BEFORE, AFTER) for line in _lines(text)):
            raise ToolCallError(f"{name} holds a line {BEFORE} or {AFTER}, which an edit cannot carry")
    return "\n".join([path, *_lines(context), BEFORE, *_lines(before), AFTER, *_lines(after)])


def build_server(hub: Hub) -> MCPServer:
    """The MCP server over ``hub``'s episodes."""
    server: MCPServer = MCPServer("super-bench", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")

    async def act(ctx: Context, action: Action) -> str:
        try:
            _, _, agent = hub.agent(_key(ctx))
            return await to_thread.run_sync(agent.act, action, abandon_on_cancel=True)
        except ToolCallError as e:
            raise ToolError(str(e)) from None

    if hub.offers_start:

        @server.tool(name="start_task")
        async def start_task(
            ctx: Context,
            task_id: Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS, description="The task's id")],
            task_set: Annotated[
                TaskSet | None, Field(description="expert, masked or auto; default: the first set that has the id")
            ] = None,
            source: Annotated[
                str | None,
                Field(
                    max_length=MAX_ID_CHARS, description="Where the task comes from; default: the server's first source"
                ),
            ] = None,
        ) -> str:
            """Start a task in a fresh notebook and sandbox; returns the task's instructions and the cells already
            run for it. One task runs at a time in a session: finish it with submit_answer before starting another."""
            try:
                task, pre_executed = await hub.start_task(_key(ctx), _client(ctx), task_id, task_set, source)
            except ToolCallError as e:
                raise ToolError(str(e)) from None
            return task_text(task, pre_executed)

    @server.tool(name="read_task", annotations=ToolAnnotations(read_only_hint=True))
    async def read_task(ctx: Context) -> str:
        """The current task's instructions and the cells run before you started. Takes no step."""
        try:
            task, pre_executed, _ = hub.agent(_key(ctx))
        except ToolCallError as e:
            raise ToolError(str(e)) from None
        return task_text(task, pre_executed)

    @server.tool(name="execute_cell")
    async def execute_cell(
        ctx: Context,
        code: Annotated[
            str, Field(max_length=MAX_CELL_CHARS, description="The cell: Python, `!shell` lines or `%magic` lines")
        ],
    ) -> str:
        """Run a cell in the task's Jupyter notebook and return its output. Python state persists between cells;
        use `%cd DIR` (not `!cd`) to change the directory of later cells. A cell still running when the time limit
        passes returns its output so far and keeps running: then call continue_wait or interrupt_cell (any other
        action interrupts it first)."""
        return await act(ctx, Action.execute(code))

    @server.tool(name="continue_wait")
    async def continue_wait(ctx: Context) -> str:
        """Keep waiting for the cell that is still running; returns its further output."""
        return await act(ctx, Action(type="continue_wait"))

    @server.tool(name="interrupt_cell")
    async def interrupt_cell(ctx: Context) -> str:
        """Interrupt the cell that is still running (like Ctrl-C); returns its last output."""
        return await act(ctx, Action(type="interrupt"))

    @server.tool(name="edit_file")
    async def edit_file(
        ctx: Context,
        path: Annotated[
            str, Field(min_length=1, max_length=4096, description="The file, relative to the notebook's directory")
        ],
        before: Annotated[str, _PART, Field(description="The exact lines to replace; empty to insert after context")],
        after: Annotated[str, _PART, Field(description="The lines to put in their place; empty to delete them")],
        context: Annotated[str, _PART, Field(description="Lines just before `before`, to make the match unique")] = "",
    ) -> str:
        """Replace lines of a text file in the task's sandbox: `before` (after `context`, if given) must match
        exactly one place in the file. Returns the changed lines, or why nothing was changed."""
        try:
            content = edit_content(path, before, after, context)
        except ToolCallError as e:
            raise ToolError(str(e)) from None
        return await act(ctx, Action(type="edit", content=content))

    @server.tool(name="submit_answer")
    async def submit_answer(
        ctx: Context,
        answer: Annotated[
            str,
            Field(
                max_length=MAX_ANSWER_CHARS,
                description='The answer as JSON, structured as the task asks, e.g. {"accuracy": 0.81}',
            ),
        ],
    ) -> str:
        """Submit the final answer. This ends the task: no further actions are taken."""
        await act(ctx, Action.submit(answer))
        return "Answer submitted; the task is over."

    return server
