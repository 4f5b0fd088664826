"""Several vLLM servers serving one model, used as one engine: `vllm_url = "http://a/v1,http://b/v1"`.

Each request goes to the healthy replica with the fewest requests in flight, with one exception that
pays for itself: a record's formatting call goes where its reasoning call went (the formatting prompt
continues the reasoning conversation, and only that replica has its prefix cached). A replica that
fails with a retryable error (refused connection, timeout, 5xx) is set aside for `cooldown_s` and the
call is retried on another, so a replica dying mid-batch costs its in-flight records nothing but
time; only when every replica fails does the error reach the record. A request the server rejects
as such (RequestRejected) would fail on every replica alike and is not retried.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from typing import Any

from formwork.tasks.engines.base import Completion, EngineUnavailable, JsonSchema, Message, Sampling
from formwork.tasks.engines.vllm_server import VllmServerEngine

AFFINITY_LIMIT = 10_000  # conversations remembered (a few records' worth per slot in flight)


def conversation_key(messages: list[Message]) -> str:
    """The record's conversation: its first two messages, shared by its reasoning and formatting calls."""
    return hashlib.sha256(json.dumps(messages[:2], sort_keys=True).encode()).hexdigest()[:24]


class ReplicaSet:
    """Least-loaded, health-aware routing over several `VllmServerEngine`s of the same model."""

    def __init__(self, replicas: list[VllmServerEngine], cooldown_s: float = 30.0) -> None:
        if not replicas:
            raise ValueError("a replica set needs at least one server")
        self.replicas = replicas
        self.max_concurrency = sum(r.max_concurrency for r in replicas)
        self.cooldown_s = cooldown_s
        self._lock = threading.Lock()
        self._in_flight = [0] * len(replicas)
        self._down_until = [0.0] * len(replicas)
        self._affinity: OrderedDict[str, int] = OrderedDict()

    @property
    def model(self) -> str:
        return next((r.model for r in self.replicas if r.model), "")

    @property
    def context_window(self) -> int | None:
        windows = [r.context_window for r in self.replicas if r.context_window]
        return min(windows) if windows else None

    def _order(self, key: str | None, tried: set[int]) -> list[int]:
        """Untried replicas, best first: healthy before cooling down, the conversation's own, least loaded."""
        now = time.monotonic()
        home = self._affinity.get(key) if key else None
        return sorted(
            (i for i in range(len(self.replicas)) if i not in tried),
            key=lambda i: (self._down_until[i] > now, i != home, self._in_flight[i], i),
        )

    def _call(self, key: str | None, work: Any) -> Any:
        tried: set[int] = set()
        last: EngineUnavailable | None = None
        while True:
            with self._lock:
                order = self._order(key, tried)
                if not order:
                    break
                chosen = order[0]
                self._in_flight[chosen] += 1
            try:
                result = work(self.replicas[chosen])
            except EngineUnavailable as exc:
                with self._lock:
                    self._down_until[chosen] = time.monotonic() + self.cooldown_s
                tried.add(chosen)
                last = exc
                continue
            finally:
                with self._lock:
                    self._in_flight[chosen] -= 1
            with self._lock:
                self._down_until[chosen] = 0.0
                if key is not None:
                    self._affinity[key] = chosen
                    self._affinity.move_to_end(key)
                    while len(self._affinity) > AFFINITY_LIMIT:
                        self._affinity.popitem(last=False)
            return result
        raise EngineUnavailable(
            f"every vLLM replica failed; the last said: {last}", hint=last.hint if last else ""
        )

    def complete(
        self, messages: list[Message], sampling: Sampling, schema: JsonSchema | None = None
    ) -> Completion:
        return self._call(conversation_key(messages), lambda r: r.complete(messages, sampling, schema))

    def count_tokens(self, text: str) -> int:
        return self._call(None, lambda r: r.count_tokens(text))

    def check(self) -> list[str]:
        """Check every replica; set the failing ones aside; refuse only when none passes."""
        found, failures = [], []
        for i, replica in enumerate(self.replicas):
            try:
                found.append(str(replica.check()))
            except EngineUnavailable as exc:
                failures.append(f"{exc}")
                self._down_until[i] = time.monotonic() + self.cooldown_s
        if not found:
            raise EngineUnavailable("no vLLM replica passed its check: " + "; ".join(failures))
        return found + [f"set aside for now: {f}" for f in failures]

    def close(self) -> None:
        for replica in self.replicas:
            replica.close()
