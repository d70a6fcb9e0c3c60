"""SUPER's notebook over the Model Context Protocol, so that any MCP client (Claude Code, Codex CLI, an OpenAI
Agents SDK app) acts in a task's environment and is scored like the built-in agents.

Needs the ``mcp`` extra (the official ``mcp`` SDK). ``episode`` turns an MCP client's tool calls into an
agent's steps in a runner episode, ``tools`` is the MCP server and its tools, ``hub`` the episodes of
``super-bench mcp`` and the run directory they write, ``http`` the loopback HTTP transport with its token,
``command`` the ``mcp:COMMAND`` agent that runs an external MCP client on each task of a run.
"""
