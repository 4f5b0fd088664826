"""Check the bundled gold sets before anything is measured on them.

    python benchmarks/gold_check.py [--counts] [--gold FOLDER]

A gold row that leaves a field out is scored as if that field were right, which lets a calibration
certify a threshold it never measured (issue 26, point 1). So every row of every set in
examples/gold/ must name every field of its schema (null when the text has none; a free string the
model writes, `x-grounding: none`, is the one field a gold cannot state), ids must be unique
across a schema's two files (`SCHEMA.jsonl` and `SCHEMA_zh_ja.jsonl`: the calibration split hashes
the id), a gold date must be ISO 8601, an enum value one the schema lists, a string within its
maxLength and pattern, and `meta` may hold only `lang` (a code), `hard` (why the row is hard) and
`reference_date` (the day the text was written, ISO).
Only the standard library is used, so the check runs before any environment is installed.

Prints one line per problem and exits 1 when there is any; `--counts` also prints each schema's size
and language mix.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GOLD = ROOT / "examples" / "gold"
SCHEMAS = ROOT / "schemas" / "builtin"
SUFFIX = "_zh_ja"
META_KEYS = {"lang", "hard", "reference_date"}


def iso_day(value: Any) -> bool:
    try:
        return isinstance(value, str) and date.fromisoformat(value).isoformat() == value
    except ValueError:
        return False


def written(node: dict[str, Any]) -> bool:
    """A free string the model writes rather than finds (`x-grounding: none`, e.g. chat_tag's reply):
    no text holds its answer, so the gold leaves it out and it is not scored."""
    types = node.get("type")
    return node.get("x-grounding") == "none" and (types == "string" or "string" in (types or []))


def field_problems(body: dict[str, Any], value: Any, where: str) -> list[str]:
    """What is wrong with one gold value against its property, at every depth. Null is always a gold's
    answer ("the text has none"), even for a field the schema requires: the row then cannot be `ok`."""
    if "enum" in body and value is not None and value not in body["enum"]:
        return [f"{where}: {value!r} is not one of {body['enum']}"]
    if body.get("format") == "date" and value is not None and not iso_day(value):
        return [f"{where}: {value!r} is not an ISO date"]
    if isinstance(value, str) and len(value) > body.get("maxLength", len(value)):
        return [f"{where}: {value!r} is longer than {body['maxLength']}"]
    if isinstance(value, str) and "pattern" in body and not re.search(body["pattern"], value):
        return [f"{where}: {value!r} does not match {body['pattern']}"]
    if isinstance(value, list) and isinstance(body.get("items"), dict):
        return [p for n, item in enumerate(value) for p in row_problems(body["items"], item, f"{where}[{n}]")]
    return []


def row_problems(body: dict[str, Any], gold: Any, where: str) -> list[str]:
    if not isinstance(gold, dict):
        return [f"{where}: not an object"]
    fields = body["properties"]
    problems = [f"{where}: field {key!r} not named (write null when the text has none)"
                for key, node in fields.items() if key not in gold and not written(node)]  # fmt: skip
    problems += [f"{where}: no field {key!r} in the schema" for key in gold if key not in fields]
    for key, node in fields.items():
        if key in gold:
            problems += field_problems(node, gold[key], f"{where}.{key}")
    return problems


def meta_problems(meta: Any, where: str) -> list[str]:
    if meta is None:
        return []
    if not isinstance(meta, dict):
        return [f"{where}: meta is not an object"]
    problems = [f"{where}: meta key {key!r} unknown" for key in meta if key not in META_KEYS]
    if "reference_date" in meta and not iso_day(meta["reference_date"]):
        problems.append(f"{where}: meta reference_date {meta['reference_date']!r} is not an ISO date")
    if "lang" in meta and not (isinstance(meta["lang"], str) and 2 <= len(meta["lang"]) <= 3):
        problems.append(f"{where}: meta lang {meta['lang']!r} is not a language code")
    return problems


def check(gold: Path, counts: bool = False) -> int:
    problems: list[str] = []
    ids: dict[str, dict[str, str]] = defaultdict(dict)
    sizes: Counter[str] = Counter()
    languages: dict[str, Counter[str]] = defaultdict(Counter)
    for path in sorted(gold.glob("*.jsonl")):
        schema = path.stem.removesuffix(SUFFIX)
        body = json.loads((SCHEMAS / f"{schema}.json").read_text(encoding="utf-8"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            where = f"{path.name}:{number}"
            row = json.loads(line)
            key = str(row.get("id"))
            if key in ids[schema]:
                problems.append(f"{where}: id {key!r} already used at {ids[schema][key]}")
            ids[schema][key] = where
            if not isinstance(row.get("text"), str) or not row["text"].strip():
                problems.append(f"{where}: no text")
            problems += row_problems(body, row.get("gold"), f"{where} {key}")
            problems += meta_problems(row.get("meta"), f"{where} {key}")
            sizes[schema] += 1
            languages[schema][(row.get("meta") or {}).get("lang", "en")] += 1
    for problem in problems:
        print(problem)
    if counts:
        for schema, size in sorted(sizes.items()):
            mix = ", ".join(f"{lang} {n}" for lang, n in languages[schema].most_common())
            print(f"{schema}: {size} records ({mix})")
    return 1 if problems else 0


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--counts", action="store_true", help="also print each schema's size and languages")
    parser.add_argument("--gold", type=Path, default=GOLD, help="the folder of gold sets (examples/gold)")
    args = parser.parse_args()
    sys.exit(check(args.gold, args.counts))


if __name__ == "__main__":
    main()
