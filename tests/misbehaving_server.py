"""A tiny OpenAI-style HTTP server on 127.0.0.1 that fails on cue: the faults no real vLLM shows on demand.

It sits beside the real-server tests, never instead of them: a 500, a 429, a reply slower than the
client's timeout, a 400 in vLLM's words, a garbled body, a chat completion that ignores the schema
(what an old vLLM does with a `structured_outputs` field it does not know), or one without logprobs.
Every request is recorded so a test can also pin what the engine sent.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODES = ("ok", "500", "429", "sleep", "ignore_schema", "reject_400", "not_json", "no_logprobs")


class MisbehavingServer:
    """`with MisbehavingServer("500") as fake: VllmServerEngine(fake.base_url)...`; `mode` may change."""

    def __init__(self, mode: str = "ok", *, sleep_s: float = 3.0, content: str = '{"answer":"yes"}') -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; one of {MODES}")
        self.mode = mode
        self.sleep_s = sleep_s
        self.content = content
        self.finish_reason = "stop"
        self.requests: list[dict[str, Any]] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> MisbehavingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def answer(self, path: str, body: dict[str, Any] | None) -> tuple[int, str]:
        """(status, body text) for one request in the current mode."""
        if path == "/v1/models":
            return 200, json.dumps({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
        if path == "/version":
            return 200, json.dumps({"version": "0.0.0-fake"})
        if path != "/v1/chat/completions":
            return 404, json.dumps({"error": {"message": f"no route {path}", "code": 404}})
        if self.mode in ("500", "429"):
            return int(self.mode), json.dumps({"error": {"message": f"fake {self.mode}", "code": self.mode}})
        if self.mode == "reject_400":
            message = "The provided JSON schema contains features not supported by xgrammar."
            return 400, json.dumps({"error": {"message": message, "type": "BadRequestError", "code": 400}})
        if self.mode == "not_json":
            return 200, "<html>proxy says hello</html>"
        if self.mode == "sleep":
            time.sleep(self.sleep_s)
        content = "Yes, water is wet, I think." if self.mode == "ignore_schema" else self.content
        return 200, json.dumps(
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "model": "fake-model",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": self.finish_reason,
                        "logprobs": None if self.mode == "no_logprobs" else _sure_of(content),
                    }
                ],
                "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
            }
        )


def _sure_of(content: str) -> dict[str, Any]:
    """Logprobs as vLLM writes them after the grammar mask: the whole reply one forced token (p = 1)."""
    top = [{"token": content, "logprob": 0.0}, {"token": "?", "logprob": -9999.0}]
    step = {"token": content, "bytes": list(content.encode()), "logprob": 0.0, "top_logprobs": top}
    return {"content": [step]}


def _handler_for(server: MisbehavingServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the engine's pooled client expects

        def _reply(self, body: dict[str, Any] | None) -> None:
            server.requests.append(
                {"method": self.command, "path": self.path, "body": body, "headers": dict(self.headers)}
            )
            status, text = server.answer(self.path, body)
            data = text.encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:  # the client gave up (the timeout case): nothing to answer
                self.close_connection = True

        def do_GET(self) -> None:
            self._reply(None)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            self._reply(json.loads(self.rfile.read(length) or b"null"))

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
