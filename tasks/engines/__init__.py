"""Pick the engines for a run from the settings: one for the reasoning pass, one for formatting.

An if/elif is enough while every engine lives in this tree. The embedded model is cached per process
(it loads once and is never closed); a server engine lives for one flow run, its connection pool
shared by all the run's chunks, and is closed by `engines_for` when the run ends.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from formwork.tasks.engines.base import Engine
from formwork.tasks.settings import Settings

if TYPE_CHECKING:
    from formwork.tasks.engines.openai_server import OpenAIServerEngine


@cache
def _local(model_path: str | None, n_ctx: int, threads: int | None, slots: int) -> Engine:
    from formwork.tasks.engines.local import LocalEngine

    return LocalEngine(Path(model_path) if model_path else None, n_ctx=n_ctx, n_threads=threads, slots=slots)


def open_engines(settings: Settings, schema_body: dict[str, Any] | None = None) -> tuple[Engine, Engine]:
    """(reasoner, formatter) for these settings; the same engine object when one model does both.
    `schema_body`, the run's schema, says whether its fields hold values to a confidence bound."""
    if settings.engine == "local":
        path = local_model_file(settings)
        engine = _local(str(path) if path else None, settings.local_n_ctx, settings.local_threads,
                        settings.local_slots)  # fmt: skip
        return engine, engine
    if settings.engine == "openai":
        return _openai(settings, schema_body)
    from formwork.tasks.engines.vllm_server import VllmServerEngine

    def server(urls: str, model: str | None) -> Engine:
        """One server, or a replica set when `urls` lists several (comma-separated)."""
        engines = [
            VllmServerEngine(
                url.strip(), model, max_concurrency=settings.vllm_max_concurrency,
                timeout_s=settings.vllm_timeout_s, api_key=settings.api_key(),
            )
            for url in urls.split(",") if url.strip()
        ]  # fmt: skip
        if settings.vllm_global_limit:
            from formwork.tasks.engines.limited import GloballyLimited

            engines = [GloballyLimited(e, settings.vllm_global_limit) for e in engines]  # type: ignore[misc]
        if len(engines) == 1:
            return engines[0]
        from formwork.tasks.engines.replicas import ReplicaSet

        return ReplicaSet(engines)

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


def local_model_file(settings: Settings) -> Path | None:
    """The embedded engine's GGUF: the installed file of `local_model`, else `local_model_path`, else
    None for the bundled one. An unknown or uninstalled name raises ModelUnavailable (say what to do)."""
    if settings.local_model:
        from formwork.tasks.engines.models import installed_path

        return installed_path(settings.local_model)
    return settings.local_model_path


def needs_logprobs(settings: Settings, schema_body: dict[str, Any] | None = None) -> bool:
    """Whether any value of the run is held to a confidence bound: a calibration (or its conservative
    default, which bounds every value), `min_confidence`, or a field's `x-min-confidence`."""
    return settings.calibration or settings.min_confidence > 0 or _bounded(schema_body)


def _bounded(node: Any) -> bool:
    if isinstance(node, list):
        return any(map(_bounded, node))
    if not isinstance(node, dict):
        return False
    bound = node.get("x-min-confidence")
    bounds = bound.values() if isinstance(bound, dict) else [bound]
    if any(isinstance(b, int | float) and not isinstance(b, bool) and b > 0 for b in bounds):
        return True
    return any(_bounded(v) for k, v in node.items() if k != "x-min-confidence")


def open_openai_server(
    settings: Settings, url: str, timeout_s: float | None = None, schema_body: dict[str, Any] | None = None
) -> OpenAIServerEngine:
    """One OpenAI-compatible server as the settings describe it: what a run opens and doctor checks.

    Its API key is registered as a secret, so that no message or stored error shows it."""
    from formwork.tasks.engines.openai_server import OpenAIServerEngine
    from formwork.tasks.redact import register_secret

    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    register_secret(key)
    return OpenAIServerEngine(
        url.strip(), settings.openai_model, dialect=settings.openai_dialect,
        needs_logprobs=needs_logprobs(settings, schema_body), max_concurrency=settings.vllm_max_concurrency,
        timeout_s=timeout_s or settings.vllm_timeout_s, api_key=key,
    )  # fmt: skip


def openai_urls(settings: Settings) -> list[str]:
    """The openai engine's servers: one URL, or several comma-separated replicas."""
    return [url.strip() for url in settings.openai_url.split(",") if url.strip()]


def _openai(settings: Settings, schema_body: dict[str, Any] | None) -> tuple[Engine, Engine]:
    """Any OpenAI-compatible server (or several, comma-separated) for both passes."""
    from formwork.tasks.engines.replicas import ReplicaSet

    engines = [open_openai_server(settings, url, schema_body=schema_body) for url in openai_urls(settings)]
    engine: Engine = engines[0] if len(engines) == 1 else ReplicaSet(list(engines))
    return engine, engine


def engine_kind(settings: Settings, formatter: Engine) -> str:
    """The formatter's engine kind (`openai:<dialect>` once checked; `local`, `vllm`): what a run, its
    confidences and its calibrations are recorded and matched under. Replicas share theirs."""
    members = getattr(formatter, "replicas", [formatter])
    kinds = {str(getattr(member, "engine_kind", settings.engine)) for member in members}
    return kinds.pop() if len(kinds) == 1 else settings.engine


def check_engines(*engines: Engine) -> list[str]:
    """Run each distinct engine's start-up check (if it has one); return what each found, for the log."""
    found = []
    for engine in dict.fromkeys(engines):
        check = getattr(engine, "check", None)
        if check is not None:
            found.append(str(check()))
    return found


@contextmanager
def engines_for(
    settings: Settings, schema_body: dict[str, Any] | None = None
) -> Iterator[tuple[Engine, Engine]]:
    """Open the run's engines and close the server ones at the end (the embedded model stays loaded)."""
    reasoner, formatter = open_engines(settings, schema_body)
    try:
        yield reasoner, formatter
    finally:
        if settings.engine != "local":
            for engine in dict.fromkeys((reasoner, formatter)):
                engine.close()
