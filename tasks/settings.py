"""Settings in one class that fails fast: defaults < `formwork.toml` < environment (`FORMWORK_*`).

Per-run choices (input, schema, limit) are CLI options and flow parameters; what stays the same
between runs on one machine (database, engine, server addresses, budgets) lives here.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import Field, PrivateAttr, SecretStr, ValidationInfo, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

_USERINFO = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^@/\s:]*(?::[^@\s]*?)?@")


Mode = Literal["two-pass", "one-pass", "one-pass-reasoning", "prompt-json", "two-readings"]


# The setup the shipped calibrations are for (tasks/evaluation/shipped/): the default reader once installed.
BEST_MODEL, BEST_MODE = "qwen2.5-coder-1.5b", "one-pass"
# The settings that choose the reader: any of them set (argument, environment or file) is the user's choice.
READER_SETTINGS = frozenset({"engine", "local_model", "local_model_path", "mode"})


def best_model_file() -> Path:
    """Where `formwork models install` puts the measured best (tasks.engines.models.model_file, which the
    settings may not import: the engines import the settings)."""
    return (
        Path(os.environ.get("FORMWORK_CACHE") or "~/.cache/formwork").expanduser()
        / "models"
        / (f"{BEST_MODEL}.gguf")
    )


class ModelChoiceProblem(ValueError):
    """`--model NAME[@MODE]` names no model, or a mode that does not exist."""


def model_choice(spec: str) -> dict[str, str]:
    """The settings `--model NAME[@MODE]` stands for: the embedded engine with the catalogue model NAME
    (`formwork models`), in MODE when given (else as the settings say, or the mode NAME is calibrated in)."""
    name, _, mode = spec.strip().partition("@")
    if not name:
        raise ModelChoiceProblem(
            f"--model {spec!r} names no model: write NAME or NAME@MODE (formwork models)"
        )
    if mode and mode not in get_args(Mode):
        raise ModelChoiceProblem(f"--model {spec!r}: {mode!r} is not a mode ({', '.join(get_args(Mode))})")
    return {"engine": "local", "local_model": name} | ({"mode": mode} if mode else {})


class EscalationProblem(ValueError):
    """`escalate_to` does not name a model, a mode or a server that can be opened."""


def escalation_overrides(spec: str) -> dict[str, Any]:
    """The settings that turn a run into its escalation's, from `escalate_to`:
    - `NAME`: a model from `formwork models` on the embedded engine (`qwen2.5-coder-1.5b`);
    - `@MODE`: the same model in another mode (`@two-readings`: the cheap reading first, both after);
    - `NAME@MODE`: both;
    - `vllm:URL#MODEL` or `openai:URL#MODEL` (either part after the engine optional): a server."""
    spec = spec.strip()
    engine, sep, rest = spec.partition(":")
    if sep and engine in ("vllm", "openai"):
        url, _, model = rest.partition("#")
        found: dict[str, Any] = {"engine": engine, f"{engine}_model": model or None}
        return found | ({f"{engine}_url": url} if url else {})
    name, _, mode = spec.partition("@")
    if mode and mode not in get_args(Mode):
        raise EscalationProblem(f"escalate_to {spec!r}: {mode!r} is not a mode ({', '.join(get_args(Mode))})")
    if not name and not mode:
        raise EscalationProblem("escalate_to is empty: name a model (formwork models), @MODE, or a server")
    return ({"engine": "local", "local_model": name, "local_model_path": None} if name else {}) | (
        {"mode": mode} if mode else {}
    )


def _config_file() -> Path:
    return Path(os.environ.get("FORMWORK_CONFIG", "formwork.toml"))


def _holds_secret(annotation: Any) -> bool:
    """Whether a field's type is `SecretStr`, alone or inside `| None` (or any other union)."""
    return annotation is SecretStr or any(_holds_secret(arg) for arg in get_args(annotation))


