"""Agents: the gold and replay agents here; LLM agents plug into the same registry."""

from super_bench.agents.base import AGENTS, Agent, AgentOptions, create_agent

__all__ = ["AGENTS", "Agent", "AgentOptions", "create_agent"]
