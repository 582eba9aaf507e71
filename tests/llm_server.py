"""A scripted OpenAI-compatible chat server on loopback, for tests that need a real LLM endpoint to talk to.

    with ScriptedLLM() as llm:
        llm.reply({"facts": []})                 # the next request gets this JSON as its content
        llm.fail(503)                            # ... and the one after an error
        llm.by_prompt("solidify", answer_fn)     # every "solidify" request, before the queue
        client = HttpChatLLM(llm.url, "test-model")
        ...
        assert len(llm.requests) == 2            # every JSON body received, in order

Requests are answered in this order: a `by_prompt` answer for the request's prompt name (the
response_format json_schema name, or for json_object the system prompt's first line), else the next
queued `reply`/`fail`, else the `default`, else 500 "script exhausted". Constructed with
`api_key=...`, it answers 401 to a request without that bearer token.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Content = str | dict[str, Any] | Callable[[dict[str, Any]], str | dict[str, Any]]


@dataclass(frozen=True)
class _Reply:
    content: Content
    usage: tuple[int, int] | None


@dataclass(frozen=True)
class _Failure:
    status: int
    body: str
    headers: dict[str, str] = field(default_factory=dict)


def prompt_name(body: dict[str, Any]) -> str:
    """The name a request answers to: its json_schema name, or its system prompt's first line."""
    response_format = body.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        return str(response_format.get("json_schema", {}).get("name", ""))
    system = next((m.get("content", "") for m in body.get("messages", []) if m.get("role") == "system"), "")
    return str(system).split("\n", 1)[0].strip()


class ScriptedLLM:
    """An OpenAI-compatible `/v1/chat/completions` server on 127.0.0.1 answering from a script."""

    def __init__(self, *, api_key: str | None = None) -> None:
        self.api_key = api_key
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []  # the path of every request, in order
        self._lock = threading.Lock()
        self._queue: deque[_Reply | _Failure] = deque()
        self._by_prompt: dict[str, _Reply] = {}
        self._default: _Reply | None = None
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        # A short poll interval: shutdown() waits for the serving loop to look up, 0.5 s by default.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, name="scripted-llm", daemon=True
        )
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def reply(self, content: Content, *, usage: tuple[int, int] | None = (100, 50)) -> None:
        """Queue one 200 answer; a dict is sent as its JSON, a callable gets the request body; usage=None omits it."""
        with self._lock:
            self._queue.append(_Reply(content, usage))

    def fail(self, status: int, body: str = "", *, headers: dict[str, str] | None = None) -> None:
        """Queue one error answer."""
        with self._lock:
            self._queue.append(_Failure(status, body, dict(headers or {})))

    def default(self, content: Content, *, usage: tuple[int, int] | None = (100, 50)) -> None:
        """The answer for a request when the queue is empty."""
        with self._lock:
            self._default = _Reply(content, usage)

    def by_prompt(self, name: str, content: Content, *, usage: tuple[int, int] | None = (100, 50)) -> None:
        """The answer for every request named `name`, ahead of the queue."""
        with self._lock:
            self._by_prompt[name] = _Reply(content, usage)

    def __enter__(self) -> ScriptedLLM:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _next(self, body: dict[str, Any]) -> _Reply | _Failure:
        with self._lock:
            if (named := self._by_prompt.get(prompt_name(body))) is not None:
                return named
            if self._queue:
                return self._queue.popleft()
            if self._default is not None:
                return self._default
        return _Failure(500, json.dumps({"error": {"message": "script exhausted"}}))

    def _answer(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, str, dict[str, str]]:
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        with self._lock:
            self.paths.append(path)
            if isinstance(body, dict):
                self.requests.append(body)
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            return 401, json.dumps({"error": {"message": "invalid api key"}}), {}
        if not path.endswith("/chat/completions"):
            return 404, json.dumps({"error": {"message": f"no route {path}"}}), {}
        if not isinstance(body, dict):
            return 400, json.dumps({"error": {"message": "body is not a JSON object"}}), {}
        step = self._next(body)
        if isinstance(step, _Failure):
            return step.status, step.body, step.headers
        content = step.content(body) if callable(step.content) else step.content
        completion: dict[str, Any] = {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "model": body.get("model", ""),
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": content if isinstance(content, str) else json.dumps(content),
                    },
                    "finish_reason": "stop",
                }
            ],
        }
        if step.usage is not None:
            prompt_tokens, completion_tokens = step.usage
            completion["usage"] = {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            }
        return 200, json.dumps(completion), {}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {name.lower(): value for name, value in self.headers.items()}
                status, text, extra = scripted._answer(self.path, headers, raw)
                data = text.encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", _content_type(text))
                self.send_header("Content-Length", str(len(data)))
                for name, value in extra.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the test output is not the place for an access log

        return Handler


def _content_type(text: str) -> str:
    try:
        json.loads(text)
    except ValueError:
        return "text/plain; charset=utf-8"
    return "application/json"
