"""Formwork from Python: a list of texts in, validated rows out, with no file, database or flow run.

    from formwork.flows.api import extract

    rows = extract(["Taxi to the airport, 42.80 EUR, Sam"], schema=Expense)  # a Pydantic model class
    for row in rows:
        print(row.status, row.model, row.unsure, row.errors)

For code that already has its texts in memory (a notebook, a web handler, a user's own Prefect flow).
Each text gets exactly what a batch run gives a record: both passes, validation, grounding, the
in-run retries, and a status of ok, partial or failed with every reason, under the confidence bounds
`formwork run` would apply (db.calibrations: the database's calibration when `db_url` is configured,
else a shipped one, else the conservative default; each row's `confidence` says which).

Every value the model read comes back, with its state (flows.delivered): `values` gives each top-level
field's value and state (certified, unsure, refused, none), `states` the states alone and `unsure` the
fields a person should check; `model` is the class built from every value read, certified or unsure
(a required field left unsure does not fail the row), while `data` keeps the safe reading: only what
the policy kept. Use `row.model` where a reviewed or best-effort value serves, `row.data` (or
`flows.delivered.certified_only`) where only a vouched value may pass.

Nothing is stored; use `batch_extract` for the database, the retry queue and resumable runs. The engine
and its settings come from the usual configuration (formwork.toml, FORMWORK_* variables) unless
`settings` is passed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from formwork.db.calibrations import Applied, policy_for, statement
from formwork.db.session import session_factory
from formwork.flows.delivered import State, every_value, top_fields
from formwork.schemas.pydantic_source import class_body
from formwork.schemas.registry import Schema, SchemaProblem, load_checked_body, load_checked_schema
from formwork.tasks.calls import ExtractOptions, Outcome
from formwork.tasks.engines import check_engines, engines_for
from formwork.tasks.evaluation.key import calibration_key
from formwork.tasks.extract import extract_safely, input_problem
from formwork.tasks.settings import Settings
from formwork.tasks.validate import Verdict

logger = logging.getLogger(__name__)
M = TypeVar("M", bound=BaseModel)
SchemaSource = type[BaseModel] | str | Path | dict[str, Any]


@dataclass(frozen=True)
class Extracted(Generic[M]):
    """One text's result: the status, the JSON, and the model instance when the schema is a class."""

    text: str
    status: str  # ok, partial (failing fields nulled, listed in `nulled`) or failed
    data: dict[str, Any] | None  # the checked row; None for a failed row, whose answer is `unchecked`
    model: M | None = None  # every value read, certified or unsure, as the class (ok and partial rows)
    errors: list[str] = field(default_factory=list)
    nulled: list[str] = field(default_factory=list)
    evidence: list[dict[str, Any]] = field(default_factory=list)  # where the text backs each value
    reasoning_finish: str | None = None
    formatting_finish: str | None = None
    attempts: int = 0
    confidence: str = ""  # which calibration applied and what `ok` then guarantees (db.calibrations)
    unchecked: dict[str, Any] | None = None  # a failed row's answer, never checked: to read, not to keep
    values: dict[str, dict[str, Any]] = field(default_factory=dict)  # field -> value, state, score, why

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def states(self) -> dict[str, State]:
        """Each top-level field's state: certified, unsure, refused or none."""
        return {name: found["state"] for name, found in self.values.items()}

    @property
    def unsure(self) -> list[str]:
        """The fields whose value the model read but nothing vouches for: the ones to check."""
        return [name for name, state in self.states.items() if state == "unsure"]


def resolve_schema(schema: SchemaSource) -> Schema:
    """A checked, compiled Schema from a Pydantic class, a built-in name, a file, a model spec or a body."""
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        source = f"{schema.__module__}:{schema.__qualname__}"
        return load_checked_body(class_body(schema, source), source)
    if isinstance(schema, dict):
        return load_checked_body(schema, "<dict>")
    if isinstance(schema, str | Path):
        return load_checked_schema(schema)
    raise SchemaProblem(
        f"schema must be a Pydantic model class, a name, a path or a dict, not {type(schema)}"
    )


