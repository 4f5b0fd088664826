"""Every value a row read, with its state: what a user gets of a stored result, field by field.

A stored result keeps nothing from its user: `data` holds the values the run's policy kept, `trust`
every value the kept reading gave (each with its score, threshold, whether it is certified and why
not), the errors and evidence what the judge refused. From those this module gives, per top-level
field of the schema (every field, always, in the schema's order), the value and its state:

- `certified`: the run's calibration (or, in an escalated row, the named model) vouches for it;
- `unsure`: the model read it, nothing vouches for it (below its threshold, no calibration, a field
  no calibration certifies): the value is given, with its score and why;
- `refused`: the judge refused what the model wrote (not in the text, a copy of another field, the
  wrong format) or the row failed; the value, where there was one, and why;
- `none`: null (or an empty list): the reading found no value, certified or not (`why` says when not);
- `confirmed`: a person settled the value (`formwork review --unsure`, then `formwork settle`): the
  value is theirs, `by` who, `why` when and what the model read, and `read` the model's value, kept as
  it was. A decision settles the reading it was made on: it applies while the row holds the same value
  there (a later reading that differs is unsure again), and never to a certified value.

A field is the unit: a nested object or a list is `certified` only when every value in it is, and is
otherwise `unsure` with the whole of it as read (its dropped values put back); a refused value inside
it stays out (null), and its reason is the field's `why` when nothing else is.

Two views: `certified_only` is the safe reading (certified and confirmed values, every other field null) and
`every_value` gives each value with its state. A failed row's answer was never checked (issue 44): no
view hands out its values; each field is `refused` with the row's reason.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import asdict, dataclass
from typing import Any, Literal

from formwork.flows.verdicts import field_verdicts, read_error
from formwork.schemas.paths import parse_path

State = Literal["certified", "unsure", "refused", "none", "confirmed"]
# a judge's drop on these grounds is about confidence (tasks.confidence.bounds), not about the text
DOUBTED = ("bound", "calibrate", "certify", "logprobs")
NO_POLICY = "no confidence policy applied (calibration off)"


@dataclass(frozen=True)
class Delivered:
    """One top-level field's value and state in a row."""

    field: str
    value: Any
    state: State
    score: float | None = None  # the value's score (its probability where no calibration scores it)
    threshold: float | None = None
    by: str | None = None  # certified: which calibration, or the model an escalated row names; confirmed: who
    why: str = ""
    read: Any = None  # confirmed: the value the model read, beside the person's

    def as_dict(self) -> dict[str, Any]:
        """What JSONL carries per field (the field's name is the key it sits under); a confirmed value
        also carries what the model read."""
        found = asdict(self)
        del found["field"]
        if self.state != "confirmed":
            del found["read"]
        return found

    @property
    def settled(self) -> bool:
        """Whether no person needs to look at it: certified, confirmed, or none with no doubt."""
        return self.state in ("certified", "confirmed") or (self.state == "none" and not self.why)


def top_fields(body: dict[str, Any] | None) -> list[str]:
    """The schema's top-level fields in its own order: the output's columns, whatever a row holds."""
    properties = (body or {}).get("properties")
    return list(properties) if isinstance(properties, dict) else []


def top(path: str) -> str:
    """The top-level field a value path is in: `items[2].amount` is in `items`."""
    return re.split(r"[.\[]", path, maxsplit=1)[0]


def _put(root: Any, parts: tuple[str | int, ...], value: Any) -> Any:
    """`root` with `value` at `parts` (below the field), the containers on the way made where a parent
    was nulled; returns the new root."""
    if not parts:
        return value
    head, rest = parts[0], parts[1:]
    if isinstance(head, int):
        items = root if isinstance(root, list) else []
        items += [None] * (head + 1 - len(items))
        items[head] = _put(items[head], rest, value)
        return items
    found = root if isinstance(root, dict) else {}
    found[head] = _put(found.get(head), rest, value)
    return found


def _score(entry: dict[str, Any]) -> float | None:
    """A trust entry's score, or where no calibration scores it the kept reading's probability."""
    if entry.get("score") is not None:
        return entry["score"]
    reading = (entry.get("readings") or {}).get(entry.get("reading") or "", {})
    return reading.get("p")


def _empty(value: Any) -> bool:
    return value is None or value == []


def _failed(fields: list[str], row: dict[str, Any]) -> dict[str, Delivered]:
    """Every field refused with the row's reason: a row-level one (no JSON, a cut pass) where it has one,
    else the first value the judge refused."""
    reasons = [read_error(e) for e in row.get("errors") or []]
    first = next((r for r in reasons if r.path is None), reasons[0] if reasons else None)
    reason = (
        "no answer" if first is None else first.words if first.path is None else f"{first.path} {first.words}"
    )
    return {f: Delivered(f, None, "refused", why=f"the row failed: {reason}") for f in fields}


