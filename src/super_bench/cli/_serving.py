"""The options and start-up of the commands that serve the environment to clients (``serve``, ``mcp``), declared
once: where to listen, the token, the sandbox, the task sources, the sessions and their limits, the scoring mode."""

from __future__ import annotations

import functools
import ipaddress
import secrets
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import click

from super_bench.cli._options import Default, budget_options, mode_option, sandbox_options

if TYPE_CHECKING:
    from super_bench.environment import EnvConfig
    from super_bench.sandbox import SandboxConfig

F = TypeVar("F", bound=Callable[..., Any])

SESSIONS = "super_bench.integrations.server.sessions:SessionManager."


@dataclass(frozen=True)
class Serving:
    """What the options of a serving command gave."""

    host: str
    port: int
    token: str | None
    sandbox: SandboxConfig
    sources: tuple[str, ...]
    max_sessions: int
    idle_timeout: float
    cell_timeout: float
    max_steps: int
    max_compute: float
    output_limit: int | None
    mode: str

    def env(self) -> EnvConfig:
        """The environment every session gets."""
        from super_bench.environment import EnvConfig

        return EnvConfig(
            cell_timeout=self.cell_timeout,
            max_steps=self.max_steps,
            max_compute=self.max_compute,
            **({"episode_output_limit": self.output_limit} if self.output_limit else {}),
            sandbox=self.sandbox,
        )

    def token_and_note(self) -> tuple[str, str]:
        """The token clients send (a new random one when none was given), and the line that tells of it."""
        if not self.token or not self.token.strip():
            token = secrets.token_urlsafe(24)
            return token, f"token: {token}"
        return self.token, "token: as given by --token or SUPER_BENCH_TOKEN"

    def warn_if_exposed(self) -> None:
        """Say loudly when the server listens beyond this machine."""
        if is_loopback(self.host):
            return
        from super_bench.terminal import wrapped

        click.secho(
            wrapped(
                f"WARNING: listening on {self.host}, not on localhost. Anyone who can reach this port and has the "
                "token can run any code on this machine through the sandboxes. Use --host 127.0.0.1 unless you need "
                "this.",
                sys.stderr,
            ),
            fg="red",
            bold=True,
            err=True,
        )


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serving_options(*, port: int, session: str, when: str = "") -> Callable[[F], F]:
    """The options of a serving command, passed on as one ``serving`` argument (``Serving``). ``port``: its default;
    ``session``: what a session is called in the help; ``when``: the condition the listening options need."""
    suffix = f" ({when})" if when else ""
    options = (
        click.option("--host", default="127.0.0.1", show_default=True, help=f"Address to listen on{suffix}."),
        click.option(
            "--port",
            type=click.IntRange(0, 65535),
            default=port,
            show_default=True,
            help=f"Port{suffix}; 0 picks a free one.",
        ),
        click.option(
            "--token",
            envvar="SUPER_BENCH_TOKEN",
            help="Token clients must send as 'Authorization: Bearer <token>' [default: $SUPER_BENCH_TOKEN, else a new "
            "random one, printed at start-up].",
        ),
        sandbox_options,
        click.option(
            "--source",
            "sources",
            multiple=True,
            type=str,
            default=Default(SESSIONS + "sources"),
            show_default=True,
            help="A task source clients may use (repeatable); the first is the default.",
        ),
        click.option(
            "--max-sessions",
            type=click.IntRange(min=1),
            default=Default(SESSIONS + "max_sessions"),
            show_default=True,
            help=f"{session[0].upper()}{session[1:]}s at once.",
        ),
        click.option(
            "--idle-timeout",
            type=click.FloatRange(min=0, min_open=True),
            default=Default(SESSIONS + "idle_timeout"),
            show_default=True,
            help=f"Seconds without an action after which the {session} is ended and its sandbox stopped.",
        ),
        budget_options,
        mode_option,
    )
    names = Serving.__dataclass_fields__

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def with_serving(*args: Any, **kwargs: Any) -> Any:
            serving = Serving(**{name: kwargs.pop(name) for name in names})
            return function(*args, serving=serving, **kwargs)

        wrapped: F = with_serving  # type: ignore[assignment]
        for option in reversed(options):
            wrapped = option(wrapped)
        return wrapped

    return decorate
