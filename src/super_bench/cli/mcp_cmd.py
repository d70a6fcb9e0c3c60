"""``super-bench mcp``."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import click

from super_bench.cli._serving import Serving, serving_options


@click.command("mcp")
@click.option("--http", "use_http", is_flag=True, help="Serve streamable HTTP instead of stdio.")
@serving_options(port=8766, session="MCP session", when="with --http")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Run directory every episode is written to; an existing one of the same settings is added to. "
    "[default: runs/<time>-mcp]",
)
@click.option("--agent-name", help="The agent's name in the results [default: mcp:<the client's name>].")
@click.option("--model", help="The model the client uses, recorded with its results.")
def mcp_command(use_http: bool, serving: Serving, out: Path | None, agent_name: str | None, model: str | None) -> None:
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
    from super_bench.runner.config import AgentChoice, RunConfig, TaskChoice
    from super_bench.runner.rundir import RunDir
    from super_bench.sandbox import check_backend

    check_backend(serving.sandbox)
    # The run's agent (the manifest's, which leaderboards show): the name given, else "mcp"; each trajectory has
    # its client's own name.
    agent = agent_name or "mcp"
    config = RunConfig(
        tasks=TaskChoice(source=serving.sources[0]),
        agent=AgentChoice(name=agent, model=model),
        env=serving.env(),
        out=out,
        mode=serving.mode,
    )
    run_dir = RunDir(out or Path("runs") / datetime.now().strftime("%Y%m%d-%H%M%S-mcp"))
    settings = serve.Settings(
        sources=serving.sources,
        max_sessions=serving.max_sessions,
        idle_timeout=serving.idle_timeout,
        agent_name=agent_name,
    )
    if not use_http:
        click.echo(f"super-bench MCP server on stdio, writing {run_dir.path}", err=True)
        serve.run_stdio(config, run_dir, settings)
        return
    token, token_note = serving.token_and_note()
    listener = serve.listen(serving.host, serving.port)
    serving.warn_if_exposed()
    click.echo(f"super-bench MCP server on {serve.url_of(listener)}, writing {run_dir.path}")
    click.echo(token_note)
    click.echo("Clients send the header 'Authorization: Bearer <token>'. Ctrl-C stops the server.", nl=True)
    try:
        serve.run_http(config, run_dir, settings, listener, token, serving.host)
    except KeyboardInterrupt:
        pass
    click.echo("server stopped; every task's sandbox is stopped and its episode written")
