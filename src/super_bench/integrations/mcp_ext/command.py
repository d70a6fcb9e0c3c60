"""The ``mcp:COMMAND`` agent: an external MCP client (Claude Code, Codex CLI, an Agents SDK script) on each task.

For each task the runner gives it, the agent serves the task's environment over streamable HTTP on a loopback
port, with a token of its own, and starts COMMAND with where to find it (``SUPER_BENCH_MCP_URL``,
``SUPER_BENCH_MCP_TOKEN``, and ``SUPER_BENCH_MCP_CONFIG``: a ``mcpServers`` JSON file as the clients read it)
and the task (``SUPER_BENCH_TASK_ID``, and its instructions in ``SUPER_BENCH_TASK_FILE``). The client's tool
calls are the episode's steps. The episode ends with the submission or a budget, or when the client exits:
without a submission, an exit status of 0 is ``agent_stopped``, any other is the agent's failure
(``agent_error``, with the end of its output). COMMAND is the operator's program, run as the harness runs,
in an empty temporary directory of its own (the task's files are in the sandbox, reached through the tools);
what its tool calls send runs in the task's sandbox only.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import signal
import subprocess
import tempfile
import threading
from collections import deque
from pathlib import Path
from typing import IO, TYPE_CHECKING

from super_bench.agents.base import AgentOptions
from super_bench.errors import AgentError
from super_bench.integrations.mcp_ext.episode import ClientAgent, ToolCallError
from super_bench.integrations.mcp_ext.http import BackgroundServer, http_app
from super_bench.integrations.mcp_ext.tools import build_server, task_text
from super_bench.sandbox import supervisor
from super_bench.tasks.model import Task
from super_bench.trajectory import Step

if TYPE_CHECKING:
    from super_bench.environment import AgentEnv

_TAIL = 4000  # characters of the client's output kept for the error of a client that failed


class _OneTask:
    """The hub of one task, given by the runner: clients do not choose it."""

    offers_start = False

    def __init__(self, task: Task, pre_executed: list[Step], agent: ClientAgent) -> None:
        self._entry = (task, pre_executed, agent)

    async def start_task(self, *args: object) -> tuple[Task, list[Step]]:
        raise ToolCallError("this server runs one task, already started: read it with read_task")

    def agent(self, key: str) -> tuple[Task, list[Step], ClientAgent]:
        return self._entry


class McpCommandAgent:
    """Runs ``COMMAND`` (split as a shell would, but run without one) once per task, as an MCP client."""

    def __init__(self, arg: str | None, options: AgentOptions) -> None:
        try:
            self.argv = shlex.split(arg or "")
        except ValueError as e:
            raise AgentError(f"cannot read the MCP client's command {arg!r}: {e}") from None
        if not self.argv:
            raise AgentError("give the MCP client's command: --agent 'mcp:COMMAND ARGS...'")
        if "/" in self.argv[0]:  # a program named by a path runs from the client's own directory, so made absolute
            self.argv[0] = os.path.abspath(self.argv[0])  # (not resolved: a virtualenv's python is a link)
        self.name = f"mcp:{Path(self.argv[0]).name}"
        self.model = options.model
        settings = dict(options.settings)
        self.timeout = float(settings.pop("timeout", 4 * 3600))
        self.grace = float(settings.pop("grace", 30))
        if settings:
            raise AgentError(f"unknown setting(s) of the mcp agent: {', '.join(settings)} (it takes timeout, grace)")

    def run(self, env: AgentEnv) -> None:
        pre_executed = [step for step in env.trajectory.steps if step.pre_executed]
        agent = ClientAgent(self.name)
        token = secrets.token_urlsafe(24)
        app = http_app(build_server(_OneTask(env.task, pre_executed, agent)), token, host="127.0.0.1", on_close=_ignore)
        with tempfile.TemporaryDirectory(prefix="super-bench-mcp-") as home, BackgroundServer(app) as server:
            variables = self._files(Path(home), env.task, pre_executed, server.url, token)
            process = subprocess.Popen(
                self.argv,
                cwd=home,
                env={**os.environ, **variables},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, stopped as a whole
            )
            # If the harness dies (SIGKILL included), its watchdog kills the client's process group and removes
            # its directory; they are let go of below, once stopped.
            supervisor.register("pgid", process.pid)
            supervisor.register("dir", home)
            tail: deque[str] = deque(maxlen=64)
            reader = threading.Thread(target=_keep_tail, args=(process.stdout, tail), daemon=True)
            reader.start()
            exit_status: list[int | None] = []
            watcher = threading.Thread(target=self._watch, args=(process, agent, exit_status), daemon=True)
            watcher.start()
            try:
                agent.run(env)  # until the submission, a budget, or the client's exit
            finally:
                agent.close("the episode is over: no more actions")
                _stop(process, self.grace if env.done and not exit_status else 0)
                watcher.join()
                reader.join(5)
                supervisor.unregister("pgid", process.pid)
                supervisor.unregister("dir", home)
        status = exit_status[0] if exit_status else None
        if status not in (None, 0) and env.trajectory.stop_reason == "agent_error":
            output = "".join(tail)[-_TAIL:].strip()
            raise AgentError(
                f"the MCP client {self.argv[0]} exited with status {status} before submitting"
                + (f"; its output ended with:\n{output}" if output else " (no output)")
            )

    def _files(self, home: Path, task: Task, pre_executed: list[Step], url: str, token: str) -> dict[str, str]:
        task_file = home / "task.md"
        task_file.write_text(task_text(task, pre_executed), encoding="utf-8")
        config = home / "mcp.json"
        server = {"type": "http", "url": url, "headers": {"Authorization": f"Bearer {token}"}}
        config.write_text(json.dumps({"mcpServers": {"super-bench": server}}, indent=2), encoding="utf-8")
        config.chmod(0o600)  # it holds the token
        return {
            "SUPER_BENCH_MCP_URL": url,
            "SUPER_BENCH_MCP_TOKEN": token,
            "SUPER_BENCH_MCP_CONFIG": str(config),
            "SUPER_BENCH_TASK_ID": task.task_id,
            "SUPER_BENCH_TASK_FILE": str(task_file),
            **({"SUPER_BENCH_MODEL": self.model} if self.model else {}),
        }

    def _watch(self, process: subprocess.Popen[bytes], agent: ClientAgent, exit_status: list[int | None]) -> None:
        """Ends the episode when the client exits, or runs past the timeout."""
        try:
            status = process.wait(self.timeout)
        except subprocess.TimeoutExpired:
            _stop(process, 0)
            exit_status.append(None)
            agent.end("max_wall_time", f"the MCP client ran past its timeout of {self.timeout:g} s")
            return
        exit_status.append(status)
        if status == 0:
            agent.end("agent_stopped", "the MCP client exited without submitting")
        else:
            agent.end("agent_error", f"the MCP client exited with status {status}")


def _ignore(session_id: str) -> None:
    """A client that closes an MCP session may open another: its exit, not a closed session, ends the task."""


def _keep_tail(stream: IO[bytes] | None, tail: deque[str]) -> None:
    if stream is None:
        return
    with stream:
        for line in iter(lambda: stream.readline(8192), b""):
            tail.append(line.decode("utf-8", "replace"))


def _stop(process: subprocess.Popen[bytes], grace: float) -> None:
    """Let the client exit within ``grace`` seconds, then stop its whole process group."""
    try:
        process.wait(grace)
        return
    except subprocess.TimeoutExpired:
        pass
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, None)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue
