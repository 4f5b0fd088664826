"""What a calibration holds for: everything that changes a value's probability, named once.

A threshold measured on one model's probabilities certifies nothing about another's, so a calibration
is matched on the schema (name, version, body hash), the formatting model (its name and, for a model
file, its sha256: two files may share a name), the engine kind (bf16 on vLLM is surer of its wrong
labels than a Q4 copy in-process), the mode, grounded decoding (which changes every value's
candidates), the reasoning model (whose notes the formatting pass reads), how both passes sample
(`sampling`: a threshold certified on 384-token greedy notes says nothing of 1,024-token ones, nor of
chat sampling in the formatting call) and the pipeline's version (`pipeline`: the prompts and the
readers that decide which values are offered and accepted; a calibration stored by an older build no
longer applies after an upgrade that changes them). A run, an eval and a shipped calibration all
build their key here, so they cannot disagree on what a match is.

The readers' part of `pipeline` is bumped by hand (tasks.grounding.candidates.READERS_VERSION), so the
judge is versioned apart too: `JUDGE_VERDICTS` holds, per readers' version, the fingerprint of the
judge's verdicts on each gold set (tasks.evaluation.judge_verdicts), and tests/test_judge_version.py
recomputes this build's, so verdicts that change without a bump fail it. A shipped calibration names
the pipeline and verdicts it was measured with (`measured_with`): after a bump it is keyed to the new
pipeline only where the judge gives its gold the very verdicts it was measured with (the same test
checks that), so a bump neither leaves it applying to readers that judge its gold otherwise nor
throws away a measurement the change did not touch.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from functools import cache
from typing import Any

from formwork.schemas.registry import Schema
from formwork.tasks.confidence.features import FEATURES_VERSION
from formwork.tasks.engines import engine_kind, local_model_file
from formwork.tasks.engines.base import Engine
from formwork.tasks.engines.fingerprint import file_hash, model_hash
from formwork.tasks.grounding.candidates import READERS_VERSION
from formwork.tasks.modes import SINGLE, single_pass_messages
from formwork.tasks.prompts import formatting_messages, reasoning_messages
from formwork.tasks.reader_choice import escalation_overrides
from formwork.tasks.settings import Settings

# Per readers' version, each gold set's verdicts fingerprint (the module docstring); record a new version's
# with tasks.evaluation.judge_verdicts.fingerprints(Path("examples/gold")).
# 4 to 11 changed no verdict: one record of the verdicts they share.
SINCE_R4 = {"chat_tag": "011f0a84a5425933", "contact": "7cb0abce77171b05", "expense": "097997bbed4b51e9",
            "long/receipt": "d6e3bff24a6b2d19", "long/statement": "f36ad5b8a0c52568",
            "long/thread_contacts": "7c7d3ae64f09edb2", "shopping_list": "05d177a379be142f"}  # fmt: skip
JUDGE_VERDICTS: dict[int, dict[str, str]] = {
    3: {"chat_tag": "011f0a84a5425933", "contact": "7cb0abce77171b05", "expense": "097997bbed4b51e9",
        "long/receipt": "8822cf0c49fd8655", "long/statement": "fe39f943f9760239",
        "long/thread_contacts": "7c7d3ae64f09edb2", "shopping_list": "05d177a379be142f"},  # as at 1c023ba
    **dict.fromkeys(range(4, 12), SINCE_R4),
}  # fmt: skip
SAMPLED = ("reasoning_temperature", "reasoning_repetition_penalty", "reasoning_max_tokens",
           "format_max_tokens", "max_attempts", "preset", "allow_chat_in_constrained")  # fmt: skip


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
    sampling: str  # sampling_digest: both passes' sampling and budgets
    pipeline: str  # pipeline_version: the prompts, the readers and the score's features

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        """The key in words, for a summary that says why nothing matched."""
        file = f" (file sha256 {self.model_hash[:12]})" if self.model_hash else ""
        return (f"{self.schema_name}@v{self.schema_version}, {self.model}{file} on {self.engine}, "
                f"{self.mode}, grounded decoding {'on' if self.grounded else 'off'}, "
                f"reasoning by {self.reasoning_model}, sampling {self.sampling}, "
                f"pipeline {self.pipeline}")  # fmt: skip


def calibration_key(settings: Settings, schema: Schema, engines: tuple[Engine, Engine]) -> CalibrationKey:
    """The key of a run of `schema` with these settings (mode, grounded decoding) on these engines."""
    reasoner, formatter = engines
    return _key(settings, schema, formatter.model, model_hash(formatter), engine_kind(settings, formatter),
                reasoner.model)  # fmt: skip


def escalation_key(
    settings: Settings, schema: Schema, engines: tuple[Engine, Engine]
) -> CalibrationKey | None:
    """The key the run's escalation (`escalate_to`) will read under, where it is known before that reader
    is opened: the same engines in another mode, or an embedded model, known by its file (one not
    installed raises ModelUnavailable). None for a server, whose model is known once it answers."""
    overrides = escalation_overrides(settings.escalate_to or "")
    stronger = settings.model_copy(update=overrides)
    if set(overrides) <= {"mode"}:
        return calibration_key(stronger, schema, engines)
    return local_key(stronger, schema) if stronger.engine == "local" else None


def local_key(settings: Settings, schema: Schema) -> CalibrationKey:
    """The key of a run of `schema` on the embedded engine with these settings, known without opening the
    model: its file names it (the installed `local_model`, `local_model_path`, else the bundled one)."""
    from formwork.tasks.engines.local import bundled_model_path

    path = local_model_file(settings) or bundled_model_path()
    return _key(settings, schema, path.stem, file_hash(path), "local", path.stem)


def _key(settings: Settings, schema: Schema, model: str, digest: str | None, engine: str, reasoner: str
         ) -> CalibrationKey:  # fmt: skip
    return CalibrationKey(
        schema.name, schema.version, schema.digest, model, digest, engine, settings.mode,
        settings.grounded_decoding, reasoner, sampling_digest(settings), pipeline_version(),
    )  # fmt: skip


def sampling_digest(settings: Settings) -> str:
    """A short hash of how both passes sample and how much they may write (`SAMPLED`)."""
    chosen = {name: getattr(settings, name) for name in SAMPLED}
    return hashlib.sha256(json.dumps(chosen, sort_keys=True).encode()).hexdigest()[:12]


@cache
def pipeline_version() -> str:
    """The readers' version (bumped by hand when they change which values are offered or accepted) and a
    hash of every prompt template (written out on a fixed schema and text) and the score's features."""
    from formwork.schemas.registry import load_schema

    schema = load_schema("expense")
    text = "Taxi 12 EUR (Sam)"
    prompts = [reasoning_messages(schema, text), formatting_messages(schema, text, "notes", ["wrong"]),
               *(single_pass_messages(schema, text, mode) for mode in SINGLE)]  # fmt: skip
    digest = hashlib.sha256(json.dumps(prompts, sort_keys=True).encode()).hexdigest()[:8]
    return f"r{READERS_VERSION}.f{FEATURES_VERSION}.p{digest}"
