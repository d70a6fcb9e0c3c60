"""What agents driven by a chat model share: settings, the conversation built from the
trajectory, format retries, and usage accounting against the episode's budgets.

The conversation is rebuilt from the trajectory before every call: the system prompt, the
query, then for each step the action (as the model wrote it) and its observation. Older
observations are cut to their last 500 characters and the latest to its last 50,000, as in
the paper's agents. A reply that cannot be read is answered with a correction, up to three
times; then the episode stops with ``format_error``, keeping the replies.
"""

from __future__ import annotations

import posixpath
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import ConfigDict, Field, ValidationError

from super_bench._pydantic import Model
from super_bench.actions import Action
from super_bench.agents.base import AgentOptions
from super_bench.errors import AgentError, ConfigError
from super_bench.models import ChatModel, Message, ModelRequest, ModelResponse, create_model
from super_bench.trajectory import Usage

if TYPE_CHECKING:
    from super_bench.environment import AgentEnv
    from super_bench.trajectory import Step


class LLMSettings(Model):
    """Settings of a model-driven agent (``--agent-setting KEY=VALUE``); the defaults are the paper's."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float | None = Field(0.2, ge=0)
    top_p: float | None = Field(0.5, gt=0, le=1)
    max_response_tokens: int = Field(1500, ge=1)
    format_retries: int = Field(3, ge=0, description="Corrections asked for before stopping with format_error")
    old_observation_chars: int = Field(500, ge=0, description="Characters kept of every observation but the latest")
    last_observation_chars: int = Field(50_000, ge=1, description="Characters kept of the latest observation")


class FormatError(Exception):
    """The model's reply does not follow the format; the message tells the model what is wrong."""


@dataclass
class Parsed:
    """An action read from a reply."""

    thought: str | None
    action: Action
    metadata: dict[str, Any] = field(default_factory=dict)
    after: Callable[[Step], None] | None = None  # run on the step once the action is done


def parse_settings(model: type[LLMSettings], settings: dict[str, Any], agent: str) -> Any:
    try:
        return model.model_validate(settings)
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors())
        known = ", ".join(model.model_fields)
        raise ConfigError(f"invalid setting for the {agent} agent ({problems}); its settings are: {known}") from e


def model_for(agent: str, options: AgentOptions) -> ChatModel:
    if not options.model:
        raise ConfigError(
            f"the {agent} agent needs a model: --model PROVIDER/NAME (openai/gpt-4o, anthropic/claude-sonnet-4-5, "
            "or mock/replies.txt for a scripted one)"
        )
    return create_model(options.model, options.model_options)


def volatile_paths(env: AgentEnv) -> dict[str, str]:
    """The task's sandbox directory, which is random in sandboxes without a fixed working directory:
    replaced by a placeholder in the cache key, so that a rerun's identical conversation hits the cache."""
    task_dir = posixpath.dirname(env.workdir.rstrip("/"))
    return {task_dir: "{{super-bench:task-dir}}"} if len(task_dir) > 1 else {}


def cut_observation(text: str, limit: int) -> str:
    """The last ``limit`` characters, marked as cut when anything was dropped."""
    if len(text) <= limit:
        return text
    return "(truncated) ... " + (text[-limit:] if limit else "")


class LLMAgent(ABC):
    """An agent that asks a chat model for one action at a time."""

    name: ClassVar[str]
    stop_sequences: ClassVar[list[str]] = []
    settings_model: ClassVar[type[LLMSettings]] = LLMSettings

    def __init__(self, arg: str | None = None, options: AgentOptions | None = None, *, model: ChatModel | None = None):
        if arg:
            raise AgentError(f"the {self.name} agent takes no argument (got {arg!r})")
        options = options or AgentOptions()
        self.settings = parse_settings(self.settings_model, options.settings, self.name)
        self.model = model or model_for(self.name, options)
        self.seed = options.seed

    # -- what each agent defines ----------------------------------------------------------------
    @abstractmethod
    def system_prompt(self, env: AgentEnv) -> str: ...

    @abstractmethod
    def parse(self, reply: str, env: AgentEnv) -> Parsed:
        """The action in a reply; raises FormatError saying what is wrong."""

    @abstractmethod
    def render_action(self, step: Step) -> str:
        """A past step's action as the model would have written it."""

    @abstractmethod
    def format_help(self, error: FormatError) -> str:
        """The correction sent after an unreadable reply."""

    def render_observation(self, step: Step, text: str) -> str:
        return f"Observation: ```\n{text}\n```"

    def query_message(self, env: AgentEnv) -> str:
        return f"Query: {env.task.query}"

    # -- the loop -------------------------------------------------------------------------------
    def run(self, env: AgentEnv) -> None:
        if env.budget_left().cost is not None and self.model.prices.lookup(self.model.spec) is None:
            raise ConfigError(
                f"--max-cost needs the price of {self.model.spec}, which is not in the price table; "
                "give it with --prices FILE"
            )
        while not env.done:
            parsed = self.next_action(env)
            if parsed is None:
                return
            step = env.step(parsed.action, thought=parsed.thought, metadata=parsed.metadata)
            if parsed.after is not None:
                parsed.after(step)

    def messages(self, env: AgentEnv) -> list[Message]:
        messages: list[Message] = [
            {"role": "system", "content": self.system_prompt(env)},
            {"role": "user", "content": self.query_message(env)},
        ]
        steps = env.trajectory.steps
        for i, step in enumerate(steps):
            limit = self.settings.last_observation_chars if i == len(steps) - 1 else self.settings.old_observation_chars
            messages.append({"role": "assistant", "content": self.render_action(step)})
            messages.append(
                {"role": "user", "content": self.render_observation(step, cut_observation(step.observation, limit))}
            )
        return messages

    def ask(self, env: AgentEnv, messages: list[Message]) -> ModelResponse:
        """One model call, counted in the episode's usage."""
        request = ModelRequest(
            messages=messages,
            max_tokens=self.settings.max_response_tokens,
            temperature=self.settings.temperature,
            top_p=self.settings.top_p,
            stop=self.stop_sequences,
            seed=self.seed,
        )
        response = self.model.complete(request, volatile=volatile_paths(env))
        env.add_usage(response.usage)
        return response

    def next_action(self, env: AgentEnv) -> Parsed | None:
        """Ask until a reply parses (or the retries or a budget run out, which ends the episode)."""
        base = self.messages(env)
        messages = base
        failures: list[dict[str, str]] = []
        spent = Usage()
        for _ in range(self.settings.format_retries + 1):
            if env.check_budgets():
                return None
            response = self.ask(env, messages)
            spent.add(response.usage)
            try:
                parsed = self.parse(response.text, env)
            except FormatError as e:
                failures.append({"reply": response.text, "error": str(e)})
                messages = [
                    *base,
                    {"role": "assistant", "content": response.text or "(an empty reply)"},
                    {"role": "user", "content": self.format_help(e)},
                ]
                continue
            parsed.metadata.update(reply=response.text, usage=spent.model_dump())
            if failures:
                parsed.metadata["format_errors"] = failures
            return parsed
        env.trajectory.metadata["format_errors"] = failures
        env.stop("format_error")
        return None
