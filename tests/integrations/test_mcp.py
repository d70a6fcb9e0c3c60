"""``super-bench mcp`` and the ``mcp:COMMAND`` agent, driven by the official ``mcp`` client (tests/support/mcp_client.py):
gold solutions replayed as tool calls score what the gold agent scores, over stdio and streamable HTTP; the runs
they write are read by analyze and verify; endings (disconnect, idle, budget) lose nothing; and the adversary's
tool calls (out of order, oversized, escaping paths, too many sessions, no token) are refused."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.support.helpers import cli
from tests.support.mcp_client import call, http_session, replay_gold, stdio_session, text
from tests.support.shared_runs import SharedRuns

from super_bench.environment.edit import EditFailed, parse_edit
from super_bench.integrations.mcp_ext.episode import ToolCallError
from super_bench.integrations.mcp_ext.tools import edit_content
from super_bench.runner.rundir import RunDir
from super_bench.tasks.loaders import load_tasks

SETS = ("expert", "masked", "auto")
# The demo tasks the gold replays drive, a few of each set: every kind of action (cells, edits, submissions, pre-
# executed cells, waits) comes in these, and what is tested is the protocol, not the tasks (the whole demo suite:
# tests/tasks/test_demo_suite.py).
SOME = {
    "expert": ["tinyreg", "nbsent", "bm25-scifact"],
    "masked": [
        "tinyreg_goal", "nbsent_dependencies", "perctag-ner_issue", "bm25-scifact_custom",
        "kneser-wikitext_configuration", "spkmeans-news_cpu", "ppmivec-wordsim_issue", "textrank-cnndm_data",
    ],
    "auto": ["tinyreg-auto", "kneser-eval-auto", "textrank-auto"],
}  # fmt: skip
CLIENT = Path(__file__).parents[1] / "support" / "mcp_client.py"
LOCAL = ["--sandbox", "local"]
GOLD_DIRS: dict[str, Path] = {}  # the gold runs of the `gold` fixture, by set (shared: read only)


def metrics(out: Path) -> dict[str, dict[str, Any]]:
    rows = RunDir(out).read_results()
    assert len(rows) == len({r.key for r in rows}) == len(RunDir(out).results_path.read_text().splitlines())
    return {r.task_id: r.metrics.model_dump() for r in rows}


def agents(out: Path) -> set[str]:
    """The agent names the run's trajectories record."""
    rows = RunDir(out).read_results()
    return {json.loads((out / r.trajectory).read_text())["agent"] for r in rows if r.trajectory}


class HttpServer:
    def __init__(self, out: Path, *args: str) -> None:
        self.out = out
        self.process = subprocess.Popen(
            [sys.executable, "-m", "super_bench", "mcp", "--http", "--port", "0", "--out", str(out), *LOCAL, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "SUPER_BENCH_TOKEN": "test-token"},
        )
        assert self.process.stdout is not None
        first = self.process.stdout.readline()
        match = re.search(r"(http://\S+/mcp)", first)
        assert match, first + self.process.stderr.read()  # type: ignore[union-attr]
        self.url = match.group(1)

    def stop(self) -> str:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        out, err = self.process.communicate(timeout=120)
        return out + err


@pytest.fixture(scope="module")
def gold(shared_runs: SharedRuns) -> dict[str, dict[str, dict[str, Any]]]:
    """What the gold agent scores on each set's tasks of ``SOME``: read from the README's runs of the whole demo
    suite, which the session runs once and shares read-only (tests/tasks/test_demo_suite.py checks them)."""
    scores = {}
    for task_set in SETS:
        shared = shared_runs.get("super-bench run" if task_set == "expert" else f"super-bench run --set {task_set}")
        assert shared.result.returncode == 0, shared.result.stderr
        every = metrics(shared.run_dir)
        scores[task_set] = {task: every[task] for task in SOME[task_set]}
        GOLD_DIRS[task_set] = shared.run_dir
    return scores