def applied_policy(settings: Settings, schema: Schema, engines: tuple[Any, Any]) -> Applied | None:
    """The policy `formwork run` would apply (db.calibrations.policy_for): the configured database's
    calibration (only when `db_url` is set: the API never creates a database), else a shipped one,
    else the conservative default. None when the `calibration` setting is off."""
    if not settings.calibration:
        return None
    key = calibration_key(settings, schema, engines)
    if "db_url" not in settings.model_fields_set:
        return policy_for(None, key)
    with session_factory(settings.db_url)() as session:
        return policy_for(session, key)


def _stored(verdict: Verdict) -> dict[str, Any]:
    """The parts of a verdict a stored result keeps, as flows.delivered reads them."""
    return {"status": verdict.status, "data": verdict.data, "errors": verdict.errors,
            "nulled": verdict.nulled, "evidence": verdict.evidence, "trust": verdict.trust}  # fmt: skip


def _as_row(text: str, outcome: Outcome, model_class: type[M] | None, said: str, fields: list[str],
            by: str | None) -> Extracted[M]:  # fmt: skip
    """The outcome as the caller sees it: every value with its state, and the class built from every
    value read (an unsure required field is a value, not a failure); a row the class rejects fails
    rather than lies."""
    verdict, instance = outcome.verdict, None
    values = every_value(fields, _stored(verdict), by)
    if model_class is not None and verdict.data is not None and verdict.status != "failed":
        read = {name: found.value for name, found in values.items() if found.state in ("certified", "unsure")}
        try:
            instance = model_class.model_validate({**verdict.data, **read})
        except ValidationError as exc:
            verdict = replace(
                verdict, status="failed", errors=[*verdict.errors, f"the model class rejects it: {exc}"]
            )
            values = every_value(fields, _stored(verdict), by)
    failed = verdict.status == "failed"  # its answer was never checked: kept apart, as in `formwork results`
    return Extracted(
        text, verdict.status, None if failed else verdict.data, instance, list(verdict.errors),
        list(verdict.nulled), list(verdict.evidence), outcome.reasoning_finish, outcome.formatting_finish,
        outcome.attempts, said, unchecked=verdict.data if failed else None,
        values={name: found.as_dict() for name, found in values.items()},
    )  # fmt: skip


def extract(
    texts: Sequence[str],
    schema: type[M] | str | Path | dict[str, Any],
    *,
    settings: Settings | None = None,
    reference_date: date | None = None,
) -> list[Extracted[M]]:
    """Extract every text with `schema`, in order, as many at a time as the engine serves.

    `reference_date` lets relative dates ("yesterday") count as backed by the text. Raises TypeError
    for one bare string (not a list of texts), SchemaProblem for a schema that cannot run and
    EngineError when the engine fails its start-up check; a bad text (empty, not a string) is a
    failed row, never an exception.
    """
    if isinstance(texts, str | bytes):  # a bare string is a sequence too: it would extract each character
        raise TypeError(f"texts must be a list of texts, not one {type(texts).__name__}: pass [text]")
    settings = settings or Settings()
    checked = resolve_schema(schema)
    model_class = schema if isinstance(schema, type) else None
    options = ExtractOptions.from_settings(settings)
    meta = {"reference_date": reference_date.isoformat()} if reference_date else None
    fields = top_fields(checked.checked_body)

    with engines_for(settings, checked.checked_body) as (reasoner, formatter):
        check_engines(reasoner, formatter)
        policy = applied_policy(settings, checked, (reasoner, formatter))
        said, by = "", None
        if policy is not None:
            options = policy.applied_to(options)
            said = statement(policy.applied)
            which = policy.applied.get("calibration")
            by = f"calibration {which}" if which else None
            logger.info("extract(): confidence: %s", said)

        def one(numbered: tuple[int, Any]) -> Extracted[M]:
            number, text = numbered
            if not isinstance(text, str) or not text.strip():
                bad = input_problem(number, "the text is empty or not a string")
                return _as_row(str(text or ""), bad, None, said, fields, by)
            outcome = extract_safely(number, text, checked, (reasoner, formatter), options, meta)
            return _as_row(text, outcome, model_class, said, fields, by)

        workers = min(reasoner.max_concurrency, formatter.max_concurrency)
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="formwork-api") as pool:
            return list(pool.map(one, enumerate(texts, start=1)))
