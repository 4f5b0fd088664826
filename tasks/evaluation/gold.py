"""Read a gold file: JSONL of {"id", "text", "gold": {field: value}, optional "meta"}.

A gold set is written by people, so it is checked strictly before any model runs: a broken line, a
missing id, a repeated id or a gold naming a field the schema lacks is refused with its line number
(a silently skipped gold record would change every score).

A gold set that calibrates must name every field of the schema in every row (null where the text has
none): a field left out is not scored, so a row would count as all right over the fields that remain,
and the threshold it certifies would then apply to the field nobody checked (a gold set without
`category` certified 0.0, and production stored coin-flip enums as `ok`).

A gold set is split in two halves, fixed by the sha256 of each record's id (even first byte:
`calibration`, odd: `verification`), so one half chooses a threshold and the other, which it never
saw, checks it (`formwork eval --half`); the split does not move when records are added or reordered.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from formwork.schemas.registry import Schema


class GoldProblem(ValueError):
    """The gold file cannot be used as it stands."""


@dataclass(frozen=True)
class GoldRecord:
    id: str
    text: str
    gold: dict[str, Any]
    meta: dict[str, Any] = field(default_factory=dict)


Half = Literal["calibration", "verification"]
HALVES: tuple[Half, ...] = ("calibration", "verification")


def half_of(record_id: str) -> Half:
    """The half a record belongs to, fixed by its id alone."""
    return HALVES[hashlib.sha256(record_id.encode("utf-8")).digest()[0] % 2]


def load_gold(
    paths: str | Path | Sequence[str | Path], schema: Schema, limit: int | None = None, *,
    complete: bool = False, half: Half | None = None,
) -> list[GoldRecord]:  # fmt: skip
    """The first `limit` gold records of the files, in order (of one `half`, if given), every line
    checked and every id unique across them (`formwork eval a.jsonl b.jsonl`: one schema's gold may
    live in several files, by language say); `complete`: every row must name every field of the schema
    (for calibration)."""
    files = [Path(paths)] if isinstance(paths, str | Path) else [Path(p) for p in paths]
    records: list[GoldRecord] = []
    seen: set[str] = set()
    for path in files:
        if not path.is_file():
            raise GoldProblem(f"{path}: no such gold file")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if line.strip() and (limit is None or len(records) < limit):
                record = _record(f"{path}:{number}", line, schema, complete, seen)
                if half is None or half_of(record.id) == half:
                    records.append(record)
    if not records:
        shown = ", ".join(str(f) for f in files)
        raise GoldProblem(f"{shown}: no gold records" + (f" in the {half} half" if half else ""))
    return records


def _record(where: str, line: str, schema: Schema, complete: bool, seen: set[str]) -> GoldRecord:
    """One gold line, checked (see the module docstring); its id is added to `seen`."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise GoldProblem(f"{where}: not JSON ({exc.msg})") from exc
    if not isinstance(row, dict) or not isinstance(row.get("text"), str) or "id" not in row:
        raise GoldProblem(f'{where}: a gold line needs "id", "text" and "gold"')
    gold = row.get("gold")
    if not isinstance(gold, dict):
        raise GoldProblem(f'{where}: "gold" must be an object of field: value')
    unknown = set(gold) - set(schema.properties)
    if unknown:
        raise GoldProblem(f"{where}: {schema.name} has no field {', '.join(sorted(unknown))}")
    if complete:
        _check_complete(where, schema, gold)
    key = str(row["id"])
    if key in seen:
        raise GoldProblem(f"{where}: id {key!r} appears twice")
    seen.add(key)
    return GoldRecord(key, row["text"], gold, row.get("meta") or {})


def _check_complete(where: str, schema: Schema, gold: dict[str, Any]) -> None:
    if not gold:
        raise GoldProblem(f'{where}: "gold": {{}} names no field; a gold that calibrates names every field '
                          "of the schema (null where the text has none)")  # fmt: skip
    missing = [key for key in schema.properties if key not in gold]
    if missing:
        raise GoldProblem(f"{where}: the gold leaves out {', '.join(missing)}; to calibrate, every row names "
                          "every field of the schema (null where the text has none), or that field would "
                          "count as right unchecked")  # fmt: skip
