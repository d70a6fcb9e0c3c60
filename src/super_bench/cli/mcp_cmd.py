"""``super-bench mcp``."""

from __future__ import annotations

import secrets
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from super_bench.cli._options import Default, budget_options, mode_option, sandbox_options
from super_bench.cli.serve_cmd import SESSIONS, is_loopback

if TYPE_CHECKING:
    from super_bench.sandbox import SandboxConfig


@click.command("mcp")
@click.option("--http", "use_http", is_flag=True, help="Serve streamable HTTP instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (with --http).")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8766,
    show_default=True,
    help="Port (with --http); 0 picks a free one.",
)
@click.option(
    "--token",
    envvar="SUPER_BENCH_TOKEN",
    help="Token HTTP clients must send as 'Authorization: Bearer <token>' [default: $SUPER_BENCH_TOKEN, else a new "
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
    help="Tasks running at once (one per MCP session).",
)
@click.option(
    "--idle-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=Default(SESSIONS + "idle_timeout"),
    show_default=True,
    help="Seconds without a tool call after which a task is ended (agent_stopped) and its sandbox stopped.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Run directory every episode is written to; an existing one of the same settings is added to. "
    "[default: runs/<time>-mcp]",
)
@click.option("--agent-name", help="The agent's name in the results [default: mcp:<the client's name>].")
@click.option("--model", help="The model the client uses, recorded with its results.")
@budget_options
@mode_option
def mcp_command(
    use_http: bool,
    host: str,
    port: int,
    token: str | None,
    sandbox: SandboxConfig,
    sources: tuple[str, ...],
    max_sessions: int,
    idle_timeout: float,
    out: Path | None,
    agent_name: str | None,
    model: str | None,
    cell_timeout: float,
    max_steps: int,
    max_compute: float,
    output_limit: int | None,
    mode: str,
) -> None:
    """Serve SUPER tasks to any MCP client.

    For Claude Code, Codex CLI, the OpenAI Agents SDK and every other client of the Model Context Protocol.

    Tools: start_task, read_task, execute_cell, continue_wait, interrupt_cell, edit_file, submit_answer.
    Each MCP session runs one task at a time in a sandbox of its own; every episode is written to the run
    directory, as `super-bench run` writes one, so `score`, `view`, `analyze` and `verify` read it. Over stdio
    (the default) the client starts this command; with --http, clients connect to http://HOST:PORT/mcp and
    send the token.
    """
    from super_bench.errors import ConfigError

    try:
        from super_bench.integrations.mcp_ext import serve
    except ImportError as e:
        raise ConfigError(
            f"`super-bench mcp` needs the mcp extra ({e.name} is missing); "
            "install it with: pip install 'super-bench[mcp]'"
        ) from e
    from super_bench.environment import EnvConfig
    from super_bench.runner.config import RunConfig
    from super_bench.runner.rundir import RunDir
    from super_bench.sandbox import check_backend

    check_backend(sandbox)
    env = EnvConfig(
        cell_timeout=cell_timeout,
        max_steps=max_steps,
        max_compute=max_compute,
        **({"episode_output_limit": output_limit} if output_limit else {}),
        sandbox=sandbox,
    )
    # The run's agent (the manifest's, which leaderboards show): the name given, else "mcp"; each trajectory has
    # its client's own name.
    agent = agent_name or "mcp"
    config = RunConfig(source=sources[0], agent=agent, model=model, env=env, out=out, mode=mode)
    run_dir = RunDir(out or Path("runs") / datetime.now().strftime("%Y%m%d-%H%M%S-mcp"))
    settings = serve.Settings(
        sources=sources, max_sessions=max_sessions, idle_timeout=idle_timeout, agent_name=agent_name
    )
    if not use_http:
        click.echo(f"super-bench MCP server on stdio, writing {run_dir.path}", err=True)
        serve.run_stdio(config, run_dir, settings)
        return
    if not token or not token.strip():
        token = secrets.token_urlsafe(24)
        token_note = f"token: {token}"
    else:
        token_note = "token: as given by --token or SUPER_BENCH_TOKEN"
    listener = serve.listen(host, port)
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
    click.echo(f"super-bench MCP server on {serve.url_of(listener)}, writing {run_dir.path}")
    click.echo(token_note)
    click.echo("Clients send the header 'Authorization: Bearer <token>'. Ctrl-C stops the server.", nl=True)
    try:
        serve.run_http(config, run_dir, settings, listener, token, host)
    except KeyboardInterrupt:
        pass
    click.echo("server stopped; every task's sandbox is stopped and its episode written")
