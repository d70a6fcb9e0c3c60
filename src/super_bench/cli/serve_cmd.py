"""``super-bench serve``."""

from __future__ import annotations

import signal
import socket

import click

from super_bench.cli._serving import Serving, serving_options


@click.command("serve")
@serving_options(port=8765, session="session")
def serve_command(serving: Serving) -> None:
    """Serve the notebook environment over HTTP, for agents in any language.

    POST /v1/sessions starts a task, POST /v1/sessions/ID/step sends an action, GET /v1/sessions/ID
    returns the trajectory and scores, DELETE /v1/sessions/ID stops it. Each needs the token; GET
    /openapi.json, which describes them all, does not.
    """
    from super_bench.errors import ConfigError

    try:
        from super_bench.integrations.server.serving import make_server
    except ImportError as e:
        raise ConfigError(
            f"`super-bench serve` needs the server extra ({e.name} is missing); "
            "install it with: pip install 'super-bench[server]'"
        ) from e
    from super_bench.integrations.server.sessions import SessionManager
    from super_bench.sandbox import check_backend

    check_backend(serving.sandbox)
    token, token_note = serving.token_and_note()
    manager = SessionManager(
        serving.env(),
        sources=serving.sources,
        max_sessions=serving.max_sessions,
        idle_timeout=serving.idle_timeout,
        mode=serving.mode,  # type: ignore[arg-type]
    )
    host, port = serving.host, serving.port
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        listener = socket.create_server((host, port), family=family)
    except OSError as e:
        raise ConfigError(f"cannot listen on {host}:{port}: {e}") from e
    bound_port = listener.getsockname()[1]
    serving.warn_if_exposed()
    url_host = f"[{host}]" if ":" in host else host
    click.echo(f"super-bench environment server on http://{url_host}:{bound_port}")
    click.echo(token_note, nl=True)
    click.echo(
        "Send every request with the header 'Authorization: Bearer <token>'; the API description, "
        "GET /openapi.json, needs none. Ctrl-C stops the server."
    )
    # uvicorn stops on SIGINT and SIGTERM (every session closed first: integrations/server/serving.py), then sends the
    # signal again; SIGTERM's then ends here too, rather than killing the process by its default action.
    previous = signal.signal(signal.SIGTERM, _stopped)
    try:
        make_server(manager, token).run(sockets=[listener])
    except (KeyboardInterrupt, _Stopped):
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
    click.echo("server stopped; every session's sandbox is stopped")


class _Stopped(Exception):
    """SIGTERM, sent again by uvicorn once it stopped."""


def _stopped(signum: int, frame: object) -> None:
    raise _Stopped
