"""A person's audit of a run's own records, checked against what the run stored: no model call.

A calibration holds "for records like the gold ones", and a user's records are not our gold. `formwork
audit` puts a uniform random sample of a run's records in front of a person, who marks each field's
value right or gives the right one; the answers are gold rows for exactly those records. Here they
meet what the run stored for them (`trust`, tasks.decide) and say:

- per field, the precision of the values the run kept as certified, with its Clopper-Pearson interval
  at the level the run's calibration claimed it, and whether the audit confirms that claim, breaks it, or
  does not contradict it (tasks.evaluation.verification); the same for the `ok` rows, entirely right;
- how often the run was right when it said "none in the text", and how often it said so when the
  text had none;
- per field, how many of the values the run read were right at all, certified or not (what an
  uncalibrated run can still learn from an audit).

An answer "wrong" whose right value is the one the run read (the page's box starts with it, so `w`
then Enter gave it) says two things at once: the compare rules would count the run right against a
person who said it was wrong. Such a field is `unsettled`: counted neither right nor a correction
(its values leave every count, and its row the ok rows'), and the reader warns.

`formwork audit calibrate` feeds the same rows to tasks.evaluation.calibration.calibrate; `needed`
says how many right values a test takes (the level split over the claim's tests, a pool one test), so a
small audit says what it cannot certify. Each calibrate on more audited records of the same population
is another look at the data, and each spends level from one budget (`look_level`), so
audit-more-and-try-again cannot certify a field more often than the level.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from formwork.schemas.paths import node_at, parse_path
from formwork.schemas.registry import Schema
from formwork.tasks.confidence.certify import LEVEL, TARGET, field_level, values_needed
from formwork.tasks.evaluation.calibration import GoldRow, gold_at, schema_fields
from formwork.tasks.evaluation.certified import field_claims, field_counts, kept_value, tally
from formwork.tasks.evaluation.scoring import compare
from formwork.tasks.evaluation.verification import Claim, check, verify


def sample(ids: Sequence[int], size: int, seed: int) -> list[int]:
    """A uniform random sample of `size` ids (all of them if fewer), fixed by `seed`, in stored order."""
    ordered = sorted(set(ids))
    return sorted(random.Random(seed).sample(ordered, min(size, len(ordered))))


# the chance of a false certification that all looks of one audit share (rounded: 1 - 0.9 is 0.0999...98)
BUDGET = round(1.0 - LEVEL, 12)


def look_level(look: int, budget: float = BUDGET) -> float:
    """The error level look number `look` (1, 2, ...) of one audit population may spend: budget * 2^-look.

    Without it, every `audit calibrate` after "audit N more" tested again at the whole level, and a field
    right at 0.948 was certified 2.9-5.8% of the time against the 1.67% its share allows. Spent this way,
    the looks' levels sum to budget * (1 - 2^-n) < budget for any number n of looks, however the data of
    one look depend on the last and whenever the person stops (a union bound over the looks), so the
    chance that any look certifies a false claim stays within the budget. Why this rule: the Clopper-
    Pearson test (tasks.confidence.certify) is kept as it is, only at a smaller level; halving puts half
    the budget on the first look (94 values all right instead of 80 for six fields at 95%) and more on
    looks 2 to 5, where audits in rounds of "N more" stop, than alpha * 6 / (pi^2 k^2) does (107 values
    at look 2 against 117); an anytime-valid bound would need another test in certify and costs more
    values at the sizes an audit reaches. The look count is stored (db.audits), so restarts spend on."""
    if look < 1:
        raise ValueError(f"look {look} is no look number (1, 2, ...)")
    return budget * 2.0**-look


def needed(schema: Schema, target: float = TARGET, level: float = LEVEL, pooled: Sequence[str] = ()) -> int:
    """How many values a test must keep, all right, to certify `target` when the claim's tests share
    `level` (80 per field for the six fields of expense at 95% and 90%; 45 for a single test). The level
    is split over the claim's tests, as certify splits it (tasks.confidence.certify.shares): one per field,
    and one for the fields `pooled` together, whose count is of their kept values together."""
    fields = schema_fields(schema.checked_body)
    tests = len([name for name in fields if name not in pooled]) + bool(pooled)
    return values_needed(target, field_level(level, tests))


def applied_pool(applied: dict[str, Any]) -> tuple[str, ...]:
    """The fields a run's calibration pooled into one claim (none: every field its own claim)."""
    return tuple(next(iter((applied.get("pools") or {}).values()), ()))


def _under(entry: dict[str, Any], name: str) -> bool:
    """Whether a trust entry is a value of top-level field `name` (itself, or inside it)."""
    path = entry["path"]
    return bool(path == name or path.startswith((f"{name}.", f"{name}[")))


def _put(root: dict[str, Any], path: str, value: Any) -> None:
    """Set `value` at `path` inside `root`, where the containers on the way exist."""
    *parents, last = parse_path(path)
    node: Any = root
    for part in parents:
        node = node[part] if _holds(node, part) else None
    if isinstance(node, dict) or _holds(node, last):
        node[last] = value


def _holds(node: Any, part: str | int) -> bool:
    if isinstance(node, list):
        return isinstance(part, int) and part < len(node)
    return isinstance(node, dict) and part in node


def read_value(data: dict[str, Any] | None, trust: list[dict[str, Any]], name: str) -> Any:
    """What the run read for top-level field `name`: the stored value with every dropped value put back
    (a dropped value is what the reading said, and whether it was right is what an audit measures)."""
    root = {name: copy.deepcopy((data or {}).get(name))}
    for entry in trust:
        if _under(entry, name) and entry.get("dropped") and kept_value(entry) is not None:
            _put(root, entry["path"], kept_value(entry))
    return root[name]