@pytest.mark.slow
def test_gold_actions_as_tool_calls_over_stdio_score_as_the_gold_agent(
    gold: dict[str, dict[str, dict[str, Any]]], tmp_path: Path
) -> None:
    async def drive(task_set: str) -> None:
        async with stdio_session(["--out", str(tmp_path / task_set), *LOCAL], name="stdio-gold") as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            assert set(tools) == {
                "start_task",
                "read_task",
                "execute_cell",
                "continue_wait",
                "interrupt_cell",
                "edit_file",
                "submit_answer",
            }
            assert tools["execute_cell"].input_schema["properties"]["code"]["type"] == "string"
            for task in load_tasks("demo", task_set, task_ids=SOME[task_set]):
                await replay_gold(session, task)

    for task_set in SETS:
        anyio.run(drive, task_set)
        assert metrics(tmp_path / task_set) == gold[task_set]
        assert agents(tmp_path / task_set) == {"mcp:stdio-gold"}
    result = cli("analyze", str(tmp_path / "masked"))
    assert result.returncode == 0, result.stderr
    # read like any run: the page, a comparison with the gold run, a leaderboard beside it
    result = cli("view", str(tmp_path / "masked"))
    assert result.returncode == 0 and (tmp_path / "masked" / "view.html").is_file(), result.stderr
    for command in ("compare", "leaderboard"):
        result = cli(command, str(GOLD_DIRS["masked"]), str(tmp_path / "masked"))
        assert result.returncode == 0 and "masked" in result.stdout, result.stderr
    result = cli("verify", str(tmp_path / "expert"), "--task-ids", "tinyreg", "--sandbox", "bwrap")
    assert result.returncode == 0, result.stderr + result.stdout
    assert "1 of 1" in result.stdout or "reproduced" in result.stdout.lower(), result.stdout


@pytest.mark.slow
def test_gold_actions_over_streamable_http_score_as_the_gold_agent_three_clients_at_once(
    gold: dict[str, dict[str, dict[str, Any]]], tmp_path: Path
) -> None:
    out = tmp_path / "http"
    server = HttpServer(out, "--max-sessions", "3")

    async def drive(task_set: str) -> None:
        async with http_session(server.url, "test-token", name=f"http-{task_set}") as session:
            for task in load_tasks("demo", task_set, task_ids=SOME[task_set]):
                await replay_gold(session, task)

    async def all_sets() -> None:
        async with anyio.create_task_group() as group:
            for task_set in SETS:
                group.start_soon(drive, task_set)

    try:
        anyio.run(all_sets)
    finally:
        log = server.stop()
    by_id = metrics(out)
    for task_set in SETS:
        assert {t: by_id[t] for t in gold[task_set]} == gold[task_set], log
    result = cli("score", str(out))
    assert result.returncode == 0, result.stderr
    assert metrics(out) == by_id


def test_endings_lose_nothing_and_out_of_order_calls_are_refused(tmp_path: Path) -> None:
    """A disconnect mid-task, a step budget, tools out of order, an oversized cell: each is answered or recorded."""
    out = tmp_path / "run"

    async def first() -> None:
        async with stdio_session(["--out", str(out), "--max-steps", "2", *LOCAL], name="careless") as session:
            for tool, args in (("execute_cell", {"code": "1"}), ("read_task", {}), ("submit_answer", {"answer": "1"})):
                result = await session.call_tool(tool, args)
                assert result.is_error and "start_task first" in text(result)
            result = await session.call_tool("start_task", {"task_id": "no-such-task"})
            assert result.is_error and "no-such-task" in text(result)
            await call(session, "start_task", task_id="tinyreg")
            result = await session.call_tool("start_task", {"task_id": "tinyreg"})
            assert result.is_error and "still running" in text(result)
            result = await session.call_tool("execute_cell", {"code": "x" * 1_000_001})
            assert result.is_error and "1000000" in text(result).replace(",", "")
            assert "print(6*7)" not in await call(session, "read_task")
            assert "42" in await call(session, "execute_cell", code="print(6*7)")
            over = await call(session, "execute_cell", code="print('two')")
            assert "max_steps" in over
            result = await session.call_tool("execute_cell", {"code": "print(3)"})
            assert result.is_error and "over" in text(result)
            # a second task in the same session, left by a disconnect
            await call(session, "start_task", task_id="tinyreg-lr")
            await call(session, "execute_cell", code="y = 1")

    anyio.run(first)
    rows = {r.task_id: r for r in RunDir(out).read_results()}
    assert rows["tinyreg"].stop_reason == "max_steps" and rows["tinyreg"].n_steps == 2
    assert rows["tinyreg-lr"].stop_reason == "agent_stopped"
    trajectory = json.loads((out / rows["tinyreg-lr"].trajectory).read_text())
    assert trajectory["metadata"]["stopped_because"] == "the client disconnected"
    assert [s["action"]["content"] for s in trajectory["steps"]] == ["y = 1"]
    assert (out / "tasks" / "tinyreg-lr" / "trajectory.ipynb").is_file()


