"""Where Formwork connects: the database and the model engines (embedded, vLLM, OpenAI-compatible).

The base of `Settings` (tasks.settings): these fields, their URLs' cleaning and their secrets are one
job (reaching a server or a model file without leaking its key), apart from how a run reads, checks
and queues its records. A base class rather than a nested model, so each setting keeps its flat
`FORMWORK_*` name and `formwork.toml` key.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal, Self, get_args

from pydantic import Field, SecretStr, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

_USERINFO = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^@/\s:]*(?::[^@\s]*?)?@")


def _holds_secret(annotation: Any) -> bool:
    """Whether a field's type is `SecretStr`, alone or inside `| None` (or any other union)."""
    return annotation is SecretStr or any(_holds_secret(arg) for arg in get_args(annotation))


class ConnectionSettings(BaseSettings):
    """The database and engine settings every `Settings` holds; not used on its own."""

    model_config = SettingsConfigDict(env_prefix="FORMWORK_", extra="forbid")

    db_url: str = Field("sqlite:///formwork.db", description="SQLAlchemy URL; SQLite file or PostgreSQL")
    engine: Literal["local", "vllm", "openai"] = Field(
        "local", description="local: embedded model; vllm: a vLLM server; openai: any OpenAI-compatible one"
    )

    local_model: str | None = Field(
        None, description="a model by name from `formwork models` (installed with `formwork models install`)"
    )
    local_model_path: Path | None = Field(None, description="a GGUF file; default: the bundled SmolLM2")
    local_n_ctx: int = Field(4096, ge=256)
    local_threads: int | None = Field(
        None, ge=1, description="llama.cpp threads; default: one per core other processes leave free"
    )
    local_slots: int = Field(4, ge=1, description="records decoded at once by the embedded engine")

    vllm_url: str = Field(
        "http://127.0.0.1:8000/v1",
        description="reasoning pass server (OpenAI API); several replicas: comma-separated URLs",
    )
    vllm_model: str | None = Field(None, description="reasoning model; default: the server's first")
    vllm_format_url: str | None = Field(None, description="formatting pass server; default: vllm_url")
    vllm_format_model: str | None = Field(None, description="formatting model; default: vllm_model")
    vllm_max_concurrency: int = Field(8, ge=1, description="requests in flight per server")
    vllm_timeout_s: float = Field(120.0, gt=0, description="per-request timeout")
    vllm_global_limit: int | None = Field(
        None, ge=1, description="requests in flight per server across all runs (a Prefect global limit)"
    )
    vllm_api_key: SecretStr | None = Field(
        None, description="for servers started with --api-key; never stored"
    )
    vllm_api_key_file: Path | None = Field(
        None, description="a file holding the API key (e.g. a secret mount)"
    )

    openai_url: str = Field(
        "http://127.0.0.1:8080/v1",
        description="engine openai: the server (OpenAI API); replicas: comma-separated",
    )
    openai_model: str | None = Field(
        None, description="engine openai: the model; default: the server's first"
    )
    openai_dialect: Literal["auto", "json_schema", "json_object+schema", "llama-server", "ollama"] = Field(
        "auto", description="how the schema is sent; auto: from what the server says at the start-up check"
    )
    openai_api_key: SecretStr | None = Field(None, description="engine openai: the Bearer key; never stored")

    @classmethod
    def secret_fields(cls) -> frozenset[str]:
        """The settings that hold a secret: every `SecretStr` field, so a new key is secret everywhere
        (never a flow parameter, masked in logs, stored errors and the review page) with no list to keep."""
        return frozenset(name for name, field in cls.model_fields.items() if _holds_secret(field.annotation))

    @model_validator(mode="after")
    def _register_secrets(self) -> Self:
        """Every secret value read is masked from then on by `tasks.redact`, wherever it would appear."""
        from formwork.tasks.redact import register_secret

        for name in self.secret_fields():
            value = getattr(self, name)
            if isinstance(value, SecretStr):
                register_secret(value.get_secret_value())
        return self

    def api_key(self) -> str | None:
        """The vLLM API key, from the setting or its file; registered so that every message masks it."""
        from formwork.tasks.redact import register_secret

        key = self.vllm_api_key.get_secret_value() if self.vllm_api_key else None
        if key is None and self.vllm_api_key_file is not None:
            try:
                key = self.vllm_api_key_file.read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise ValueError(f"vllm_api_key_file {self.vllm_api_key_file}: {exc.strerror}") from exc
        register_secret(key)
        return key

    @field_validator("*")
    @classmethod
    def _without_userinfo(cls, urls: Any, info: ValidationInfo) -> Any:
        """Drop `user:password@` from every server URL setting (each `*_url` but the database's): httpx
        would send it as Basic auth in place of the Bearer key, and URLs are logged and stored. The key
        belongs in the engine's `*_api_key`."""
        server_url = str(info.field_name).endswith("_url") and info.field_name != "db_url"
        if not server_url or not isinstance(urls, str):
            return urls
        return ",".join(_USERINFO.sub(r"\g<scheme>", url.strip()) for url in urls.split(","))

    @model_validator(mode="after")
    def _one_model(self) -> Self:
        """A name and a file path for the embedded model would contradict each other: refuse both."""
        if self.local_model and self.local_model_path:
            raise ValueError(
                "local_model and local_model_path are both set: keep local_model (a name from formwork "
                "models) or local_model_path (any GGUF file), not both"
            )
        return self

    @field_validator("db_url")
    @classmethod
    def _normalise_db_url(cls, url: str) -> str:
        """Accept the `postgres://` and `postgresql://` spellings and pick the psycopg 3 driver."""
        for prefix in ("postgres://", "postgresql://"):
            if url.startswith(prefix):
                return "postgresql+psycopg://" + url.removeprefix(prefix)
        return url
