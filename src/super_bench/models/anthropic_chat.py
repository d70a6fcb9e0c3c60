"""``anthropic/NAME``: Claude models through the official Anthropic SDK (``pip install 'super-bench[anthropic]'``).

The SDK finds the key (``ANTHROPIC_API_KEY``, or its other credential sources), honours
``ANTHROPIC_BASE_URL``, and retries rate limits, timeouts, overloads and 5xx with backoff.
The current Messages API takes no sampling parameters, so temperature, top_p and seed are not
sent (they still key the response cache).
"""

from __future__ import annotations

from typing import Any

import anthropic

from super_bench.errors import ConfigError, ModelUnavailableError
from super_bench.models._api import translate
from super_bench.models.base import ChatModel, Message, ModelOptions, ModelRequest
from super_bench.models.cache import Reply

_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"}


def _turns(messages: list[Message]) -> tuple[str, list[dict[str, str]]]:
    """The system prompt and the conversation, with same-role neighbours merged (the API wants them
    to alternate, starting with the user)."""
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    turns: list[dict[str, str]] = []
    for m in messages:
        if m["role"] == "system":
            continue
        if turns and turns[-1]["role"] == m["role"]:
            turns[-1]["content"] += "\n\n" + m["content"]
        else:
            turns.append({"role": m["role"], "content": m["content"]})
    if not turns or turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "content": "Begin."})
    return system, turns


class AnthropicChat(ChatModel):
    provider = "anthropic"

    def __init__(self, name: str, options: ModelOptions | None = None) -> None:
        super().__init__(name, options)
        try:
            self.client = anthropic.Anthropic(
                base_url=self.options.base_url, timeout=self.options.timeout, max_retries=self.options.max_retries
            )
        except anthropic.AnthropicError as e:
            raise ConfigError(f"{self.spec}: {e} (set ANTHROPIC_API_KEY)") from e
        # The SDK looks for credentials only when it sends the first request; checked here, before any run
        # directory or sandbox exists: a key or token it found, or a credential provider (a profile).
        if not self.client.auth_headers and self.client.custom_auth is None:
            raise ConfigError(
                f"{self.spec} needs an API key: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN, or an Anthropic "
                "credential profile)"
            )
        self.server = str(self.client.base_url).rstrip("/")

    def identity(self) -> dict[str, Any]:
        return {"model": self.spec, "server": self.server}

    def _generate(self, request: ModelRequest) -> Reply:
        system, turns = _turns(request.messages)
        params: dict[str, Any] = {"model": self.name, "max_tokens": request.max_tokens, "messages": turns}
        if system:
            params["system"] = system
        if request.stop:
            params["stop_sequences"] = request.stop
        try:
            message = self.client.messages.create(**params)
        except anthropic.AnthropicError as e:
            raise translate(
                e,
                anthropic,
                spec=self.spec,
                server=self.server,
                key_variable="ANTHROPIC_API_KEY",
                retries=self.options.max_retries,
            ) from e
        except TypeError as e:
            if "authentication" not in str(e):
                raise
            raise ConfigError(f"{self.spec} needs an API key: set ANTHROPIC_API_KEY ({e})") from e
        except ValueError as e:
            raise ModelUnavailableError(f"{self.server} sent a malformed reply for {self.spec}: {e}") from e
        content = getattr(message, "content", None)
        usage = getattr(message, "usage", None)
        if not isinstance(content, list) or usage is None:
            raise ModelUnavailableError(f"{self.server} sent a malformed reply for {self.spec}: {message!r:.300}")
        text = "".join(getattr(block, "text", "") for block in content if getattr(block, "type", None) == "text")
        prompt_tokens = (
            (usage.input_tokens or 0) + (usage.cache_read_input_tokens or 0) + (usage.cache_creation_input_tokens or 0)
        )
        stop_reason = getattr(message, "stop_reason", None)
        return Reply(text, prompt_tokens, usage.output_tokens or 0, _FINISH.get(stop_reason or "", stop_reason))