class Settings(BaseSettings):
    """Everything Formwork reads from the environment or `formwork.toml`."""

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

    chunk_size: int = Field(100, ge=1, description="records per Prefect task")
    reasoning_max_tokens: int = Field(384, ge=1)
    reasoning_temperature: float = Field(0.0, ge=0.0)
    reasoning_repetition_penalty: float = Field(
        1.3, gt=0.0, description="reasoning pass only; keeps a small model from looping. Formatting: 1.0"
    )
    format_max_tokens: int | None = Field(None, ge=1, description="default: sized from the schema")
    max_attempts: int = Field(3, ge=1, description="formatting attempts per record inside a run")
    min_confidence: float = Field(
        0.0, ge=0.0, le=1.0, description="values chosen with less probability fail (0: off)"
    )
    calibration: bool = Field(
        True,
        description="apply the calibration matching schema, model and engine (formwork eval --calibrate); "
        "none: a conservative default (no row ok; values p >= 0.99 kept in partial rows, no enum passes). "
        "false: min_confidence only",
    )
    grounded_decoding: bool = Field(
        True,
        description="the formatting grammar allows each quote/value field only what its text backs "
        "(BENCHMARKS section 17: more values right and kept at the same bound)",
    )
    split_long_texts: bool = Field(
        True,
        description="a long list is read item by item, one unit of the text's layout at a time, and a "
        "text too long for the context in parts on its natural units, then merged (tasks/long/); false: "
        "read whole, cut to fit (never ok)",
    )
    max_parts: int = Field(
        8,
        ge=2,
        description="the most parts one long text is read in (a long list: 30 units a part); a longer text "
        "is cut after them (never ok), so a megabyte pasted by mistake costs 2 x max_parts model calls "
        "(30 x max_parts for a list), not thousands",
    )
    reference_date_field: str = Field(
        "reference_date",
        min_length=1,
        description="the meta field (JSONL/CSV field, SQL column) that "
        "holds the day a record was written, against which relative dates are read",
    )
    mode: Mode = Field(
        "two-pass",
        description="two-pass: reason, then format under the grammar; two-readings: also read without the "
        "notes, each field kept from the surer reading; others: see tasks/modes.py",
    )
    preset: Literal["greedy", "chat"] = Field(
        "greedy", description="sampling of the call that writes the JSON"
    )
    allow_chat_in_constrained: bool = Field(
        False, description="let chat sampling into grammar-constrained calls (warned); default: forced greedy"
    )
    queue_partial: bool = Field(False, description="also queue partial results for reprocessing")
    escalate_to: str | None = Field(
        None,
        description="the stronger reader for rows held back only by their values' thresholds: a model from "
        "`formwork models`, @MODE for the same model in another mode, NAME@MODE, or vllm:URL#MODEL / "
        "openai:URL#MODEL (tasks/escalation.py); none: such rows stay partial and are not queued",
    )
    escalate: Literal["queue", "now"] = Field(
        "queue",
        description="queue: escalations wait in the retry queue for `formwork retry` or its deployment; "
        "now: the run itself reads its unsure records with escalate_to before it ends",
    )
    queue_max_attempts: int = Field(5, ge=1, description="reprocessing tries before an entry is dead")
    claim_timeout_s: float = Field(1800, gt=0, description="a retry-queue claim older than this is put back")
    review_dir: Path | None = Field(
        None, description="write each run's review page here (run-N.html) and link it from Prefect"
    )
    sql_reread_s: float = Field(
        300, ge=0, description="a SQL source re-reads this far behind its watermark (late commits)"
    )
    run_lease_s: float = Field(
        60, gt=0, description="a run silent this long is dead: crashed, its records free for other runs"
    )
    db_outage_s: float = Field(
        300,
        ge=0,
        description="a database that goes away mid-run is tried again (with backoff) this long; past it "
        "the run stops and journals its finished records, which the next run stores first",
    )
    journal_dir: Path | None = Field(
        None,
        description="where that journal goes (never the database); default: next to the run's state, the "
        "SQLite database's folder, or PREFECT_HOME for a database on a server",
    )

    _reader_default: Literal["chosen", "measured best", "bundled"] = PrivateAttr("chosen")

    @classmethod
    def secret_fields(cls) -> frozenset[str]:
        """The settings that hold a secret: every `SecretStr` field, so a new key is secret everywhere
        (never a flow parameter, masked in logs, stored errors and the review page) with no list to keep."""
        return frozenset(name for name, field in cls.model_fields.items() if _holds_secret(field.annotation))

    @model_validator(mode="after")
    def _register_secrets(self) -> Settings:
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

    def journal_folder(self) -> Path:
        """`journal_dir`, or the folder a run's own state lives in on this machine: beside a SQLite file,
        else Prefect's home (a working directory may change between a deployment's runs)."""
        from sqlalchemy.engine.url import make_url

        if self.journal_dir is not None:
            return self.journal_dir
        url = make_url(self.db_url)
        if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
            return Path(url.database).resolve().parent / "formwork-journal"
        prefect_home = Path(os.environ.get("PREFECT_HOME", Path.home() / ".prefect")).expanduser()
        return prefect_home / "formwork-journal"

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

    @field_validator("escalate_to")
    @classmethod
    def _escalation_named(cls, spec: str | None) -> str | None:
        """Refuse an escalation that names nothing that can be opened, with what to write instead."""
        if spec is None or not spec.strip():
            return None
        escalation_overrides(spec)
        return spec.strip()

    @model_validator(mode="after")
    def _one_model(self) -> Settings:
        """A name and a file path for the embedded model would contradict each other: refuse both."""
        if self.local_model and self.local_model_path:
            raise ValueError(
                "local_model and local_model_path are both set: keep local_model (a name from formwork "
                "models) or local_model_path (any GGUF file), not both"
            )
        return self

    @model_validator(mode="after")
    def _measured_best(self) -> Settings:
        """The default reader is the measured best: with no reader setting anywhere (READER_SETTINGS), the
        model and mode the shipped calibrations are for, once installed; until then the bundled SmolLM2 in
        two-pass mode, which no calibration covers (`default_note` says so). The field defaults stay those
        of the bundled model, so that any reader setting keeps today's meaning; only the 1.5B named without
        a mode runs in the mode its calibrations are for. Assigned here, the choice counts as set: a copy
        of these settings (an escalation's, a flow's) keeps it."""
        if self.model_fields_set & READER_SETTINGS:
            if self.local_model == BEST_MODEL and "mode" not in self.model_fields_set:
                self.mode = BEST_MODE
            return self
        if best_model_file().is_file():
            self.local_model, self.mode = BEST_MODEL, BEST_MODE
            self._reader_default = "measured best"
        else:
            self._reader_default = "bundled"
        return self

    def default_note(self) -> str | None:
        """One line for a run that fell back to the bundled model because the measured best is not
        installed: what runs, that nothing will be certified, and how to install the better one."""
        if self._reader_default != "bundled":
            return None
        return (f"{BEST_MODEL} (the model the shipped calibrations are for) is not installed, so the bundled "
                f"smollm2-135m runs in {self.mode} mode, which no calibration covers: nothing will be "
                f"certified. Install it with `formwork models install {BEST_MODEL}`")  # fmt: skip

    @field_validator("db_url")
    @classmethod
    def _normalise_db_url(cls, url: str) -> str:
        """Accept the `postgres://` and `postgresql://` spellings and pick the psycopg 3 driver."""
        for prefix in ("postgres://", "postgresql://"):
            if url.startswith(prefix):
                return "postgresql+psycopg://" + url.removeprefix(prefix)
        return url

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls, _config_file()))
