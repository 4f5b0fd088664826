"""The judge's verdicts on the gold as one fingerprint per gold set: what says the readers changed.

A calibration is measured on the values the judge (tasks.validate.judge and the readers under it)
accepts, so one measured before the readers changed which values are accepted no longer describes a
run: the readers' version in the calibration key (tasks.evaluation.key) must be bumped with them. A
person forgets to bump it (review 5: "MILK 2PT £1.15" as a quantity was accepted, then refused, under
one key); a fingerprint does not. Every gold record's answer is judged as a perfect model writes it
(every field present, log-probability 0, as benchmarks/judge_gold.py feeds it), and again with one
value made wrong in a way the text does not support (a number plus one or seven, a day later, another
record's name, an item's price given as its count), and each verdict's status and kept values are
hashed, per gold set. key.JUDGE_VERDICTS records them per readers' version, and
tests/test_judge_version.py recomputes them: verdicts that change without a bump fail it. No model is
called; held-out files are never read.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from formwork.schemas.registry import Schema, load_schema
from formwork.tasks.engines.base import Completion
from formwork.tasks.evaluation.gold import GoldRecord, load_gold
from formwork.tasks.grounding.values import ValueFinder
from formwork.tasks.validate import judge

NAMES = ("who", "name")
SUFFIX = "_zh_ja"  # more records of one schema: expense_zh_ja.jsonl is expense's
ITEMS = 3  # a list's first items made wrong: a long receipt's sixty would take the test seconds each


def gold_sets(folder: Path) -> dict[str, tuple[Schema, list[Path]]]:
    """The gold sets under `folder` (examples/gold): each schema's files, a long document's beside its
    `NAME.schema.json`; files named held-out are left alone."""
    sets: dict[str, tuple[Schema, list[Path]]] = {}
    for path in sorted(folder.glob("*.jsonl")):
        name = path.stem.removesuffix(SUFFIX)
        sets.setdefault(name, (load_schema(name), []))[1].append(path)
    for path in sorted(folder.glob("long/*.jsonl")):
        if "held-out" not in path.stem:
            name = path.stem.split("-")[0]
            schema = path.with_name(f"{name}.schema.json")
            sets.setdefault(f"long/{name}", (load_schema(schema), []))[1].append(path)
    return sets


def fingerprints(folder: Path) -> dict[str, str]:
    """Each gold set's fingerprint: a short hash of every verdict the judge gives on it."""
    found = {}
    for name, (schema, paths) in gold_sets(folder).items():
        records = load_gold(paths, schema)
        found[name] = hashlib.sha256(json.dumps(list(verdicts(schema, records))).encode()).hexdigest()[:16]
    return found


def verdicts(schema: Schema, records: list[GoldRecord]) -> Iterator[list[Any]]:
    """Per record: the perfect answer's status and kept data, then each wrong answer's status and whether
    the wrong value was kept."""
    names = [r.gold.get(k) for r in records for k in NAMES if r.gold.get(k)]
    for record in records:
        data = _shaped(schema.grammar_body, record.gold)
        status, kept = _judged(schema, record, data)
        yield [record.id, status, kept]
        for path, value in _wrong(record, data, names):
            status, kept = _judged(schema, record, _replaced(data, path, value))
            yield [record.id, path, status, _at(kept, path) == value]


def _judged(schema: Schema, record: GoldRecord, data: dict[str, Any]) -> tuple[str, Any]:
    notes = Completion("notes", "stop", 1, 1, 0.0, "perfect")
    written = json.dumps(data, ensure_ascii=False)
    answer = Completion(written, "stop", 1, 1, 0.0, "perfect", ((written, 0.0),))
    verdict = judge(schema, record.text, notes, answer, meta=record.meta)
    return verdict.status, verdict.data


def _shaped(body: dict[str, Any], data: Any) -> Any:
    """The answer as a perfect model writes it under the grammar: every property present, in order."""
    if isinstance(data, dict) and "properties" in body:
        return {key: _shaped(node, data.get(key)) for key, node in body["properties"].items()}
    if isinstance(data, list) and isinstance(body.get("items"), dict):
        return [_shaped(body["items"], element) for element in data]
    return data


def _wrong(record: GoldRecord, data: dict[str, Any], others: list[str]) -> Iterator[tuple[tuple, Any]]:
    """(path, wrong value) pairs the text does not support; a path is a tuple of keys and indexes."""
    amount = data.get("amount")
    if isinstance(amount, int | float) and not isinstance(amount, bool):
        yield ("amount",), amount + (1 if str(int(amount) + 1) not in record.text else 7)
    if isinstance(data.get("date"), str):  # a day later, or earlier where the text writes the later one
        days = (date.fromisoformat(data["date"][:10]) + timedelta(days=n) for n in (1, -1, 2))
        written = ValueFinder(record.text)
        yield ("date",), next(d.isoformat() for d in days if written.date(d.isoformat()) is None)
    for key in NAMES:
        if isinstance(data.get(key), str):
            other = next((o for o in others if o != data[key] and o not in record.text), None)
            if other:
                yield (key,), other
    for index, item in enumerate((data.get("items") or [])[:ITEMS]):
        if not isinstance(item, dict):
            continue
        count, price = item.get("quantity"), item.get("amount")
        if isinstance(count, int | float) and not isinstance(count, bool):
            yield ("items", index, "quantity"), count + (1 if str(int(count) + 1) not in record.text else 7)
        if isinstance(price, int | float) and not isinstance(price, bool) and price != count:
            yield ("items", index, "quantity"), price  # the line's price as its count


def _replaced(data: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(data, list):
        return [_replaced(e, rest, value) if i == head else e for i, e in enumerate(data)]
    return {k: _replaced(v, rest, value) if k == head else v for k, v in data.items()}


def _at(data: Any, path: tuple) -> Any:
    for step in path:
        try:
            data = data[step]
        except (IndexError, KeyError, TypeError):
            return None
    return data
