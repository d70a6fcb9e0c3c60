"""``openai/NAME``: the OpenAI API, or any server that speaks it (vLLM, Ollama, Together, OpenRouter, ...).

The official SDK does the work, retries included (rate limits, timeouts, connection failures
and 5xx, with exponential backoff that honours ``Retry-After``). ``OPENAI_BASE_URL`` points it at
another server and ``OPENAI_API_KEY`` holds the key; a self-hosted server needs no key.
"""

from __future__ import annotations

import json
import logging
import os
import time
from typing import Any

import openai

from super_bench.errors import ConfigError, ModelUnavailableError
from super_bench.models._api import translate
from super_bench.models.base import ChatModel, ModelOptions, ModelRequest
from super_bench.models.cache import Reply
from super_bench.models.mock import estimate_tokens

log = logging.getLogger(__name__)

# The API accepts at most four stop sequences.
MAX_STOP = 4
# A reply that is not a chat completion (a proxy's error page, a truncated body) is asked for again
# this many times; the SDK retries only the failures it can see in the HTTP status.
MALFORMED_RETRIES = 2


class _Malformed(Exception):
    pass


class OpenAIChat(ChatModel):
    provider = "openai"

    def __init__(self, name: str, options: ModelOptions | None = None) -> None:
        super().__init__(name, options)
        base_url = self.options.base_url or os.environ.get("OPENAI_BASE_URL") or None
        key = os.environ.get("OPENAI_API_KEY")
        if not key:
            if base_url is None:
                raise ConfigError(
                    f"{self.spec} needs an API key: set OPENAI_API_KEY, or set OPENAI_BASE_URL to a "
                    "self-hosted OpenAI-compatible server (vLLM, Ollama, ...), which needs none"
                )
            key = "none"  # self-hosted servers accept any key unless told otherwise
        self.client = openai.OpenAI(
            api_key=key, base_url=base_url, timeout=self.options.timeout, max_retries=self.options.max_retries
        )
        self.server = str(self.client.base_url).rstrip("/")

    def identity(self) -> dict[str, Any]:
        return {"model": self.spec, "server": self.server}

    def _generate(self, request: ModelRequest) -> Reply:
        params: dict[str, Any] = {"model": self.name, "messages": request.messages, "max_tokens": request.max_tokens}
        if request.temperature is not None:
            params["temperature"] = request.temperature
        if request.top_p is not None:
            params["top_p"] = request.top_p
        if request.stop:
            params["stop"] = request.stop[:MAX_STOP]
        if request.seed is not None:
            params["seed"] = request.seed
        for attempt in range(MALFORMED_RETRIES + 1):
            try:
                return self._ask(params, request)
            except _Malformed as e:
                if attempt == MALFORMED_RETRIES:
                    raise ModelUnavailableError(
                        f"{self.server} sent a malformed reply for {self.spec} ({e}), "
                        f"{MALFORMED_RETRIES} retries included"
                    ) from e
                log.warning("%s sent a malformed reply (%s); asking again", self.server, e)
                time.sleep(0.25 * 2**attempt)
        raise AssertionError("unreachable")

    def _ask(self, params: dict[str, Any], request: ModelRequest) -> Reply:
        try:
            response = self.client.chat.completions.with_raw_response.create(**params)
            completion: Any = _parse(response)
        except openai.OpenAIError as e:
            raise translate(
                e,
                openai,
                spec=self.spec,
                server=self.server,
                key_variable="OPENAI_API_KEY",
                retries=self.options.max_retries,
            ) from e
        except ValueError as e:  # json.JSONDecodeError and UnicodeDecodeError: the body is not JSON
            raise _Malformed(f"the body is not JSON: {e}") from e
        choices = getattr(completion, "choices", None)
        choice = choices[0] if choices else None
        message = getattr(choice, "message", None)
        if message is None:
            raise _Malformed(f"no choices[0].message in {completion!r:.200}")
        text = message.content or ""
        usage = getattr(completion, "usage", None)
        if usage is not None and usage.prompt_tokens is not None:
            prompt_tokens, completion_tokens = usage.prompt_tokens, usage.completion_tokens or 0
        else:
            log.debug("%s reported no token usage; estimating it", self.server)
            prompt_tokens = sum(estimate_tokens(m["content"]) for m in request.messages)
            completion_tokens = estimate_tokens(text)
        return Reply(text, prompt_tokens, completion_tokens, getattr(choice, "finish_reason", None))


def _parse(response: Any) -> Any:
    """The completion of a raw response. A body holding bytes that are not UTF-8, which the SDK refuses whole
    (``UnicodeDecodeError``), is read with each such byte as U+FFFD: a model's reply is text whatever bytes the
    server sent."""
    try:
        return response.parse()
    except UnicodeDecodeError:
        from openai.types.chat import ChatCompletion

        try:  # Python's JSON reader: pydantic's refuses a lone surrogate's escape, which the reply may hold too
            return ChatCompletion.model_validate(json.loads(response.content.decode("utf-8", "replace")))
        except (ValueError, RecursionError) as e:
            raise _Malformed(f"the body is not a chat completion: {e}") from e
