"""Pick the engines for a run from the settings: one for the reasoning pass, one for formatting.

An if/elif is enough while every engine lives in this tree. Engines are cached per process: the
embedded model loads once, and an HTTP engine keeps its connection pool across chunks.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from tasks.engines.base import Engine
from tasks.settings import Settings


@cache
def _local(model_path: str | None, n_ctx: int, threads: int | None) -> Engine:
    from tasks.engines.local import LocalEngine

    return LocalEngine(Path(model_path) if model_path else None, n_ctx=n_ctx, n_threads=threads)


def open_engines(settings: Settings) -> tuple[Engine, Engine]:
    """(reasoner, formatter) for these settings; the same engine object when one model does both."""
    if settings.engine == "local":
        path = str(settings.local_model_path) if settings.local_model_path else None
        engine = _local(path, settings.local_n_ctx, settings.local_threads)
        return engine, engine
    from tasks.engines.vllm_server import VllmServerEngine

    def server(url: str, model: str | None) -> Engine:
        return VllmServerEngine(
            url, model, max_concurrency=settings.vllm_max_concurrency, timeout_s=settings.vllm_timeout_s
        )

    reasoner = server(settings.vllm_url, settings.vllm_model)
    if settings.vllm_format_url in (None, settings.vllm_url) and settings.vllm_format_model in (
        None,
        settings.vllm_model,
    ):
        return reasoner, reasoner
    formatter = server(
        settings.vllm_format_url or settings.vllm_url, settings.vllm_format_model or settings.vllm_model
    )
    return reasoner, formatter


def check_engines(*engines: Engine) -> list[str]:
    """Run each distinct engine's start-up check (if it has one); return what each found, for the log."""
    found = []
    for engine in dict.fromkeys(engines):
        check = getattr(engine, "check", None)
        if check is not None:
            found.append(str(check()))
    return found
