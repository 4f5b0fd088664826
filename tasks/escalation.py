"""Escalate what is unsure: the settings of the stronger model, and a row two models read together.

A row held back only by its values' thresholds gains nothing from the same model asked again: greedy,
it answers the same, and the bound holds it again. A stronger model (or the same model reading twice)
may certify what the first could not, so such a row waits in the retry queue as an *escalation*
(db.queue), and the reprocessing flow reads it with `escalate_to`, under that model's own calibration.
Only a row unsure of a field that calibration certifies is sent (db.store.QueuePolicy, with the key
from tasks.evaluation.key.escalation_key): for any other, the stronger reader could change nothing.

`escalate_to` names the stronger reader in one string (tasks.settings.escalation_overrides reads it):
a model from `formwork models`, `@MODE` for the same model in another mode, both, or a server.

The two models' rows are then combined value by value (`combine`): a value the stronger model
certifies is kept, and where the first model certified another one, the stronger model's wins (it
was asked because the row was unsure, and its own calibration vouches for what it read); a value only
the first model certified is kept as the first model's; the rest stay null with the stronger model's
reason. Each kept value names the model that certified it, and the row is `ok` when every value is
certified by one of them.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from typing import Any

from formwork.schemas.paths import parse_path, set_null
from formwork.schemas.registry import Schema
from formwork.tasks.confidence.readings import same
from formwork.tasks.validate import Verdict, as_written


def _kept(entry: dict[str, Any]) -> Any:
    readings = entry.get("readings") or {}
    return (readings.get(entry.get("reading")) or {}).get("value")


def combine(schema: Schema, first: dict[str, Any], first_model: str, second: Verdict, second_model: str
            ) -> Verdict:  # fmt: skip
    """The row of a record the first model left unsure (`first`: its stored `data` and `trust`) once the
    stronger model has read it (`second`, held to its own calibration)."""
    if second.data is None:
        second = replace(second, data=copy.deepcopy(first.get("data")) or None)
    if not isinstance(second.data, dict):
        return second
    data = copy.deepcopy(second.data)
    earlier = {entry["path"]: entry for entry in first.get("trust") or []}
    trust, errors, nulled = [], [], set(second.nulled)
    for entry in second.trust or []:
        before = earlier.pop(entry["path"], None)
        mine = {**entry, "certified_by": second_model if entry.get("certified") else None}
        if before is not None and before.get("certified"):
            if not entry.get("certified"):
                mine = {**before, "certified_by": before.get("certified_by") or first_model}
                _put(data, entry["path"], _kept(before))
                nulled.discard(entry["path"])
            elif not same(_kept(before), _kept(entry)):
                shown = json.dumps(_kept(before), ensure_ascii=False)
                mine["why"] = (f"certified by both; {second_model}'s wins over {first_model}'s {shown}: it "
                               "was asked because the row was unsure, under its own calibration")  # fmt: skip
        trust.append(mine)
    for path, before in earlier.items():  # paths only the first model's row had
        if before.get("certified") and _put(data, path, _kept(before)):
            trust.append({**before, "certified_by": before.get("certified_by") or first_model})
            nulled.discard(path)
    settled = {t["path"] for t in trust if t.get("certified_by")}
    errors = [e for e in second.errors if not any(_about(e, path) for path in settled)]
    status = "ok" if trust and not errors and all(t.get("certified_by") for t in trust) else second.status
    status = "partial" if status == "ok" and errors else status
    verdict = Verdict(status, data, errors, sorted(nulled), [], second.evidence, second.values, trust)  # type: ignore[arg-type]
    return replace(as_written(schema, verdict, {parse_path(p) for p in verdict.nulled}), trust=trust)


def _about(error: str, path: str) -> bool:
    head = error.split(" ", 1)[0].rstrip(":")
    return head == path


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
