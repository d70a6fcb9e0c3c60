"""Bearer-token authentication for the HTTP servers (``super-bench serve`` and ``super-bench mcp --http``).

An ASGI middleware, so it needs Starlette (the ``server`` or ``mcp`` extra): imported only by them.
"""

from __future__ import annotations

import hmac
from collections.abc import Collection

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send


class BearerAuth:
    """Refuses any request without the right bearer token (but those in ``open``: method and path pairs),
    before anything else looks at it."""

    def __init__(self, app: ASGIApp, token: str, open: Collection[tuple[str, str]] = ()) -> None:
        self.app = app
        self.token = token.encode()
        self.open = frozenset(open)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (scope["method"], scope["path"]) not in self.open:
            scheme, _, given = Headers(scope=scope).get("authorization", "").partition(" ")
            # compare_digest takes constant time, so the comparison does not leak how much matched
            if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), self.token):
                response = JSONResponse(
                    {"detail": "missing or wrong token: send the header 'Authorization: Bearer <token>'"},
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
