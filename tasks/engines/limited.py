"""A Prefect global concurrency limit around one vLLM server: requests in flight bounded across runs.

Each run bounds its own requests (`vllm_max_concurrency`), but overlapping runs (a nightly batch, the
hourly reprocessing, a manual run) add up on the same GPU. With `vllm_global_limit` set, every request
to a server first takes a slot of the global concurrency limit named after that server
(`vllm-HOST-PORT`), which the Prefect server counts for all runs and workers together. Created (or
resized) at the run's start-up check. It costs two API calls per request, so it is off by default.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from formwork.tasks.engines.base import Completion, JsonSchema, Message, Sampling
from formwork.tasks.engines.vllm_server import VllmServerEngine


def limit_name(base_url: str) -> str:
    """`vllm-gpu-1-8000` for http://user:pw@gpu-1:8000/v1: the server, never its credentials."""
    parts = urlsplit(base_url)
    return "vllm-" + re.sub(r"[^a-zA-Z0-9]+", "-", f"{parts.hostname}-{parts.port or 80}")


class GloballyLimited:
    """A `VllmServerEngine` whose every request holds a slot of a Prefect global concurrency limit."""

    def __init__(self, engine: VllmServerEngine, limit: int) -> None:
        self.engine, self.limit = engine, limit
        self.name = limit_name(engine.base_url)
        self.max_concurrency = min(engine.max_concurrency, limit)

    def __getattr__(self, attribute: str) -> Any:  # model, context_window, count_tokens, close
        return getattr(self.engine, attribute)

    def check(self) -> object:
        """Create or resize the limit, then check the server itself."""
        from prefect.client.orchestration import get_client

        with get_client(sync_client=True) as client:
            client.upsert_global_concurrency_limit_by_name(self.name, self.limit)
        return self.engine.check()

    def complete(
        self, messages: list[Message], sampling: Sampling, schema: JsonSchema | None = None
    ) -> Completion:
        from prefect.concurrency.sync import concurrency

        with concurrency(self.name, occupy=1, strict=True):
            return self.engine.complete(messages, sampling, schema)