def every_value(fields: list[str], row: dict[str, Any], by: str | None = None) -> dict[str, Delivered]:
    """Each of `fields` in `row` (a stored result: db.queries.result_rows, or a verdict's parts) with
    its value and state; `by` names what certified the run's values (its calibration)."""
    if row.get("status") == "failed":
        return _failed(fields, row)
    data = row.get("data") or {}
    trust: dict[str, list[dict[str, Any]]] = {}
    for entry in row.get("trust") or []:
        trust.setdefault(top(entry["path"]), []).append(entry)
    trusted = {entry["path"] for entries in trust.values() for entry in entries}
    read = {e["path"]: e["value"] for e in row.get("evidence") or [] if e.get("value") is not None}
    verdicts, _ = field_verdicts(row)
    doubted: dict[str, list[tuple[str, str]]] = {}  # field -> (path, why) dropped as unsure by the judge
    refused: dict[str, list[tuple[str, str]]] = {}
    for v in verdicts:
        if v.path in trusted or v.kind in ("kept", "unsure"):  # decided by the policy, or a null
            continue
        unsure = v.kind == "dropped" and v.hint in DOUBTED
        (doubted if unsure else refused).setdefault(top(v.path), []).append((v.path, v.words))
    decisions = row.get("decisions") or {}
    return {
        f: _confirmed(
            _field(f, data.get(f), trust.get(f, []), doubted.get(f, []), refused.get(f, []), read, by),
            decisions.get(f),
        )
        for f in fields
    }


def _plain(value: Any) -> Any:
    """`value` with whole floats as integers, as JSON may have carried them either way."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def same(a: Any, b: Any) -> bool:
    """Whether two values are the same reading: equal as JSON (1 and 1.0 alike, key order aside)."""
    return json.dumps(_plain(a), sort_keys=True) == json.dumps(_plain(b), sort_keys=True)


def _confirmed(found: Delivered, decision: dict[str, Any] | None) -> Delivered:
    """The field as a person settled it, where `decision` (db.decisions.row_decisions: value, model_value,
    who, at, action) was made on the value this reading holds; else as read."""
    if decision is None or found.state == "certified" or not same(found.value, decision["model_value"]):
        return found
    what = {"accept": "accepted", "fix": "fixed", "none": "set to none"}.get(decision["action"], "settled")
    said = json.dumps(found.value, ensure_ascii=False)
    why = f"{what} by {decision['who']} on {decision['at']}; the model read {said} ({found.state})"
    person = decision["value"]
    return Delivered(found.field, person, "confirmed", by=decision["who"], why=why, read=found.value)


def _field(name: str, kept: Any, entries: list[dict[str, Any]], doubted: list[tuple[str, str]],
           refused: list[tuple[str, str]], read: dict[str, Any], by: str | None) -> Delivered:  # fmt: skip
    """One field's value as read (its kept value, each trust entry's and each doubted value put back)
    and its state."""
    whole = next((why for path, why in refused if path == name), None)
    if whole is not None:
        return Delivered(name, read.get(name), "refused", why=whole)
    value = copy.deepcopy(kept)
    for path, found in [(e["path"], e["value"]) for e in entries] + [(p, read.get(p)) for p, _ in doubted]:
        if found is not None:
            value = _put(value, parse_path(path)[1:], copy.deepcopy(found))
    unsure = [e for e in entries if not e.get("certified")]
    if _empty(value):
        if refused:
            return Delivered(name, None, "refused", why=refused[0][1])
        doubt = next((e for e in unsure if e.get("value") is None), None)
        if doubt is None:
            return Delivered(name, value, "none")
        return Delivered(name, value, "none", _score(doubt), doubt.get("threshold"), why=doubt["why"])
    if entries and not unsure and not doubted and not refused:
        scores = [s for s in map(_score, entries) if s is not None]
        thresholds = [e["threshold"] for e in entries if e.get("threshold") is not None]
        return Delivered(name, value, "certified", min(scores, default=None), max(thresholds, default=None),
                         entries[0].get("certified_by") or by)  # fmt: skip
    if unsure:
        first = unsure[0]
        return Delivered(name, value, "unsure", _score(first), first.get("threshold"), why=first["why"])
    if doubted:
        return Delivered(name, value, "unsure", why=doubted[0][1])
    return Delivered(name, value, "unsure", why=refused[0][1] if refused else NO_POLICY)


def certified_only(fields: list[str], row: dict[str, Any], by: str | None = None) -> dict[str, Any]:
    """The safe reading: each field's certified or confirmed value, every other field null (every field
    present)."""
    found = every_value(fields, row, by)
    return {f: d.value if d.state in ("certified", "confirmed") else None for f, d in found.items()}
