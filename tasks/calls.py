"""What one record's extraction is made of: its options, its model calls and the outcome they add up to.

Every mode (tasks.extract's two passes, tasks.modes' single pass) builds the same `Outcome` from the
same logged calls, so these live apart from both: a mode imports them, and the dispatcher imports the
modes, with no cycle between them.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from formwork.schemas.registry import Schema
from formwork.tasks.answers import request_key
from formwork.tasks.confidence.policy import Policy
from formwork.tasks.engines.base import Completion, Engine, EngineError, JsonSchema, Message, Sampling
from formwork.tasks.fit import cut_verdict
from formwork.tasks.grounding.anchors import anchored_reference
from formwork.tasks.grounding.candidates import grounded_body
from formwork.tasks.prompts import prompt_hash
from formwork.tasks.settings import Settings
from formwork.tasks.validate import Verdict

PassName = Literal["reasoning", "formatting"]
RANK = {"ok": 2, "partial": 1, "failed": 0}
# begins the reason of a row that would be `ok` if a calibration vouched for it (counted in summaries)
UNVOUCHED = "no calibration vouches for this row"
BUDGET_CAP = 4096


def better(new: Verdict, kept: Verdict) -> bool:
    """Whether attempt `new` replaces the `kept` one: a higher status wins; equal statuses are ranked by
    their least confidence (the weakest value or null the row keeps), higher wins, and no confidence at
    all (None: no logprobs, or nothing kept) ranks below any probability; a full tie goes to the later
    attempt, as its notes or budget were the larger."""

    def key(verdict: Verdict) -> tuple[int, float]:
        least = verdict.least_confidence()
        return RANK[verdict.status], -1.0 if least is None else least

    return key(new) >= key(kept)


@dataclass(frozen=True)
class ExtractOptions:
    """The knobs of one run that shape every record's calls."""

    reasoning_max_tokens: int = 384
    reasoning_temperature: float = 0.0
    reasoning_repetition_penalty: float = 1.3
    format_max_tokens: int | None = None  # None: sized from the schema
    max_attempts: int = 3
    min_confidence: float = 0.0  # values chosen with less probability fail (0: off)
    choice_confidence: float | None = None  # enum/boolean values' own bound; None: min_confidence
    grounded_decoding: bool = True  # the formatting grammar allows only the values the text backs
    split_long_texts: bool = True  # a text that does not fit is read in parts and merged (tasks.long)
    max_parts: int = 8  # a text that needs more parts is read in this many and cut after (never ok)
    mode: str = "two-pass"  # or one-pass, one-pass-reasoning, prompt-json (tasks/modes.py)
    preset: str = "greedy"  # sampling of the call that writes the JSON (tasks/presets.py)
    allow_chat_in_constrained: bool = False  # let a chat preset through the guard (warned)
    reference_date_field: str = "reference_date"  # the meta field relative dates are read against
    # what each value is held to after the readings (tasks.decide): a calibration's per-field thresholds,
    # the uncalibrated default, or measuring; None: `min_confidence` alone decides (calibration off)
    policy: Policy | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> ExtractOptions:
        """The options a flow run or an API call takes from the configuration."""
        return cls(
            reasoning_max_tokens=settings.reasoning_max_tokens,
            reasoning_temperature=settings.reasoning_temperature,
            reasoning_repetition_penalty=settings.reasoning_repetition_penalty,
            format_max_tokens=settings.format_max_tokens,
            max_attempts=settings.max_attempts,
            min_confidence=settings.min_confidence,
            grounded_decoding=settings.grounded_decoding,
            split_long_texts=settings.split_long_texts,
            max_parts=settings.max_parts,
            mode=settings.mode,
            preset=settings.preset,
            allow_chat_in_constrained=settings.allow_chat_in_constrained,
            reference_date_field=settings.reference_date_field,
        )

    def judging(self) -> dict[str, Any]:
        """The options `judge` reads, as its keyword arguments: every mode judges by the same bounds."""
        return {
            "min_confidence": self.min_confidence,
            "choice_confidence": self.choice_confidence,
            "reference_field": self.reference_date_field,
        }

    def formatting_grammar(
        self, schema: Schema, text: str, meta: dict[str, Any] | None, notes: str = "",
        dates_in: tuple[int, int] | None = None,
    ) -> JsonSchema:  # fmt: skip
        """The schema the call that writes the JSON decodes under, in every mode: the record's own under
        grounded decoding (each `quote`/`value` field an enum of what its text backs and the field
        accepts, what the reasoning `notes` mention first, `tasks.grounding.candidates`), else the
        schema's. The root's `x-grounded-decoding` overrides the setting. The reference date is read as
        `judge` reads it, so the candidates and the check share one reading of the text; a date field's
        candidates are those within `dates_in` where it holds any."""
        if not schema.body.get("x-grounded-decoding", self.grounded_decoding):
            return schema.grammar_body
        reference, anchor = anchored_reference(meta, self.reference_date_field)
        body, checked = schema.grammar_body, schema.checked_body
        return grounded_body(
            body,
            text,
            reference,
            checked=checked,
            anchor=anchor,
            notes=notes,
            dates_in=dates_in,
            date_order=schema.date_order,
        )


@dataclass
class CallLog:
    """One model call, ready to be stored as a `model_calls` row."""

    pass_name: PassName
    attempt: int
    model: str
    prompt_hash: str
    max_tokens: int
    finish_reason: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    duration_s: float = 0.0
    output: str = ""
    error: str | None = None
    parse_step: str | None = None  # prompt-json mode: the parsing-ladder step that found the JSON
    judged: dict[str, Any] | None = None  # a formatting attempt as the judge saw it (model_calls.judged)


@dataclass
class Outcome:
    """Everything decided about one record, ready to be stored."""

    record_id: int
    verdict: Verdict
    attempts: int
    reasoning_finish: str | None = None
    formatting_finish: str | None = None
    retryable: bool = False
    queueable: bool = True  # False when no retry can help (the input itself is unusable)
    calls: list[CallLog] = field(default_factory=list)
    # each reading's judged verdict, the preferred first (tasks.decide keeps a field from one of them)
    readings: dict[str, Verdict] = field(default_factory=dict)

    def settle(self, cut_to: int | None) -> None:
        """The kept verdict as it is stored: a cut text (`cut_to` characters) is never `ok`."""
        if cut_to is not None:
            self.verdict = cut_verdict(self.verdict, cut_to)


class Answers(Protocol):
    """Where a run keeps each answered call at once, and finds the answers a killed run paid for
    (db.writer's `EarlyCalls`): an answer lost with a killed run's record was paid for again."""

    def reuse(self, record_id: int, key: str, log: CallLog) -> Completion | None:
        """The stored answer to request `key` for this record, taken once; None where there is none."""
        ...

    def keep(self, record_id: int, key: str, log: CallLog, done: Completion) -> None:
        """Store the answered call `log` (with `done`, its answer) now, not when its record ends."""
        ...


# the record's keeper of answered calls, set by the flow around each record (None: calls are kept with
# their record only, as in evaluation and the API); a thread the record starts must copy its context
ANSWERS: ContextVar[Answers | None] = ContextVar("formwork_answers", default=None)


class Caller:
    """Calls an engine and logs the call, whatever happens; with `ANSWERS` set, each answered call is
    stored at once, and an answer a killed run stored for the same request is taken instead of paid."""

    def __init__(self, outcome: Outcome):
        self.outcome = outcome

    def __call__(
        self, engine: Engine, pass_name: PassName, messages: list[Message], sampling: Sampling, schema=None
    ) -> Completion:
        log = CallLog(
            pass_name,
            self.outcome.attempts,
            engine.model,
            prompt_hash(messages),
            sampling.max_tokens,
            "error",
        )
        self.outcome.calls.append(log)
        answers, key = ANSWERS.get(), ""
        if answers is not None:
            key = request_key(engine.model, pass_name, messages, sampling, schema)
            reused = answers.reuse(self.outcome.record_id, key, log)
            if reused is not None:
                return self._answered(log, reused)
        try:
            done = engine.complete(messages, sampling, schema)
        except EngineError as exc:
            log.error = str(exc)
            raise
        self._answered(log, done)
        if answers is not None:
            answers.keep(self.outcome.record_id, key, log, done)
        return done

    @staticmethod
    def _answered(log: CallLog, done: Completion) -> Completion:
        log.finish_reason, log.output = done.finish_reason, done.text
        log.prompt_tokens, log.completion_tokens, log.duration_s = (
            done.prompt_tokens,
            done.completion_tokens,
            done.duration_s,
        )
        return done