def test_http_needs_the_token_bounds_sessions_and_ends_idle_clients(tmp_path: Path) -> None:
    out = tmp_path / "run"
    server = HttpServer(out, "--max-sessions", "1", "--idle-timeout", "2")
    try:
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            answer = httpx.post(server.url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=headers)
            assert answer.status_code == 401

        async def two_clients() -> None:
            async with http_session(server.url, "test-token", "first") as one:
                await call(one, "start_task", task_id="tinyreg")
                async with http_session(server.url, "test-token", "second") as two:
                    result = await two.call_tool("start_task", {"task_id": "tinyreg-lr"})
                    assert result.is_error and "at most 1" in text(result)
                    await anyio.sleep(4)  # the first client stays idle past the timeout
                    result = await one.call_tool("execute_cell", {"code": "1"})
                    assert result.is_error
                    await call(two, "start_task", task_id="tinyreg-lr")  # its room is free again
                    await call(two, "submit_answer", answer='{"test_mse": 1}')

        anyio.run(two_clients)

        async def left_running() -> str:
            async with http_session(server.url, "test-token", "third") as three:
                await call(three, "start_task", task_id="nbsent")
                await call(three, "execute_cell", code="z = 3")
                return await anyio.to_thread.run_sync(server.stop)  # the server stopped under a running task

        with contextlib.suppress(Exception):  # the client, cut off, may fail as it closes
            anyio.run(left_running)
    finally:
        log = server.stop()
    rows = {r.task_id: r for r in RunDir(out).read_results()}
    assert rows["nbsent"].stop_reason == "cancelled", log  # written all the same
    assert rows["tinyreg"].stop_reason == "agent_stopped", log
    assert rows["tinyreg-lr"].stop_reason == "submitted"
    assert json.loads((out / rows["tinyreg-lr"].trajectory).read_text())["agent"] == "mcp:second"


