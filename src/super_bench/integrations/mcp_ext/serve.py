"""Serving ``super-bench mcp``: the run directory held for the server's life, the hub's episodes, and the
transport (stdio or streamable HTTP). However the serving ends, every episode still running is ended and
written before the run directory is let go: outside the event loop, which a stop (Ctrl-C) may have
cancelled midway."""

from __future__ import annotations

import socket
from dataclasses import dataclass

import anyio

from super_bench.integrations.mcp_ext.http import http_app, listen, url_of, uvicorn_server
from super_bench.integrations.mcp_ext.hub import RunHub
from super_bench.integrations.mcp_ext.tools import build_server
from super_bench.runner.config import RunConfig
from super_bench.runner.rundir import RunDir
from super_bench.trajectory import StopReason

__all__ = ["Settings", "listen", "run_http", "run_stdio", "url_of"]


@dataclass(frozen=True)
class Settings:
    sources: tuple[str, ...]
    max_sessions: int
    idle_timeout: float
    agent_name: str | None = None


def _hub(config: RunConfig, run_dir: RunDir, settings: Settings) -> RunHub:
    hub = RunHub(
        config,
        run_dir,
        sources=settings.sources,
        max_sessions=settings.max_sessions,
        idle_timeout=settings.idle_timeout,
        agent_name=settings.agent_name,
    )
    hub.open()
    return hub


def run_stdio(config: RunConfig, run_dir: RunDir, settings: Settings) -> None:
    """Serve one client on stdin and stdout until it disconnects; its episode, if one runs, ends then."""
    run_dir.create()
    with run_dir.lock():
        hub = _hub(config, run_dir, settings)
        server = build_server(hub)

        async def serve() -> None:
            async with anyio.create_task_group() as group:
                group.start_soon(hub.reap_forever)
                await server.run_stdio_async()
                group.cancel_scope.cancel()

        ending: tuple[StopReason, str] = ("cancelled", "the server was stopped")
        try:
            anyio.run(serve)
            ending = ("agent_stopped", "the client disconnected")  # its stdin ended
        except KeyboardInterrupt:
            pass
        finally:
            hub.close_all_now(*ending)


def run_http(
    config: RunConfig, run_dir: RunDir, settings: Settings, listener: socket.socket, token: str, host: str
) -> None:
    """Serve streamable HTTP on ``listener`` until stopped (Ctrl-C, SIGTERM); then every episode still running
    is ended and written, outside the event loop, which the stop may have cancelled."""
    run_dir.create()
    with run_dir.lock():
        hub = _hub(config, run_dir, settings)
        app = http_app(
            build_server(hub),
            token,
            host=host,
            on_close=lambda session: hub.end_quietly(session, "agent_stopped", "the client closed its MCP session"),
            # Connections hold no sandbox until they start a task (bounded by max_sessions in the hub), so a client
            # that waits for room can connect; they are bounded all the same.
            max_sessions=4 * settings.max_sessions,
            idle_timeout=settings.idle_timeout,
        )
        server = uvicorn_server(app)

        async def serve() -> None:
            async with anyio.create_task_group() as group:
                group.start_soon(hub.reap_forever)
                await server.serve(sockets=[listener])
                group.cancel_scope.cancel()

        try:
            anyio.run(serve)
        except KeyboardInterrupt:
            pass
        finally:
            hub.close_all_now("cancelled", "the server was stopped")
