"""What a calibration holds for: everything that changes a value's probability, named once.

A threshold measured on one model's probabilities certifies nothing about another's, so a calibration
is matched on the schema (name, version, body hash), the formatting model (its name and, for a model
file, its sha256: two files may share a name), the engine kind (bf16 on vLLM is surer of its wrong
labels than a Q4 copy in-process), the mode, grounded decoding (which changes every value's
candidates) and the reasoning model (whose notes the formatting pass reads). A run, an eval and a
shipped calibration all build their key here, so they cannot disagree on what a match is.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from formwork.schemas.registry import Schema
from formwork.tasks.engines import engine_kind
from formwork.tasks.engines.base import Engine
from formwork.tasks.engines.fingerprint import model_hash
from formwork.tasks.settings import Settings


@dataclass(frozen=True)
class CalibrationKey:
    schema_name: str
    schema_version: int
    schema_hash: str
    model: str
    model_hash: str | None  # sha256 of the model file; None for a served model, known by its name
    engine: str
    mode: str
    grounded: bool
    reasoning_model: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        """The key in words, for a summary that says why nothing matched."""
        file = f" (file sha256 {self.model_hash[:12]})" if self.model_hash else ""
        return (f"{self.schema_name}@v{self.schema_version}, {self.model}{file} on {self.engine}, "
                f"{self.mode}, grounded decoding {'on' if self.grounded else 'off'}, "
                f"reasoning by {self.reasoning_model}")  # fmt: skip


def calibration_key(settings: Settings, schema: Schema, engines: tuple[Engine, Engine]) -> CalibrationKey:
    """The key of a run of `schema` with these settings (mode, grounded decoding) on these engines."""
    reasoner, formatter = engines
    return CalibrationKey(
        schema.name, schema.version, schema.digest, formatter.model, model_hash(formatter),
        engine_kind(settings, formatter), settings.mode, settings.grounded_decoding, reasoner.model,
    )  # fmt: skip
