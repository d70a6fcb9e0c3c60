"""The cost of a step over MCP: a trivial cell as an ``execute_cell`` tool call to ``super-bench mcp`` over stdio
(the official ``mcp`` client, the server in a process of its own) against the same step in-process.

Ours: the median round trip of ``execute_cell("x = 1")``, from the client's call to its result, on a task the
server started (its sandbox and kernel warm). The reference: the median ``Environment.step`` of the same cell
on the same backend, in this process, timed in rounds alternating with the tool calls. The difference is what
MCP adds to a step (JSON-RPC over the pipes, the SDK's validation, the hand-over to the episode's thread);
target: at most 10 ms.

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


def measure(backend: str, calls: int, scratch: Path, rounds: int = 10) -> tuple[list[float], list[float]]:
    """Seconds of each ``execute_cell`` round trip over stdio, and of each in-process ``Environment.step`` of the
    same cell: both kept warm side by side and timed in alternating rounds, so that a busy spell of the machine
    falls on both alike."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from super_bench import Action
    from super_bench.environment import EnvConfig, Environment
    from super_bench.sandbox import SandboxConfig
    from super_bench.tasks.loaders import find_task

    budget = str(calls + 100)
    server = ["-m", "super_bench", "mcp", "--sandbox", backend, "--out", str(scratch / "run"), "--max-steps", budget]
    params = StdioServerParameters(command=sys.executable, args=server)
    config = EnvConfig(max_steps=calls + 100, sandbox=SandboxConfig(backend=backend, root=scratch / "sandboxes"))
    over_mcp: list[float] = []
    direct: list[float] = []
    per_round = max(1, calls // rounds)

    async def run() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool("start_task", {"task_id": "tinyreg"})
            with Environment(config) as env:
                env.reset(find_task("tinyreg", "demo"))
                for _ in range(20):  # the first calls warm both sides
                    await session.call_tool("execute_cell", {"code": CELL})
                    env.step(Action.execute(CELL))
                for _ in range(rounds):
                    for _ in range(per_round):
                        start = time.perf_counter()
                        result = await session.call_tool("execute_cell", {"code": CELL})
                        over_mcp.append(time.perf_counter() - start)
                        assert not result.is_error
                    for _ in range(per_round):
                        start = time.perf_counter()
                        env.step(Action.execute(CELL))
                        direct.append(time.perf_counter() - start)
            await session.call_tool("submit_answer", {"answer": "{}"})

    anyio.run(run)
    return over_mcp, direct


def rows(backend: str = "local", calls: int = 200) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as scratch:
        over_mcp, direct = measure(backend, calls, Path(scratch))
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
