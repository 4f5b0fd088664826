"""Escalate what is unsure: the settings of the stronger model, and a row two models read together.

A row held back only by its values' thresholds gains nothing from the same model asked again: greedy,
it answers the same, and the bound holds it again. A stronger model (or the same model reading twice)
may certify what the first could not, so such a row waits in the retry queue as an *escalation*
(db.queue), and the reprocessing flow reads it with `escalate_to`, under that model's own calibration.
Only a row unsure of a field that calibration certifies is sent (db.store.QueuePolicy, with the key
from tasks.evaluation.key.escalation_key): for any other, the stronger reader could change nothing.
Which of its values that calibration may certify in the row is another matter (below).

`escalate_to` names the stronger reader in one string (tasks.settings.escalation_overrides reads it):
a model from `formwork models`, `@MODE` for the same model in another mode, both, or a server.

The two models' rows are then combined (`combine`), each value with the evidence of the reader whose
value is kept:

- a value outside any list, value by value: the one a model certifies is kept; where both certify
  different values, neither is (two calibrations vouch for answers that cannot both be right), so it
  is dropped with a reason naming both; the rest stay null with the stronger model's reason;
- a list, whole from one reader: item `i` of one model's list need not be item `i` of the other's
  (an `ok` row once held Bread at Milk's price), so items are never mixed by position. The list a
  model certifies whole is kept (the stronger model's when both do and their items agree); where both
  certify lists that differ, the items both give are kept and each other item of the stronger
  model's list is dropped, naming both; where neither certifies its list whole, the one with more
  certified values is kept (the stronger model's on a tie), its unsure values dropped as it said.

Each kept value names the model that certified it, and the row is `ok` when every value is certified
by one of them.

**Which calibration certifies the stronger reader here.** The rows it reads are the ones the first
reader was unsure of, the hard ones, where a calibration measured on all records overstates its
precision (the review's simulation: below its 95% target on them in 85 of 92 calibrations; ours, in
tests/test_cascade_level.py: in every one of 72).
So its values are certified here only by a calibration measured on escalated records, one whose key
names both readers and the first reader's calibration (`measured_on_escalated`): `formwork eval
--calibrate --escalated-from RUN` measures it on the gold records the first reader's eval run leaves
unsure under that reader's calibration, and stores it keyed so (db.escalated_calibrations); the
reprocessing flow holds the stronger reader to it for the records that first reader, under that
calibration, escalated. Where there is none, each of the stronger reader's values is delivered
`unsure`, with its value and `MEASURED_ON_ALL` as the reason: what is certified in an escalated row is
then what the first reader's calibration certified. benchmarks/cascade.py measures both from measuring
runs (calibration half's escalated records) and reports them side by side.

**The joint level.** Each calibration's claims hold together at its own level (0.9: one chance in ten
that some field's claim is false). A row carrying values certified by two calibrations rests on both,
so the claims of a cascade hold together at 1 - (1 - a) - (1 - b): two families at 90% each give 80%,
not 90% (`joint_level`).
"""

from __future__ import annotations

import copy
import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Literal

from formwork.schemas.paths import parse_path, set_null
from formwork.schemas.registry import Schema
from formwork.tasks.calls import UNVOUCHED
from formwork.tasks.confidence.certify import FieldClaim
from formwork.tasks.confidence.choose import under
from formwork.tasks.confidence.readings import same
from formwork.tasks.confidence.score import ScoreModel
from formwork.tasks.evaluation.calibration import GoldRow, kept_values
from formwork.tasks.validate import Verdict, as_written

Side = Literal["first", "second", "both"]
DISAGREE = "two certified readers disagree, so neither is certified"
MEASURED_ON_ALL = "the stronger reader's calibration was measured on all records, not on escalated ones"


def joint_level(*levels: float) -> float:
    """The level at which the claims of several calibrations hold together (Bonferroni: their chances
    of a false claim add up), as a row certified by both readers of a cascade relies on all of them."""
    return max(0.0, 1.0 - sum(1.0 - level for level in levels))


def escalated(schema: Schema, rows: Sequence[GoldRow], model: ScoreModel, claims: dict[str, FieldClaim]
              ) -> list[str]:  # fmt: skip
    """The records whose rows the first reader leaves not `ok` under its calibration (`model`, `claims`):
    some value it keeps is not certified, or it keeps none. These are the ones its rule sends on, and a
    calibration of the stronger reader measured on them is what may certify its values here. A record it
    read nothing from (a failed row) is not among them: a run retries it with the same reader and never
    sends it on (db.store.QueuePolicy.wants)."""
    sent = []
    for row in rows:
        if not row.trust:
            continue
        kept = kept_values(schema, row, model, claims)
        thresholds = [(score, claims[f].threshold if f in claims else None) for f, score, _ in kept]
        if not kept or not all(s is not None and t is not None and s >= t for s, t in thresholds):
            sent.append(row.record)
    return sent


