"""Settings that fail fast: defaults < `formwork.toml` < environment (`FORMWORK_*`).

Per-run choices (input, schema, limit) are CLI options and flow parameters; what stays the same
between runs on one machine (database, engine, server addresses, budgets) lives here. The database and
engine fields are the base class's (tasks.connection_settings); which reader runs by default and what
`--model` and `escalate_to` stand for are tasks.reader_choice's.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal, Self

from pydantic import Field, PrivateAttr, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, TomlConfigSettingsSource

from formwork.tasks.connection_settings import ConnectionSettings
from formwork.tasks.reader_choice import (
    BEST_MODE,
    BEST_MODEL,
    READER_SETTINGS,
    EscalationProblem,
    Mode,
    best_model_file,
    escalation_overrides,
)

# Names tests/test_escalation.py imports from here; they live in tasks.reader_choice.
__all__ = ["EscalationProblem", "Settings", "escalation_overrides"]


def _config_file() -> Path:
    return Path(os.environ.get("FORMWORK_CONFIG", "formwork.toml"))


class Settings(ConnectionSettings):
    """Everything Formwork reads from the environment or `formwork.toml`."""

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

    @field_validator("escalate_to")
    @classmethod
    def _escalation_named(cls, spec: str | None) -> str | None:
        """Refuse an escalation that names nothing that can be opened, with what to write instead."""
        if spec is None or not spec.strip():
            return None
        escalation_overrides(spec)
        return spec.strip()

    @model_validator(mode="after")
    def _measured_best(self) -> Self:
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
