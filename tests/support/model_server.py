"""A real HTTP server on 127.0.0.1 that speaks the OpenAI chat API (and Anthropic's messages API),
answering from a script, so that the providers are tested through their real SDKs."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Answer:
    """One scripted answer: a reply text, or an HTTP status with a body, or raw bytes."""

    text: str | None = None
    status: int = 200
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    usage: tuple[int, int] | None = None
    finish_reason: str = "stop"  # why the server says the reply ended where no stop sequence cut it


def reply(text: str, usage: tuple[int, int] | None = None, finish_reason: str = "stop") -> Answer:
    return Answer(text=text, usage=usage, finish_reason=finish_reason)


def error(status: int, message: str = "scripted failure", **headers: str) -> Answer:
    body = json.dumps({"error": {"message": message, "type": "test", "code": None}}).encode()
    return Answer(status=status, body=body, headers={k.replace("_", "-"): v for k, v in headers.items()})


def raw(body: bytes) -> Answer:
    return Answer(body=body)


class ModelServer:
    def __init__(self) -> None:
        self.script: list[Answer] = []
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def add(self, *answers: Answer | str) -> None:
        self.script.extend(reply(a) if isinstance(a, str) else a for a in answers)

    def _next(self, request: dict[str, Any], path: str, headers: dict[str, str]) -> Answer:
        with self._lock:
            self.requests.append(request)
            self.paths.append(path)
            self.headers.append(headers)
            return self.script.pop(0) if self.script else error(500, "the test server's script is exhausted")

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                request = json.loads(self.rfile.read(length) or b"{}")
                answer = server._next(request, self.path, dict(self.headers))
                body = answer.body
                if answer.text is not None:
                    render = _anthropic if self.path.endswith("/messages") else _openai
                    body = json.dumps(render(request, answer)).encode()
                self.send_response(answer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body or b"")))
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body or b"")

        return Handler

    def __enter__(self) -> ModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def _cut(text: str, stop: list[str]) -> tuple[str, bool]:
    """Like a real server: the reply ends before the first stop sequence, which is not included."""
    cuts = [i for s in stop if (i := text.find(s)) >= 0]
    return (text[: min(cuts)], True) if cuts else (text, False)


def _usage(request: dict[str, Any], text: str, answer: Answer) -> tuple[int, int]:
    if answer.usage is not None:
        return answer.usage
    prompt = sum(len(str(m.get("content", ""))) for m in request.get("messages", [])) + len(
        str(request.get("system", ""))
    )
    return prompt // 4 + 1, len(text) // 4 + 1


def _openai(request: dict[str, Any], answer: Answer) -> dict[str, Any]:
    stop = request.get("stop") or []
    text, cut = _cut(answer.text or "", [stop] if isinstance(stop, str) else stop)
    prompt, completion = _usage(request, text, answer)
    finish = "stop" if cut else answer.finish_reason
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": request.get("model"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    }


def _anthropic(request: dict[str, Any], answer: Answer) -> dict[str, Any]:
    text, cut = _cut(answer.text or "", request.get("stop_sequences") or [])
    prompt, completion = _usage(request, text, answer)
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": request.get("model"),
        "content": [{"type": "text", "text": text}],
        "stop_reason": "stop_sequence" if cut else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": prompt, "output_tokens": completion},
    }


@contextmanager
def model_server(*answers: Answer | str) -> Iterator[ModelServer]:
    with ModelServer() as server:
        server.add(*answers)
        yield server