def _measured_on_all(second: Verdict) -> Verdict:
    """`second` with none of its values certified: its calibration was measured on all records, and these
    are the hard ones. Each value stays in the row as read (not dropped), `unsure` with the reason."""
    trust = [{**e, "certified": False, "certified_by": None, "why": MEASURED_ON_ALL} if e.get("certified")
             else e for e in second.trust or []]  # fmt: skip
    return replace(second, trust=trust)


def _kept(entry: dict[str, Any]) -> Any:
    readings = entry.get("readings") or {}
    return (readings.get(entry.get("reading")) or {}).get("value")


def _unit(path: str) -> str:
    """The list a value path lies in (`items` for `items[2].amount`), or the path itself outside one."""
    return path.split("[", 1)[0]


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _reason(entry: dict[str, Any]) -> str:
    """The error a dropped value (or an unsure null) leaves, worded as tasks.decide words it."""
    if _kept(entry) is None:
        return f"{entry['path']} null is unsure: {entry['why']}; the text may hold a value"
    return f"{entry['path']} {_shown(_kept(entry))} dropped: {entry['why']}"


def _by(entry: dict[str, Any], model: str) -> dict[str, Any]:
    """A trust entry naming the model that certified it (None where it is not certified)."""
    return {**entry, "certified_by": entry.get("certified_by") or model if entry.get("certified") else None}


def _items(entries: list[dict[str, Any]], root: str) -> dict[str, dict[str, Any]]:
    """The values of each item of the list at `root`: `items[0]` -> {`.amount`: 1.15, ...}."""
    found: dict[str, dict[str, Any]] = defaultdict(dict)
    for entry in entries:
        index, _, rest = entry["path"][len(root) :].partition("]")
        found[f"{root}{index}]"][rest] = _kept(entry)
    return found


def _agree(one: dict[str, Any], other: dict[str, Any]) -> bool:
    return one.keys() == other.keys() and all(same(one[k], other[k]) for k in one)


