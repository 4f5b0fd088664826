"""Which policy a run holds its values to: one lookup for every entry point (run, retry, API, eval).

A calibration (tasks.evaluation.calibration) holds for one key (tasks.evaluation.key: schema body,
formatting model and its file, engine kind, mode, grounded decoding, reasoning model, both passes'
sampling, the pipeline's version), so a run looks up exactly that match, in this order: the newest
matching calibration in its database (made on the user's own gold, or audited on the user's own
records, so it overrides the rest), else a calibration shipped with the package for that key, else
the conservative default (tasks.confidence.policy: no row is `ok`). One made from a person's audit of
a run (`formwork audit calibrate`) says so: "calibrated on 50 of your own records on DATE". A
calibration is a score model
and one claim per field; a run applies each field's threshold to its values' scores, and its summary
states each field's guarantee in one sentence. One made by an older build (another pipeline version),
with other sampling, or before per-value calibrations existed matches no run, and the summary says
which of those it was. A field's own `x-min-confidence` and the run's `min_confidence` still apply as
floors on every value's probability.

Storing, exporting and removing a calibration is db.calibration_store; what storing one changes, per
field, is db.calibration_changes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from formwork.db.models import Calibration
from formwork.tasks.calls import ExtractOptions
from formwork.tasks.confidence.certify import FieldClaim
from formwork.tasks.confidence.certify import terms as claim_terms
from formwork.tasks.confidence.policy import UNCALIBRATED, Policy
from formwork.tasks.confidence.score import ScoreModel
from formwork.tasks.evaluation.key import CalibrationKey
from formwork.tasks.evaluation.shipped import FIELDS, find_shipped

METHOD = "per-value"
AUDIT = "audit"  # a calibration's source when its gold is a person's audit of a run's own records
KEY_FIELDS = tuple(CalibrationKey.__dataclass_fields__)


@dataclass(frozen=True)
class Applied:
    """The policy a run holds its values to, and what it records and says about it."""

    policy: Policy
    applied: dict[str, Any]  # stored on the run: calibration id (or shipped file), each field's sentence

    @property
    def vouched(self) -> bool:
        return self.policy.vouched

    def applied_to(self, options: ExtractOptions) -> ExtractOptions:
        """`options` holding every value to this policy (the run's own floor stays on the probability)."""
        return replace(options, policy=self.policy, choice_confidence=None)


def _matching(key: CalibrationKey) -> list[Any]:
    columns = {name: getattr(Calibration, name) for name in KEY_FIELDS}
    return [column.is_(None) if getattr(key, name) is None else column == getattr(key, name)
            for name, column in columns.items()] + [Calibration.method == METHOD,
                                                    Calibration.escalated_from.is_(None)]  # fmt: skip


def find_calibration(session: Session, key: CalibrationKey) -> Calibration | None:
    """The newest calibration in the database made for exactly `key`."""
    return session.scalar(select(Calibration).where(*_matching(key)).order_by(Calibration.id.desc()).limit(1))


def _stale(session: Session, key: CalibrationKey) -> str | None:
    """Why the newest calibration of this schema body, model and engine does not apply, if there is one."""
    row = session.scalar(
        select(Calibration)
        .where(Calibration.schema_hash == key.schema_hash, Calibration.model == key.model,
               Calibration.engine == key.engine, Calibration.mode == key.mode,
               Calibration.escalated_from.is_(None))
        .order_by(Calibration.id.desc()).limit(1)
    )  # fmt: skip
    if row is None:
        return None
    if row.method != METHOD or row.pipeline is None:
        return (f"calibration {row.id} certifies rows, not values per field (made before per-value "
                "calibrations), so it no longer applies")  # fmt: skip
    if row.pipeline != key.pipeline:
        return (f"calibration {row.id} was measured by pipeline {row.pipeline} and this build is "
                f"{key.pipeline} (prompts or readers changed), so it no longer applies")  # fmt: skip
    if row.sampling != key.sampling:
        return (f"calibration {row.id} was measured with other sampling or budgets ({row.sampling}, this "
                f"run {key.sampling}), so it no longer applies")  # fmt: skip
    return None


def shipped_row(data: dict[str, Any]) -> Calibration:
    """A shipped calibration as an unsaved row, so a run reads it like one of its own."""
    fields = {name: data[name] for name in FIELDS if name != "measured"}
    return Calibration(**data["key"], **fields, created_at=date.fromisoformat(data["measured"][:10]))


def applying(session: Session | None, key: CalibrationKey) -> tuple[Calibration, int | str] | None:
    """The calibration a run with `key` applies, with its label (its id, or the shipped file): its
    database's newest for the key, else a shipped one; None where neither is made for it."""
    found = find_calibration(session, key) if session is not None else None
    if found is not None:
        return found, found.id
    if (shipped := find_shipped(key)) is not None:
        return shipped_row(shipped), f"shipped in {shipped['file']}"
    return None


def policy_for(session: Session | None, key: CalibrationKey) -> Applied:
    """The policy of a run with `key`: its database's calibration, else a shipped one, else the default.
    `session` None: no database configured."""
    if (chosen := applying(session, key)) is not None:
        return calibrated_policy(*chosen)
    why = (_stale(session, key) if session is not None else None) or f"no calibration for {key.describe()}"
    guarantee = (f"none: {why}; so no row is ok, and a value is kept in a partial row, unchecked, only "
                 f"where every reading gave it with p >= {UNCALIBRATED:g} and the readings agree (no enum "
                 "or boolean whose label the text does not write)")  # fmt: skip
    return Applied(Policy("uncalibrated"), {"calibration": None, "guarantee": guarantee})


def certified_fields(session: Session | None, key: CalibrationKey | None) -> tuple[str, ...] | None:
    """The fields a reader with `key` certifies under its calibration (the database's, else a shipped
    one): what an escalation to it can change. None where the key is not known before it reads."""
    if key is None:
        return None
    claims = policy_for(session, key).policy.claims
    return tuple(sorted(name for name, claim in claims.items() if claim.certified))


def calibrated_policy(found: Calibration, label: int | str) -> Applied:
    """A calibration's policy; its sentences say per field what is guaranteed, in words."""
    claims = {name: FieldClaim.from_dict(claim) for name, claim in (found.fields or {}).items()}
    when = f", measured {found.created_at:%Y-%m-%d}" if found.created_at else ""
    certified = f"{sum(c.certified for c in claims.values())} of {len(claims)} fields certified"
    terms = claim_terms(claims, found.target, found.level)  # per field, or pooled over the fields named
    if found.source == AUDIT:
        audited = f" on {found.created_at:%Y-%m-%d}" if found.created_at else ""
        guarantee = (f"calibrated on {found.gold_size} of your own records{audited}: {certified} "
                     f"({terms}), for records like those")  # fmt: skip
    else:
        guarantee = f"{certified} on {found.gold_size} gold records ({terms}{when}), for records like those"
    applied = {"calibration": label, "guarantee": guarantee, "target": found.target, "level": found.level,
               "fields": {name: claim.sentence() for name, claim in claims.items()},
               "targets": {name: claim.target for name, claim in claims.items()},
               "levels": {name: claim.level for name, claim in claims.items()},  # each its test's share
               "pools": {name: list(claim.pool) for name, claim in claims.items() if claim.pool},
               "rows": found.bound, "gold_size": found.gold_size}  # fmt: skip
    return Applied(Policy("calibrated", ScoreModel.from_dict(found.score_model or {}), claims), applied)


def statement(applied: dict[str, Any]) -> str:
    """The one sentence a run's summary shows first (as db.queries.run_summary words it)."""
    which = f"calibration {applied['calibration']}" if applied.get("calibration") else "uncalibrated"
    return f"{which}: {applied['guarantee']}"
