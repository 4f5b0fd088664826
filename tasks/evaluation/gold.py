"""Read a gold file: JSONL of {"id", "text", "gold": {field: value}, optional "meta"}.

A gold set is written by people, so it is checked strictly before any model runs: a broken line, a
missing id, a repeated id or a gold naming a field the schema lacks is refused with its line number
(a silently skipped gold record would change every score).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from formwork.schemas.registry import Schema


class GoldProblem(ValueError):
    """The gold file cannot be used as it stands."""


@dataclass(frozen=True)
class GoldRecord:
    id: str
    text: str
    gold: dict[str, Any]
    meta: dict[str, Any] = field(default_factory=dict)


def load_gold(path: str | Path, schema: Schema, limit: int | None = None) -> list[GoldRecord]:
    """The first `limit` gold records of the file, every line checked."""
    path = Path(path)
    if not path.is_file():
        raise GoldProblem(f"{path}: no such gold file")
    records: list[GoldRecord] = []
    seen: set[str] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
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
        key = str(row["id"])
        if key in seen:
            raise GoldProblem(f"{where}: id {key!r} appears twice")
        seen.add(key)
        records.append(GoldRecord(key, row["text"], gold, row.get("meta") or {}))
        if limit is not None and len(records) >= limit:
            break
    if not records:
        raise GoldProblem(f"{path}: no gold records")
    return records