def unsettled(schema: Schema, data: dict[str, Any] | None, trust: list[dict[str, Any]], gold: dict[str, Any],
              marks: dict[str, Any]) -> list[str]:  # fmt: skip
    """The fields marked "wrong" whose right value counts as the one the run read (see the docstring)."""
    return [
        name
        for name, mark in marks.items()
        if mark == "wrong"
        and name in schema.properties
        and compare(
            node_at(schema.checked_body, [name]) or {}, gold.get(name), read_value(data, trust, name), name
        )
    ]


@dataclass(frozen=True)
class Audited:
    """One audited record: what the run stored for it (status, trust), the person's answers, and the
    fields whose answer says nothing (`unsettled`)."""

    record: str
    status: str
    trust: list[dict[str, Any]]
    gold: dict[str, Any]
    unsettled: tuple[str, ...] = ()

    @property
    def gold_row(self) -> GoldRow:
        """The row as measured: the values of unsettled fields left out, as never answered."""
        trust = [e for e in self.trust if not any(_under(e, name) for name in self.unsettled)]
        return GoldRow(self.record, trust, self.gold)


@dataclass
class NoneCounts:
    """The run's "none in the text", both ways: when the run said it, and when the text had none."""

    said: int = 0  # values the run read as null
    said_right: int = 0  # of those, the text had none
    absent: int = 0  # values whose gold is null
    absent_found: int = 0  # of those, the run read null

    def sentence(self) -> str:
        said = (f"the run said so {self.said} times and was right {self.said_right} of {self.said}"
                if self.said else "the run never said so")  # fmt: skip
        found = f"{self.absent_found} of {self.absent}"
        absent = (f"the text had none for {self.absent} values and the run said so for {found}" if self.absent
                  else "the text had a value for every field audited")  # fmt: skip
        return f'"none in the text": {said}; {absent}'


@dataclass
class AuditReport:
    """What an audit says about a run: per field and for ok rows, the claim checked; and the rest."""

    records: int
    claims: list[Claim]
    rows: Claim
    verdict: str
    read: dict[str, tuple[int, int]]  # per field: (values read right, values), certified or not
    none: NoneCounts = field(default_factory=NoneCounts)
    needed: int = 0  # certified values all right that confirm a field's claim at the run's level
    to_calibrate: int = 0  # values all right a field needs at the next calibrate's look (`look_level`)

    def broken(self, applied: dict[str, Any]) -> list[str]:
        """One sentence per broken field: what the audit found, and what to do."""
        said = applied.get("calibration")
        which = f"calibration {said}" if said else "the run's calibration"
        return [  # the claim's own target: a pooled claim's name is no field's
            f"{c.name} is broken: {c.correct} of {c.kept} values kept as certified are right (at most "
            f"{c.upper:.1%}), below the {c.target:.0%} {which} states. Do not rely on "
            f"{c.name} for records like these; `formwork audit calibrate FILE...` on {self.to_calibrate} or "
            "more audited records measures a threshold on them."
            for c in self.claims
            if c.verdict == "broken"
        ]


def _read_counts(schema: Schema, rows: Sequence[Audited]) -> tuple[dict[str, tuple[int, int]], NoneCounts]:
    """Per field, how many values the run read were right (certified or not), a list field's counted by
    record, right only if every item is (`tally`, as calibration counts it); and the null counts."""
    seen: list[tuple[str, str, bool, bool]] = []
    nones = NoneCounts()
    for row in rows:
        for entry in row.gold_row.trust:
            node = node_at(schema.checked_body, parse_path(entry["path"])) or {}
            gold, got = gold_at(row.gold, entry["path"]), kept_value(entry)
            seen.append((entry["field"], row.record, True, compare(node, gold, got, entry["path"])))
            nones.said += got is None
            nones.said_right += got is None and gold is None
            nones.absent += gold is None
            nones.absent_found += gold is None and got is None
    read = tally(schema_fields(schema.checked_body), seen)  # every value read counts, as if certified
    return {name: (count.right, count.values) for name, count in read.items()}, nones


def _row_right(schema: Schema, row: Audited) -> bool:
    """Whether every value the row kept is right."""
    return all(
        compare(node_at(schema.checked_body, parse_path(e["path"])) or {}, gold_at(row.gold, e["path"]),
                kept_value(e), e["path"])
        for e in row.trust
    )  # fmt: skip


def check_audit(
    schema: Schema, rows: Sequence[Audited], applied: dict[str, Any], look: int = 1
) -> AuditReport:
    """The audit of `rows`, checked against the claims of the calibration the run `applied`; `look` is the
    look the next `audit calibrate` of these runs would take (what it needs is said beside the claims)."""
    counts = field_counts(schema, [row.gold_row for row in rows])
    claims = field_claims(counts, applied)
    ok = [row for row in rows if row.status == "ok" and not row.unsettled]  # a row half-answered: unknown
    target, level = applied.get("target", TARGET), applied.get("level", LEVEL)
    rows_claim = check("ok rows", sum(_row_right(schema, row) for row in ok), len(ok), target, level)
    read, nones = _read_counts(schema, rows)
    verdict = verify(claims, rows_claim)["verdict"]
    pool = applied_pool(applied)  # what the run's calibration claimed: what a calibrate would test again
    to_calibrate = needed(schema, target, 1.0 - look_level(look), pool)
    confirming = needed(schema, target, level, pool)
    return AuditReport(len(rows), claims, rows_claim, verdict, read, nones, confirming, to_calibrate)