def test_edit_paths_stay_inside_the_sandbox(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("keep me\n")

    async def attack() -> None:
        async with stdio_session(["--out", str(tmp_path / "run"), "--sandbox", "bwrap"]) as session:
            await call(session, "start_task", task_id="tinyreg")
            for path in (str(secret), "../" * 20 + str(secret).lstrip("/")):
                result = await session.call_tool("edit_file", {"path": path, "before": "keep me", "after": "gone"})
                assert result.is_error, text(result)
            result = await session.call_tool("edit_file", {"path": "a\nb", "before": "x", "after": "y"})
            assert result.is_error

    anyio.run(attack)
    assert secret.read_text() == "keep me\n"


@pytest.fixture
def masked_gold(gold: dict[str, dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    return gold["masked"]


def _rows(out: Path) -> list[dict[str, Any]]:
    path = out / "results.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip().endswith("}")]


def _clients(tag: str) -> list[int]:
    """The processes of the scripted client started with ``tag`` on their command line."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and tag.encode() in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


@pytest.mark.slow
def test_run_with_an_external_mcp_client_resumes_after_sigkill(
    masked_gold: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    """Demo Masked tasks with 2 workers, killed (SIGKILL) after a few rows and resumed: every task once, scored
    as the gold agent scores it; the killed run's clients do not outlive it."""
    out, tag = tmp_path / "run", f"tag-{os.getpid()}-{time.monotonic_ns()}"
    command = [
        sys.executable, "-m", "super_bench", "run", "--set", "masked", "--task-ids", *SOME["masked"], "--workers", "2",
        "--out", str(out), *LOCAL,
        "--agent", f"mcp:{sys.executable} {CLIENT} gold {tag}",
    ]  # fmt: skip
    first = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    while len(_rows(out)) < 3 and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    kept = len(_rows(out))
    assert 0 < kept < len(masked_gold)
    deadline = time.monotonic() + 30
    while _clients(tag) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _clients(tag)
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert metrics(out) == masked_gold  # one row per task: none lost, none twice
    assert agents(out) == {f"mcp:{Path(sys.executable).name}"}


def test_a_crashing_external_client_is_the_agents_failure(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = cli(
        "run",
        "--set",
        "masked",
        "--task-ids",
        "tinyreg_goal",
        "--out",
        str(out),
        *LOCAL,
        "--agent",
        f"mcp:{sys.executable} {CLIENT} crash",
    )
    assert result.returncode == 0, result.stderr
    (row,) = RunDir(out).read_results()
    assert (row.status, row.stop_reason) == ("agent_error", "agent_error")
    assert "status 3" in (row.error or "") and "crashes on purpose" in (row.error or "")
    trajectory = json.loads((out / row.trajectory).read_text())
    assert [s["action"]["content"] for s in trajectory["steps"] if not s.get("pre_executed")] == [
        "print('about to crash')"
    ]


def test_a_client_that_lingers_after_submitting_is_stopped(tmp_path: Path) -> None:
    out, tag = tmp_path / "run", f"tag-{os.getpid()}-{time.monotonic_ns()}"
    result = cli(
        "run", "--set", "masked", "--task-ids", "tinyreg_goal", "--out", str(out), *LOCAL,
        "--agent", f"mcp:{sys.executable} {CLIENT} linger {tag}", "--agent-setting", "grace=1",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (row,) = RunDir(out).read_results()
    assert (row.status, row.stop_reason, row.metrics.output_match) == ("completed", "submitted", 1.0)
    assert not _clients(tag)


def test_the_mcp_agent_needs_a_command() -> None:
    result = cli("run", "--agent", "mcp:", *LOCAL)
    assert result.returncode != 0 and "mcp:COMMAND" in result.stderr


@given(
    path=st.text(min_size=1, max_size=20),
    before=st.text(max_size=60),
    after=st.text(max_size=60),
    context=st.text(max_size=40),
)
def test_edit_file_arguments_become_the_edit_they_describe(path: str, before: str, after: str, context: str) -> None:
    """Whatever a client sends: refused with a reason, or an edit action that reads back as exactly its parts."""
    try:
        content = edit_content(path, before, after, context)
    except ToolCallError:
        assert "\n" in path or "\r" in path or not path.strip() or "<<<" in before + after + context
        return
    try:
        request = parse_edit(content)
    except EditFailed:  # nothing to locate the edit (no before, no context): the environment says so
        assert not before and not context
        return
    lines = lambda text: text.removesuffix("\n").split("\n") if text else []  # noqa: E731
    assert request.path == path.strip()
    assert (request.context, request.remove) == (lines(context), lines(before))
    added = lines(after)
    while added and added[-1] == "":  # an edit's text ends at its last line
        added.pop()
    assert request.add == added


def test_a_sandbox_that_cannot_start_is_a_tool_error_and_a_row(flaky: Any, tmp_path: Path) -> None:
    """The hub in process, on a sandbox that fails to start: the client is told why, the run keeps a row."""
    from super_bench.environment import EnvConfig
    from super_bench.integrations.mcp_ext.hub import RunHub
    from super_bench.runner.config import RunConfig
    from super_bench.sandbox import SandboxConfig

    flaky.failures["tinyreg"] = 1
    run_dir = RunDir(tmp_path / "run")
    config = RunConfig(agent="mcp", env=EnvConfig(sandbox=SandboxConfig(backend="flaky")), out=run_dir.path)
    run_dir.create()
    with run_dir.lock():
        hub = RunHub(config, run_dir, sources=("demo",), max_sessions=1, idle_timeout=60)
        hub.open()
        with pytest.raises(ToolCallError, match="injected failure"):
            anyio.run(hub.start_task, "session", "client", "tinyreg", None, None)
        hub.episodes["session"].wait()
        assert hub.live == 0  # its room is free again
    (row,) = run_dir.read_results()
    assert (row.task_id, row.status) == ("tinyreg", "infra_error")
