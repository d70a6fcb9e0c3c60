"""``super-bench serve``."""

from __future__ import annotations

import ipaddress
import secrets
import signal
import socket
import sys
from typing import TYPE_CHECKING

import click

from super_bench.cli._options import Default, budget_options, mode_option, sandbox_options

if TYPE_CHECKING:
    from super_bench.sandbox import SandboxConfig

SESSIONS = "super_bench.integrations.server.sessions:SessionManager."


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="Port; 0 picks a free one."
)
@click.option(
    "--token",
    envvar="SUPER_BENCH_TOKEN",
    help="Token clients must send as 'Authorization: Bearer <token>' [default: $SUPER_BENCH_TOKEN, else a new "
    "random one, printed at start-up].",
)
@sandbox_options
@click.option(
    "--source",
    "sources",
    multiple=True,
    type=str,
    default=Default(SESSIONS + "sources"),
    show_default=True,
    help="A task source clients may use (repeatable); the first is the default.",
)
@click.option(
    "--max-sessions",
    type=click.IntRange(min=1),
    default=Default(SESSIONS + "max_sessions"),
    show_default=True,
    help="Sessions at once.",
)
@click.option(
    "--idle-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=Default(SESSIONS + "idle_timeout"),
    show_default=True,
    help="Seconds without an action after which a session is closed and its sandbox stopped.",
)
@budget_options
@mode_option
def serve_command(
    host: str,
    port: int,
    token: str | None,
    sandbox: SandboxConfig,
    sources: tuple[str, ...],
    max_sessions: int,
    idle_timeout: float,
    cell_timeout: float,
    max_steps: int,
    max_compute: float,
    output_limit: int | None,
    mode: str,
) -> None:
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
    from super_bench.environment import EnvConfig
    from super_bench.integrations.server.sessions import SessionManager
    from super_bench.sandbox import check_backend

    check_backend(sandbox)
    if not token or not token.strip():
        token = secrets.token_urlsafe(24)
        token_note = f"token: {token}"
    else:
        token_note = "token: as given by --token or SUPER_BENCH_TOKEN"
    manager = SessionManager(
        EnvConfig(
            cell_timeout=cell_timeout,
            max_steps=max_steps,
            max_compute=max_compute,
            **({"episode_output_limit": output_limit} if output_limit else {}),
            sandbox=sandbox,
        ),
        sources=sources,
        max_sessions=max_sessions,
        idle_timeout=idle_timeout,
        mode=mode,  # type: ignore[arg-type]
    )
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        listener = socket.create_server((host, port), family=family)
    except OSError as e:
        raise ConfigError(f"cannot listen on {host}:{port}: {e}") from e
    bound_port = listener.getsockname()[1]
    if not is_loopback(host):
        from super_bench.terminal import wrapped

        click.secho(
            wrapped(
                f"WARNING: listening on {host}, not on localhost. Anyone who can reach this port and has the token "
                "can run any code on this machine through the sandboxes. Use --host 127.0.0.1 unless you need this.",
                sys.stderr,
            ),
            fg="red",
            bold=True,
            err=True,
        )
    url_host = f"[{host}]" if ":" in host else host
    click.echo(f"super-bench environment server on http://{url_host}:{bound_port}")
    click.echo(token_note, nl=True)
    click.echo(
        "Send every request with the header 'Authorization: Bearer <token>'; the API description, "
        "GET /openapi.json, needs none. Ctrl-C stops the server."
    )
    # uvicorn stops on SIGINT and SIGTERM (every session closed first: server/serving.py), then sends the
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


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
