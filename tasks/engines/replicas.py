"""Several servers serving one model, used as one engine: `vllm_url = "http://a/v1,http://b/v1"`.

Each request goes to the healthy replica with the fewest requests in flight, with one exception that
pays for itself: a record's formatting call goes where its reasoning call went (the formatting prompt
continues the reasoning conversation, and only that replica has its prefix cached). A replica that
fails with a retryable error (refused connection, timeout, 5xx) is set aside for `cooldown_s` and the
call is retried on another, so a replica dying mid-batch costs its in-flight records nothing but
time; only when every replica fails does the error reach the record. A request the server rejects
as such (RequestRejected) would fail on every replica alike and is not retried.

Trust is per replica and is earned again after every absence: the start-up check refuses a set whose
replicas serve different models (the run records one model, so a per-model confidence bound would
apply to the wrong one), and a replica that was set aside is probed again (its own `check()`) before
any request is routed to it; one whose probe is refused (it came back ignoring the schema, or serving
another model) stays out for the rest of the run.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from typing import Any

from formwork.tasks.engines.base import (
    Completion,
    EngineUnavailable,
    JsonSchema,
    Message,
    RequestRejected,
    Sampling,
)
from formwork.tasks.engines.http_base import HttpEngine

AFFINITY_LIMIT = 10_000  # conversations remembered (a few records' worth per slot in flight)


def conversation_key(messages: list[Message]) -> str:
    """The record's conversation: its first two messages, shared by its reasoning and formatting calls."""
    return hashlib.sha256(json.dumps(messages[:2], sort_keys=True).encode()).hexdigest()[:24]


class ReplicaSet:
    """Least-loaded, health-aware routing over several server engines of the same model."""

    def __init__(self, replicas: list[HttpEngine], cooldown_s: float = 30.0) -> None:
        if not replicas:
            raise ValueError("a replica set needs at least one server")
        self.replicas = replicas
        self.max_concurrency = sum(r.max_concurrency for r in replicas)
        self.cooldown_s = cooldown_s
        self._lock = threading.Lock()
        self._in_flight = [0] * len(replicas)
        self._down_until = [0.0] * len(replicas)
        self._unprobed: set[int] = set()  # set aside since their last passing check
        self._refused: dict[int, str] = {}  # failed their probe: out for good
        self._probing = [threading.Lock() for _ in replicas]
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
            (i for i in range(len(self.replicas)) if i not in tried and i not in self._refused),
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
                self._reprobe(chosen)
                result = work(self.replicas[chosen])
            except EngineUnavailable as exc:
                with self._lock:
                    self._down_until[chosen] = time.monotonic() + self.cooldown_s
                    self._unprobed.add(chosen)
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
        if last is None:
            raise RequestRejected(
                "every replica was refused at its probe: " + "; ".join(self._refused.values())
            )
        raise EngineUnavailable(f"every replica failed; the last said: {last}", hint=last.hint)

    def _reprobe(self, i: int) -> None:
        """Probe replica `i` again if it was set aside since its last passing check; refuse it for good
        when the probe is refused, so the caller moves on to the next replica."""
        with self._probing[i]:
            if i not in self._unprobed:
                return
            replica = self.replicas[i]
            others = [r.model for j, r in enumerate(self.replicas) if j != i and j not in self._refused]
            expected = next((model for model in others if model), "")
            try:
                replica.check()
                if expected and replica.model != expected:
                    raise RequestRejected(f"it serves {replica.model!r}, the other replicas {expected!r}")
            except RequestRejected as exc:
                with self._lock:
                    self._refused[i] = f"{replica.base_url}: {exc}"
                raise EngineUnavailable(f"replica {replica.base_url} refused at its probe: {exc}") from None
            with self._lock:
                self._unprobed.discard(i)

    def complete(
        self, messages: list[Message], sampling: Sampling, schema: JsonSchema | None = None
    ) -> Completion:
        return self._call(conversation_key(messages), lambda r: r.complete(messages, sampling, schema))

    def count_tokens(self, text: str) -> int:
        return self._call(None, lambda r: r.count_tokens(text))

    def check(self) -> list[str]:
        """Check every replica; set the unreachable ones aside (probed again before they rejoin);
        refuse when none passes, or when the ones that pass serve different models."""
        found, failures, models = [], [], {}
        for i, replica in enumerate(self.replicas):
            try:
                found.append(str(replica.check()))
                models[replica.base_url] = replica.model
            except EngineUnavailable as exc:
                failures.append(f"{exc}")
                self._down_until[i] = time.monotonic() + self.cooldown_s
                self._unprobed.add(i)
        if not found:
            raise EngineUnavailable("no replica passed its check: " + "; ".join(failures))
        if len(set(models.values())) > 1:
            raise RequestRejected(
                f"replicas serve different models: {models}",
                hint="give every replica the same model, or set the model name in the settings",
            )
        return found + [f"set aside for now: {f}" for f in failures]

    def close(self) -> None:
        for replica in self.replicas:
            replica.close()
