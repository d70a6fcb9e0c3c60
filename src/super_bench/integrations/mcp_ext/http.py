"""The streamable HTTP transport: the MCP server's app behind the bearer token, on a socket of its own.

The SDK's app keeps one MCP session per client (its ``Mcp-Session-Id``), refuses more than ``max_sessions``
at once, forgets one idle longer than ``idle_timeout``, bounds a request's body, and, bound to loopback,
refuses requests whose ``Host`` or ``Origin`` is not local (DNS rebinding). Ahead of it, ``BearerAuth``
refuses any request without the token, and ``_SessionEnds`` tells the hub of a session its client closed.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from types import TracebackType

import uvicorn
from mcp.server.mcpserver import MCPServer
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from super_bench._bearer import BearerAuth
from super_bench.errors import ConfigError

PATH = "/mcp"
MAX_BODY = 8 * 2**20  # a request's body: above the largest tool call the schemas allow (a cell of 1M characters)


class _SessionEnds:
    """Calls ``on_close(session_id)`` once a client's ``DELETE`` of its MCP session has been answered."""

    def __init__(self, app: ASGIApp, on_close: Callable[[str], None]) -> None:
        self.app = app
        self.on_close = on_close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)
        if scope["type"] == "http" and scope["method"] == "DELETE":
            session_id = Headers(scope=scope).get("mcp-session-id")
            if session_id:
                self.on_close(session_id)


def http_app(
    server: MCPServer,
    token: str,
    *,
    host: str,
    on_close: Callable[[str], None],
    max_sessions: int | None = None,
    idle_timeout: float | None = None,
) -> ASGIApp:
    """``server`` over streamable HTTP at ``/mcp``, for clients that send ``token``."""
    app = server.streamable_http_app(
        streamable_http_path=PATH,
        max_request_body_size=MAX_BODY,
        session_idle_timeout=idle_timeout,
        max_sessions=max_sessions,
        host="127.0.0.1" if host == "localhost" else host,
    )
    return BearerAuth(_SessionEnds(app, on_close), token)


def listen(host: str, port: int) -> socket.socket:
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        return socket.create_server((host, port), family=family)
    except OSError as e:
        raise ConfigError(f"cannot listen on {host}:{port}: {e}") from e


def url_of(listener: socket.socket) -> str:
    host, port = listener.getsockname()[:2]
    return f"http://{f'[{host}]' if ':' in host else host}:{port}{PATH}"


def uvicorn_server(app: ASGIApp) -> uvicorn.Server:
    return uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=3, lifespan="on"))


class BackgroundServer:
    """An app served on a loopback port by a thread of its own, while the ``with`` block runs."""

    def __init__(self, app: ASGIApp) -> None:
        self.listener = listen("127.0.0.1", 0)
        self.url = url_of(self.listener)
        self._server = uvicorn_server(app)
        self._thread = threading.Thread(target=self._serve, name="mcp-http", daemon=True)

    def _serve(self) -> None:
        self._server.run(sockets=[self.listener])

    def __enter__(self) -> BackgroundServer:
        self._thread.start()
        while not self._server.started and self._thread.is_alive():
            self._thread.join(0.01)
        if not self._server.started:
            self.listener.close()
            raise ConfigError("the MCP server did not start")
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.should_exit = True
        self._thread.join(10)
        self.listener.close()
