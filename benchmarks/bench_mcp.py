"""The cost of a step over MCP: a trivial cell as an ``execute_cell`` tool call to ``super-bench mcp`` over stdio
(the official ``mcp`` client, the server in a process of its own) against the same step in-process.

Ours: the median round trip of ``execute_cell("x = 1")``, from the client's call to its result, on a task the
server started (its sandbox and kernel warm). The reference: the median ``Environment.step`` of the same cell
on the same backend, in this process. The difference is what MCP adds to a step (JSON-RPC over the pipes, the
SDK's validation, the hand-over to the episode's thread); target: at most 10 ms.

    python benchmarks/bench_mcp.py [--backend local] [--calls 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from common import Row, seconds, table

CELL = "x = 1"
TARGET = 0.010  # seconds MCP may add to a step


def tool_calls(backend: str, calls: int, out: Path) -> list[float]:
    """Seconds of each ``execute_cell`` round trip over stdio."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    server = ["-m", "super_bench", "mcp", "--sandbox", backend, "--out", str(out), "--max-steps", str(calls + 100)]
    params = StdioServerParameters(command=sys.executable, args=server)
    times: list[float] = []

    async def run() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool("start_task", {"task_id": "tinyreg"})
            for index in range(calls + 20):
                start = time.perf_counter()
                result = await session.call_tool("execute_cell", {"code": CELL})
                if index >= 20:  # the first calls warm both sides
                    times.append(time.perf_counter() - start)
                assert not result.is_error
            await session.call_tool("submit_answer", {"answer": "{}"})

    anyio.run(run)
    return times


def steps(backend: str, calls: int, root: Path) -> list[float]:
    """Seconds of each in-process ``Environment.step`` of the same cell."""
    from super_bench import Action
    from super_bench.environment import EnvConfig, Environment
    from super_bench.sandbox import SandboxConfig
    from super_bench.tasks.loaders import find_task

    config = EnvConfig(max_steps=calls + 100, sandbox=SandboxConfig(backend=backend, root=root))
    times: list[float] = []
    with Environment(config) as env:
        env.reset(find_task("tinyreg", "demo"))
        for index in range(calls + 20):
            start = time.perf_counter()
            env.step(Action.execute(CELL))
            if index >= 20:
                times.append(time.perf_counter() - start)
    return times


def rows(backend: str = "local", calls: int = 200) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as scratch:
        over_mcp = tool_calls(backend, calls, Path(scratch) / "run")
        direct = steps(backend, calls, Path(scratch) / "sandboxes")
    ours, reference = statistics.median(over_mcp), statistics.median(direct)
    added = ours - reference
    return [
        Row(
            "mcp",
            f"execute_cell over stdio, {backend}, median of {calls}",
            seconds(ours),
            seconds(reference),
            ours / reference,
            f"adds <= {TARGET * 1000:.0f} ms (adds {added * 1000:.1f} ms)",
            added <= TARGET,
        )
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="local")
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    result = rows(args.backend, args.calls)
    print(table(result))
    sys.exit(0 if all(r.met is not False for r in result) else 1)


if __name__ == "__main__":
    main()
