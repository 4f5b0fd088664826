"""What storing a new calibration changes, per field, said in words before a person confirms it.

`formwork audit calibrate` shows it (flows.cli.audit_calibrate) and `formwork calibrations` lists each
calibration's claims and source with it.
"""

from __future__ import annotations

from dataclasses import dataclass

from formwork.db.calibrations import AUDIT
from formwork.db.models import Calibration
from formwork.tasks.confidence.certify import FieldClaim


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
