"""Running the API under uvicorn, and stopping it cleanly.

On SIGINT or SIGTERM uvicorn stops accepting connections, waits a while for the requests in flight and
then cancels them: a step that runs a long cell would be cut off with a plain-text 500 and a traceback in
the log, and its sandbox stopped only afterwards. Here every session is closed first, as a DELETE would
close it: the kernel of a step in flight is killed, so the step is answered at once with the JSON 410 of
a closed session; a session still starting is stopped and answered 503; sandboxes are gone before the
server stops listening.
"""

from __future__ import annotations

import socket

import uvicorn

from super_bench.integrations.server.app import create_app
from super_bench.integrations.server.sessions import SessionManager


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, manager: SessionManager) -> None:
        super().__init__(config)
        self.manager = manager

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await self.manager.close_all()
        await super().shutdown(sockets)


def make_server(manager: SessionManager, token: str, *, log_level: str = "info") -> uvicorn.Server:
    """A uvicorn server of the API over ``manager`` that closes every session first when it stops."""
    config = uvicorn.Config(create_app(manager, token), log_level=log_level, timeout_graceful_shutdown=3)
    return _Server(config, manager)
