"""A scripted MCP client, written with the official ``mcp`` SDK: it replays demo tasks' gold solutions as tool
calls. The tests drive ``super-bench mcp`` with it, and ``run --agent mcp:...`` runs it as the external agent:

    python tests/support/mcp_client.py gold    # the task in SUPER_BENCH_TASK_ID, over SUPER_BENCH_MCP_URL
    python tests/support/mcp_client.py crash   # runs one cell, then exits with status 3
    python tests/support/mcp_client.py linger  # as gold, then never exits
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import mcp.types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from super_bench.agents.gold import printed_answer
from super_bench.environment.edit import parse_edit
from super_bench.tasks.loaders import find_task
from super_bench.tasks.model import Task

STILL_RUNNING = "Send `continue_wait`"


def client_info(name: str) -> mcp.types.Implementation:
    return mcp.types.Implementation(name=name, version="1.0")


@asynccontextmanager
async def http_session(url: str, token: str | None, name: str = "scripted-client") -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(600)) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write, client_info=client_info(name)) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def stdio_session(args: list[str], name: str = "scripted-client") -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "super_bench", "mcp", *args])
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, client_info=client_info(name)) as session,
    ):
        await session.initialize()
        yield session


def text(result: mcp.types.CallToolResult) -> str:
    return "".join(part.text for part in result.content if isinstance(part, mcp.types.TextContent))


async def call(session: ClientSession, tool: str, **arguments: Any) -> str:
    result = await session.call_tool(tool, arguments)
    if result.is_error:
        raise RuntimeError(f"{tool} failed: {text(result)}")
    return text(result)


async def replay_gold(session: ClientSession, task: Task, *, start: bool = True) -> None:
    """The gold agent's actions, as tool calls: each cell run to its end, then the answer its last cell printed."""
    if start:
        await call(session, "start_task", task_id=task.task_id, task_set=task.task_set)
    last = ""
    for action in task.solution or []:
        if action.type == "submit":
            await call(session, "submit_answer", answer=json.dumps(action.content))
            return
        if action.type == "edit":
            edit = parse_edit(action.content)
            last = await call(
                session,
                "edit_file",
                path=edit.path,
                context="\n".join(edit.context),
                before="\n".join(edit.remove),
                after="\n".join(edit.add),
            )
        else:
            last = await call(session, "execute_cell", code=action.content)
        while STILL_RUNNING in last:
            last = await call(session, "continue_wait")
    answer = printed_answer(last)
    await call(
        session, "submit_answer", answer=json.dumps(answer if isinstance(answer, dict | list | int | float) else None)
    )


async def main(mode: str) -> None:
    task = find_task(os.environ["SUPER_BENCH_TASK_ID"], "demo")
    async with http_session(os.environ["SUPER_BENCH_MCP_URL"], os.environ["SUPER_BENCH_MCP_TOKEN"]) as session:
        instructions = await call(session, "read_task")
        assert task.task_id in instructions
        if mode == "crash":
            await call(session, "execute_cell", code="print('about to crash')")
            print("the scripted client crashes on purpose", flush=True)
            os._exit(3)
        await replay_gold(session, task, start=False)
    if mode == "linger":  # submitted, but never exits on its own
        time.sleep(3600)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