def _side(mine: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> Side:
    """Which reader's list is kept whole: the stronger's (`second`), the first's, or `both` certify
    theirs whole (then their items are compared)."""
    sure_mine = bool(mine) and all(e.get("certified") for e in mine)
    sure_theirs = bool(theirs) and all(e.get("certified") for e in theirs)
    if sure_mine and sure_theirs:
        return "both"
    if sure_mine or sure_theirs:
        return "second" if sure_mine else "first"
    counted = sum(bool(e.get("certified")) for e in theirs) - sum(bool(e.get("certified")) for e in mine)
    return "first" if counted > 0 else "second"


def combine(schema: Schema, first: dict[str, Any], first_model: str, second: Verdict, second_model: str,
            *, measured_on_escalated: bool = False) -> Verdict:  # fmt: skip
    """The row of a record the first model left unsure (`first`: its stored `data`, `trust` and
    `evidence`) once the stronger model has read it (`second`, held to its own calibration).
    `measured_on_escalated`: whether that calibration was measured on the records the first reader's
    rule escalates; where not, none of the stronger model's values is certified (the module docstring)."""
    if not measured_on_escalated:
        second = _measured_on_all(second)
    if second.data is None:
        second = replace(second, data=copy.deepcopy(first.get("data")) or None)
    if not isinstance(second.data, dict):
        return second
    data, first_data = copy.deepcopy(second.data), first.get("data") or {}
    earlier = {entry["path"]: entry for entry in first.get("trust") or []}
    later = {entry["path"]: entry for entry in second.trust or []}
    lists = {_unit(path) for path in [*earlier, *later] if "[" in path}
    trust: list[dict[str, Any]] = []
    errors, nulled = list(second.errors), set(second.nulled)
    taken: set[str] = set()  # paths and lists whose value is the first model's
    dropped: set[str] = set()  # paths both certified differently: no one's value, no one's evidence

    def drop(entry: dict[str, Any], why: str) -> None:
        mine = {**entry, "certified": False, "certified_by": None, "dropped": True, "why": why}
        _put(data, entry["path"], None)
        nulled.add(entry["path"])
        dropped.add(entry["path"])
        errors.append(_reason(mine))
        trust.append(mine)

    for root in sorted(lists):
        mine = [e for p, e in later.items() if _unit(p) == root]
        theirs = [e for p, e in earlier.items() if _unit(p) == root]
        side, kept = _side(mine, theirs), _at(first_data, root)
        if side == "first" and kept is not None and _put(data, root, copy.deepcopy(kept)):
            taken.add(root)
            errors = [e for e in errors if not under(_head(e), root)]
            nulled = {p for p in nulled if not under(p, root)}
            for entry in theirs:
                trust.append(_by(entry, first_model))
                if entry.get("dropped"):
                    errors.append(_reason(entry))
                    nulled |= {entry["path"]} if _kept(entry) is not None else set()
            continue
        given = list(_items(theirs, root).values())
        ours = _items(mine, root)
        agreed = {item for item, values in ours.items() if any(_agree(values, v) for v in given)}
        whole = len(agreed) == len(ours) == len(given) and all(
            any(_agree(v, values) for values in ours.values()) for v in given
        )
        for entry in mine:
            item = entry["path"][: len(root)] + entry["path"][len(root) :].partition("]")[0] + "]"
            if side == "both" and not whole and item not in agreed:
                drop(entry, f"certified by {second_model}, whose list differs from the one {first_model} "
                            f"certified ({len(ours)} items against {len(given)}, this one not among "
                            f"{first_model}'s): {DISAGREE}")  # fmt: skip
            else:
                trust.append(_by(entry, second_model))
    for path, entry in later.items():
        if _unit(path) in lists:
            continue
        before = earlier.pop(path, None)
        if before is None or not before.get("certified"):
            trust.append(_by(entry, second_model))
        elif not entry.get("certified"):
            trust.append(_by(before, first_model))
            _put(data, path, _kept(before))
            nulled.discard(path)
            taken.add(path)
        elif same(_kept(before), _kept(entry)):
            trust.append(_by(entry, second_model))
        else:
            drop(entry, f"{second_model} certified {_shown(_kept(entry))} and {first_model} certified "
                        f"{_shown(_kept(before))}: {DISAGREE}")  # fmt: skip
    for path, before in earlier.items():  # values only the first model's row had
        if _unit(path) not in lists and before.get("certified") and _put(data, path, _kept(before)):
            trust.append(_by(before, first_model))
            nulled.discard(path)
            taken.add(path)
    settled = {t["path"] for t in trust if t.get("certified_by")}
    errors = [e for e in errors if _head(e) not in settled]

    def theirs_at(path: str) -> bool:
        return path in taken or _unit(path) in taken

    evidence = [row for row in second.evidence if not theirs_at(row["path"]) and row["path"] not in dropped]
    evidence += [row for row in first.get("evidence") or [] if theirs_at(row["path"])]
    for path in nulled:  # each reader's row left out what the user's schema cannot hold null: conform anew
        _put(data, path, None)
    if any(t.get("why") == MEASURED_ON_ALL for t in trust):
        errors.append(f"{UNVOUCHED}: {MEASURED_ON_ALL}")
    status = "ok" if trust and not errors and all(t.get("certified_by") for t in trust) else second.status
    status = "partial" if status == "ok" and errors else status
    verdict = Verdict(status, data, errors, sorted(nulled), [], evidence, second.values, trust)  # type: ignore[arg-type]
    done = as_written(schema, verdict, {parse_path(p) for p in verdict.nulled})
    unique = {json.dumps(row, sort_keys=True, default=str): row for row in done.evidence}  # re-conformed
    return replace(done, evidence=list(unique.values()), trust=trust)


def _head(error: str) -> str:
    """The path an error is about (every message about a value starts with it)."""
    return error.split(" ", 1)[0].rstrip(":")


def _at(data: Any, path: str) -> Any:
    """The value at `path` in `data`; None where there is none."""
    node = data
    for part in parse_path(path):
        if isinstance(part, int):
            node = node[part] if isinstance(node, list) and part < len(node) else None
        else:
            node = node.get(part) if isinstance(node, dict) else None
    return node


def _put(data: Any, path: str, value: Any) -> bool:
    """Set `value` at `path` in `data` where the path exists; whether it did."""
    parts = parse_path(path)
    node = data
    for part in parts[:-1]:
        if isinstance(part, int):
            if not isinstance(node, list) or part >= len(node):
                return False
        elif not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    if isinstance(parts[-1], int) and (not isinstance(node, list) or parts[-1] >= len(node)):
        return False
    if value is None:
        set_null(data, parts)
    else:
        node[parts[-1]] = value
    return True
