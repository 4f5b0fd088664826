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
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from formwork.db.models import Calibration
from formwork.tasks.calls import ExtractOptions
from formwork.tasks.confidence.certify import FieldClaim, lower_bound
from formwork.tasks.confidence.certify import terms as claim_terms
from formwork.tasks.confidence.policy import UNCALIBRATED, Policy
from formwork.tasks.confidence.score import ScoreModel
from formwork.tasks.evaluation.calibration import Calibrated
from formwork.tasks.evaluation.key import JUDGE_VERDICTS, CalibrationKey
from formwork.tasks.evaluation.shipped import FIELDS, find_shipped
from formwork.tasks.grounding.candidates import READERS_VERSION

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


def store_calibration(session: Session, key: CalibrationKey, found: Calibrated, target: float, *,
                      gold_hash: str, gold_size: int, run_id: int | None, source: str | None = None,
                      escalated_from: str | None = None) -> Calibration:  # fmt: skip
    """Store what `tasks.evaluation.calibration.calibrate` found, for `key` (flushed, not committed):
    eval's calibrations (`source` None: a gold set) and audits' (`AUDIT`) are the same kind of row.
    `escalated_from`: measured on the records that first reader escalates (db.escalated_calibrations),
    so it applies to those escalations only, never to the reader's own runs."""
    kept = [c for c in found.claims.values() if c.certified]
    pooled_kept, pooled_right = sum(c.kept for c in kept), sum(c.correct for c in kept)
    pooled = lower_bound(pooled_right, pooled_kept, found.level) if pooled_kept else None
    row = Calibration(**key.as_dict(), method=METHOD, threshold=None, target=target, level=found.level,
                      bound=found.row_bound, kept=found.ok_rows, correct=found.ok_right,
                      values_bound=pooled,
                      values_kept=pooled_kept, values_correct=pooled_right,
                      fields={name: claim.as_dict() for name, claim in found.claims.items()},
                      score_model=found.model.as_dict(), gold_hash=gold_hash, gold_size=gold_size,
                      run_id=run_id, source=source, escalated_from=escalated_from)  # fmt: skip
    session.add(row)
    session.flush()
    return row


def statement(applied: dict[str, Any]) -> str:
    """The one sentence a run's summary shows first (as db.queries.run_summary words it)."""
    which = f"calibration {applied['calibration']}" if applied.get("calibration") else "uncalibrated"
    return f"{which}: {applied['guarantee']}"


def shipped_data(row: Calibration) -> dict[str, Any]:
    """A stored calibration as a shipped file's content (tasks.evaluation.shipped)."""
    if row.method != METHOD or row.pipeline is None:
        raise ValueError(f"calibration {row.id} is not a per-value calibration with a full key: not shipped")
    if row.escalated_from:  # a shipped file has no place for it, and would apply to every run of the reader
        raise ValueError(f"calibration {row.id} holds only for escalations from {row.escalated_from}: "
                         "not shipped")  # fmt: skip
    key = CalibrationKey(**{name: getattr(row, name) for name in KEY_FIELDS})
    fields = {name: getattr(row, name) for name in FIELDS if name != "measured"}
    # what it was measured with: a readers' bump re-keys it only where the judge's verdicts on its
    # schema's gold are unchanged (tasks.evaluation.key; tests/test_judge_version.py)
    measured_with = {"pipeline": key.pipeline, "judge": JUDGE_VERDICTS[READERS_VERSION].get(key.schema_name)}
    return {"key": key.as_dict(), **fields, "measured": row.created_at.date().isoformat(),
            "measured_with": measured_with}  # fmt: skip


def export_calibration(row: Calibration, path: Path) -> Path:
    """Write `row` as a shipped calibration file at `path` (for tasks/evaluation/shipped/)."""
    path.write_text(json.dumps(shipped_data(row), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


class CalibrationProblem(ValueError):
    """A calibration a command names cannot be removed: none has that id, or it ships with Formwork."""


def claims_of(row: Calibration) -> dict[str, FieldClaim]:
    """A calibration's claims by field (none for one made before per-value calibrations)."""
    return {name: FieldClaim.from_dict(claim) for name, claim in (row.fields or {}).items()}


def source_of(row: Calibration, label: int | str) -> str:
    """Where a calibration came from, in a word: shipped with Formwork, an eval's gold, or an audit."""
    return "shipped" if isinstance(label, str) else ("audit" if row.source == AUDIT else "eval")


@dataclass(frozen=True)
class Change:
    """What storing a new calibration changes for one field: before and after in words, and whether
    runs would certify fewer of its values (not at all, or a smaller share at its threshold)."""

    field: str
    before: str
    after: str
    fewer: bool


def _share(claim: FieldClaim) -> float:
    return claim.kept / claim.values if claim.values else 0.0


def _said(claim: FieldClaim | None) -> str:
    if claim is None or not claim.certified:
        return "not certified (its values dropped)"
    return (f"certified at {claim.target:.0%} from score {claim.threshold:g} ({_share(claim):.0%} of its "
            "values kept)")  # fmt: skip


def changes(current: Calibration | None, new: dict[str, FieldClaim]) -> list[Change]:
    """Per field, what replacing `current` (None: no calibration applies, so runs keep a value unchecked
    where every reading is sure of it) by a calibration with claims `new` changes. A field loses when it
    was certified and is not, or keeps a smaller share of its values; with no calibration before, every
    field the new one does not certify loses the values runs kept unchecked: the case of an audit of a
    few records that certifies no field and, stored silently, dropped every value the runs had kept."""
    old = claims_of(current) if current is not None else {}
    found = []
    for name in dict.fromkeys([*old, *new]):
        before, after = old.get(name), new.get(name)
        certifies = after is not None and after.certified
        if current is None:
            found.append(Change(name, "kept unchecked where sure (no calibration applies)", _said(after),
                                not certifies))  # fmt: skip
            continue
        was = before is not None and before.certified
        smaller = before is not None and after is not None and _share(after) < _share(before)
        found.append(Change(name, _said(before), _said(after), was and (not certifies or smaller)))
    return found


def stored_calibrations(session: Session) -> list[Calibration]:
    """Every calibration stored in the database, oldest first."""
    return list(session.scalars(select(Calibration).order_by(Calibration.id)))


def remove_calibration(session: Session, ident: str) -> Calibration:
    """Delete the stored calibration `ident` names (flushed, not committed); a run with its key then
    applies the next newest for the key, else a shipped one, else the conservative default. A shipped
    calibration is data in the package: it is refused with what to do instead."""
    if ident.endswith(".json") or not ident.isdigit():
        raise CalibrationProblem(
            f"{ident} is not the id of a calibration stored in this database: a shipped calibration is part "
            "of Formwork and cannot be removed from a database; a calibration of your own for the same setup "
            "(`formwork audit calibrate` or `formwork eval --calibrate`) applies instead of it"
        )
    row = session.get(Calibration, int(ident))
    if row is None:
        raise CalibrationProblem(f"there is no calibration {ident} in this database (`formwork calibrations` "
                                 "lists them)")  # fmt: skip
    session.delete(row)
    session.flush()
    return row
