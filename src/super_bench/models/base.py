"""The chat-model interface: messages in; text, token usage and cost out.

Models are named ``provider/name`` (``openai/gpt-4o``, ``anthropic/claude-sonnet-4-5``,
``mock/replies.txt``) and made by ``create_model``. A provider implements ``_generate`` only;
``ChatModel.complete`` adds what every provider shares: cutting the reply at the stop
sequences (some OpenAI-compatible servers ignore them), pricing, and the response cache.
"""

from __future__ import annotations

import logging
import os
from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol

from pydantic import ConfigDict, Field
from typing_extensions import TypedDict

from super_bench._pydantic import Model
from super_bench._registry import Registry
from super_bench.actions import valid_text
from super_bench.errors import ConfigError
from super_bench.models.cache import Reply, ResponseCache
from super_bench.models.pricing import PriceTable
from super_bench.trajectory import Usage

log = logging.getLogger(__name__)
_unpriced_warned: set[str] = set()


class Message(TypedDict):
    role: Literal["system", "user", "assistant"]
    content: str


class ModelRequest(Model):
    """One chat completion request. Its JSON form (with the model's identity) keys the cache."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    messages: list[Message]
    max_tokens: int = Field(1500, ge=1, description="Tokens the reply may have")
    temperature: float | None = Field(None, ge=0)
    top_p: float | None = Field(None, gt=0, le=1)
    stop: list[str] = Field(default_factory=list, description="The reply ends before the first of these")
    seed: int | None = None


class ModelResponse(Model):
    text: str
    finish_reason: str | None = Field(None, description="stop, length, ... as the provider said")
    usage: Usage = Field(description="This call alone: one model call, its tokens and cost")
    cached: bool = False


def default_cache_path() -> Path | None:
    """``$SUPER_BENCH_CACHE`` (``off`` turns caching off), else the user's cache directory."""
    configured = os.environ.get("SUPER_BENCH_CACHE")
    if configured:
        return None if configured.lower() in ("off", "0", "false", "none") else Path(configured).expanduser()
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "super-bench" / "responses.sqlite"


class ModelOptions(Model):
    """How models are made, for every provider. Holds no secrets: keys come from the environment."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cache: Path | None = Field(
        default_factory=default_cache_path, description="SQLite file of cached replies; None turns the cache off"
    )
    prices: Path | None = Field(None, description="JSON or TOML price file, added to the built-in table")
    timeout: float = Field(600, gt=0, description="Seconds one request may take")
    max_retries: int = Field(6, ge=0, description="Retries on rate limits, timeouts and server errors")
    base_url: str | None = Field(
        None, description="API endpoint (default: the provider's variable, e.g. OPENAI_BASE_URL)"
    )


class ChatModel(ABC):
    """A chat model of one provider. Subclasses implement ``_generate``."""

    provider: ClassVar[str]
    cacheable: ClassVar[bool] = True

    def __init__(self, name: str, options: ModelOptions | None = None) -> None:
        if not name:
            raise ConfigError(f"a {self.provider} model needs a name: {self.provider}/NAME")
        self.name = name
        self.options = options or ModelOptions()
        self.prices = PriceTable.load(self.options.prices)
        self.cache = ResponseCache(self.options.cache) if self.cacheable and self.options.cache else None
        if self.prices.lookup(self.spec) is None and self.spec not in _unpriced_warned:
            _unpriced_warned.add(self.spec)
            log.warning("no price known for %s: its cost is counted as 0 (add one with --prices FILE)", self.spec)

    @property
    def spec(self) -> str:
        return f"{self.provider}/{self.name}"

    def identity(self) -> dict[str, Any]:
        """What, besides the request, decides the reply (e.g. the server's URL); part of the cache key."""
        return {"model": self.spec}

    @abstractmethod
    def _generate(self, request: ModelRequest) -> Reply:
        """Ask the provider; raise ConfigError for a bad key or model, ModelUnavailableError when the
        service cannot be used, ModelError when it refused the request."""

    def complete(self, request: ModelRequest, *, volatile: Mapping[str, str] | None = None) -> ModelResponse:
        """Ask the model (or the cache). ``volatile`` maps text that differs between reruns without
        changing the request's meaning (a task's random sandbox directory) to a placeholder: the
        cache key sees the placeholder, and a cached reply gets the current text back."""
        volatile = volatile or {}
        key = (
            ResponseCache.key(self.identity(), _replace(request, volatile).model_dump(mode="json"))
            if self.cache
            else ""
        )
        reply = self.cache.get(key) if self.cache else None
        cached = reply is not None
        if reply is not None:
            reply = reply._replace(text=_substitute(reply.text, {v: k for k, v in volatile.items()}))
        else:
            # Model output is text whatever it holds: a lone surrogate (a server may send "\\ud800") becomes U+FFFD
            # here, so that no store after it (the cache, the trajectory, the results) has to refuse it.
            reply = cut_at_stop(self._generate(request), request.stop)
            reply = reply._replace(text=valid_text(reply.text))
            if self.cache:
                self.cache.put(key, self.spec, reply._replace(text=_substitute(reply.text, volatile)))
        usage = Usage(
            model_calls=1,
            cached_calls=int(cached),
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            cost=self.prices.cost(self.spec, reply.prompt_tokens, reply.completion_tokens),
        )
        return ModelResponse(text=reply.text, finish_reason=reply.finish_reason, usage=usage, cached=cached)


def _substitute(text: str, replacements: Mapping[str, str]) -> str:
    for old, new in replacements.items():
        text = text.replace(old, new)
    return text


def _replace(request: ModelRequest, volatile: Mapping[str, str]) -> ModelRequest:
    if not volatile:
        return request
    messages: list[Message] = [
        {"role": m["role"], "content": _substitute(m["content"], volatile)} for m in request.messages
    ]
    return request.model_copy(update={"messages": messages})


def cut_at_stop(reply: Reply, stop: list[str]) -> Reply:
    """The reply up to the first stop sequence, as servers that honour ``stop`` return it."""
    cuts = [i for s in stop if s and (i := reply.text.find(s)) >= 0]
    if not cuts:
        return reply
    return reply._replace(text=reply.text[: min(cuts)], finish_reason="stop")


class ModelFactory(Protocol):
    def __call__(self, name: str, options: ModelOptions | None = None) -> ChatModel: ...


MODELS: Registry[ModelFactory] = Registry("model provider", "super_bench.models")
MODELS.register(
    "openai", "super_bench.models.openai_chat:OpenAIChat", summary="the OpenAI API or any compatible server"
)
MODELS.register(
    "anthropic", "super_bench.models.anthropic_chat:AnthropicChat", extra="anthropic", summary="the Anthropic API"
)
MODELS.register(
    "mock", "super_bench.models.mock:MockModel", summary="scripted replies from a file, for tests and demos"
)


def create_model(spec: str, options: ModelOptions | None = None) -> ChatModel:
    """A model from ``provider/name``: ``openai/gpt-4o``, ``anthropic/claude-sonnet-4-5``, ``mock/replies.txt``."""
    provider, sep, name = spec.partition("/")
    if not sep or not provider or not name:
        raise ConfigError(f"a model is named provider/name (e.g. openai/gpt-4o, mock/replies.txt); got {spec!r}")
    return MODELS.get(provider)(name, options)
