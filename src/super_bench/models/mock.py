"""The scripted mock model: replies from a file, a list, or a function. For tests and demos.

``mock/PATH`` reads PATH: a JSON list of replies, or text in which replies are separated by
lines of five or more ``=`` signs. The n-th call gets the n-th reply (cut at the request's stop
sequences, as a real server would), whatever the prompt. From Python, ``MockModel("name",
replies=[...])`` or ``MockModel("name", responder=fn)`` where ``fn(request)`` returns the reply.
Token counts are estimated at four characters a token, so budgets and costs can be exercised.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from super_bench.errors import ConfigError, ModelError
from super_bench.models.base import ChatModel, ModelOptions, ModelRequest, cut_at_stop
from super_bench.models.cache import Reply

_SEPARATOR = re.compile(r"^={5,}[ \t]*$", re.MULTILINE)


def read_script(path: Path) -> list[str]:
    """The replies of a script file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"mock model: cannot read the script {path}: {e}") from e
    if path.suffix.lower() == ".json":
        try:
            replies = json.loads(text)
        except json.JSONDecodeError as e:
            raise ConfigError(f"mock model: {path} is not valid JSON ({e.msg} at line {e.lineno})") from e
        if not isinstance(replies, list) or not all(isinstance(r, str) for r in replies):
            raise ConfigError(f"mock model: {path} must hold a JSON list of strings (the replies, in order)")
        return replies
    return [part.strip("\n") for part in _SEPARATOR.split(text) if part.strip()]


def estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


class MockModel(ChatModel):
    provider = "mock"
    cacheable = False  # the n-th reply depends on n, not on the request

    def __init__(
        self,
        name: str,
        options: ModelOptions | None = None,
        *,
        replies: Sequence[str] | None = None,
        responder: Callable[[ModelRequest], str] | None = None,
    ) -> None:
        super().__init__(name, options)
        self.responder = responder
        self.replies = list(replies) if replies is not None else None
        if self.replies is None and responder is None:
            self.replies = read_script(Path(name).expanduser())
        self.requests: list[ModelRequest] = []

    def _generate(self, request: ModelRequest) -> Reply:
        self.requests.append(request)
        if self.responder is not None:
            text = self.responder(request)
        else:
            assert self.replies is not None
            n = len(self.requests)
            if n > len(self.replies):
                raise ModelError(f"the mock model {self.name} has no reply left: its script has {len(self.replies)}")
            text = self.replies[n - 1]
        prompt = sum(estimate_tokens(m["content"]) + 3 for m in request.messages)
        reply = cut_at_stop(Reply(text, prompt, 0, "stop"), request.stop)  # a server stops generating there
        return reply._replace(completion_tokens=estimate_tokens(reply.text))
