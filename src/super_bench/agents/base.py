"""The agent interface and registry.

An agent is anything with a ``name`` and a ``run(env)`` that acts on the environment until
the episode is done (or it gives up). Agents are created from a spec string such as
``gold``, ``replay:actions.json``, ``react-super`` or ``reflexion:swe-agent``; third-party
agents register under the ``super_bench.agents`` entry-point group.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import ConfigDict, Field

from super_bench._pydantic import Model
from super_bench._registry import Registry
from super_bench.errors import AgentError
from super_bench.models.base import ModelOptions

if TYPE_CHECKING:
    from super_bench.environment import AgentEnv


@runtime_checkable
class Agent(Protocol):
    """Acts in an environment: ``env.task`` says what to do, ``env.step(action)`` does it."""

    name: str

    def run(self, env: AgentEnv) -> None: ...


class AgentOptions(Model):
    """What an agent is built from, besides its name."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | None = Field(None, description="Model as provider/name, for agents that use one")
    seed: int | None = Field(None, description="Sent with every model request, and part of the cache key")
    settings: dict[str, Any] = Field(default_factory=dict, description="Agent-specific options")
    model_options: ModelOptions = Field(default_factory=ModelOptions)


class AgentFactory(Protocol):
    """Builds an agent from the part of the spec after ``:`` (if any) and the options."""

    def __call__(self, arg: str | None, options: AgentOptions) -> Agent: ...


AGENTS: Registry[AgentFactory] = Registry("agent", "super_bench.agents")
AGENTS.register("gold", "super_bench.agents.gold:GoldAgent", summary="replays the task's gold solution")
AGENTS.register("replay", "super_bench.agents.replay:ReplayAgent", summary="replay:FILE replays a JSON list of actions")
AGENTS.register("react", "super_bench.agents.react:ReActAgent", summary="ReAct: thought, then execute or submit")
AGENTS.register("react-super", "super_bench.agents.react:ReActSuperAgent", summary="ReAct with the edit action")
AGENTS.register("swe-agent", "super_bench.agents.swe:SWEAgent", summary="SWE-agent-style file viewer and editor")
AGENTS.register(
    "reflexion", "super_bench.agents.reflexion:ReflexionAgent", summary="reflexion[:AGENT] retries after a reflection"
)
AGENTS.register(
    "mcp",
    "super_bench.integrations.mcp_ext.command:McpCommandAgent",
    extra="mcp",
    summary="mcp:COMMAND runs an external MCP client (Claude Code, Codex CLI, ...) on each task",
)
AGENTS.register("human", "super_bench.agents.human:HumanAgent", summary="a person at the terminal (super-bench play)")


def refuse_model(agent: str, options: AgentOptions | None) -> None:
    """An agent that asks no model refuses one, rather than label its run with a model that never ran."""
    if options is not None and options.model:
        raise AgentError(
            f"the {agent} agent uses no model, so --model {options.model} would only mislabel the run: leave it out"
        )


def create_agent(spec: str, options: AgentOptions | None = None) -> Agent:
    """An agent from ``name`` or ``name:arg`` (e.g. ``replay:actions.json``)."""
    name, _, arg = spec.partition(":")
    factory = AGENTS.get(name)
    agent = factory(arg or None, options or AgentOptions())
    if not isinstance(agent, Agent):
        raise AgentError(f"the agent {name!r} does not provide name and run(env)")
    return agent
