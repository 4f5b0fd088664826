"""The judge given perfect answers: how many gold records a perfect model would earn `ok`, and how
many answers with one value made wrong the judge would still accept.

    .venv/bin/python benchmarks/judge_gold.py [--sets expense,contact_zh_ja] [--wrong]
    .venv/bin/python benchmarks/judge_gold.py --file examples/gold/real/shop_receipt_sroie.jsonl \
        --schema shop_receipt --wrong

Every gold set in examples/gold/ (a file `SCHEMA.jsonl`, or `SCHEMA_zh_ja.jsonl` for more records of
that schema). Each record's gold answer is fed to `judge` as the formatting pass's output, the way a
perfect model writes it: every schema field present (a field the gold leaves out is null), log-
probability 0 on every token, finish `stop`; the record's gold meta is its meta (its reference date).
Reported: the share `ok`, and every record that is not `ok` with its reasons.

With `--wrong`, each answer is also judged with one value made wrong in a way the text does not
support: the amount plus one (or seven), the date a day later (or earlier, where the text writes
the later day itself), the name or person another record's, and, where the schema states a date order
(`x-date-order`), the date with its day and month swapped where the text writes it only the other way.
A wrong value counts as accepted when the verdict's data still holds it (`ok`, or `partial` that
kept it); the target is 0.

With `--model`, every answer is scored by the bundled model instead of log-probability 0, and judged
with confidence in force, wrong values the text does contain included (benchmarks/judge_scored.py).
"""

from __future__ import annotations

import argparse
import json
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from formwork.schemas.annotations import DateOrder
from formwork.schemas.registry import load_schema
from formwork.tasks.engines.base import Completion
from formwork.tasks.evaluation.gold import GoldRecord, load_gold
from formwork.tasks.grounding.dates import safe_date
from formwork.tasks.grounding.values import ValueFinder
from formwork.tasks.validate import Verdict, judge

GOLD = Path(__file__).resolve().parents[1] / "examples" / "gold"
SUFFIX = "_zh_ja"
NAMES = ("who", "name")


def schema_name(path: Path) -> str:
    return path.stem.removesuffix(SUFFIX)


def shaped(body: dict[str, Any], data: Any) -> Any:
    """The answer as a perfect model writes it under the grammar: every property present (null where the
    gold leaves it out), in the schema's order at every depth."""
    if isinstance(data, dict) and "properties" in body:
        return {key: shaped(node, data.get(key)) for key, node in body["properties"].items()}
    if isinstance(data, list) and isinstance(body.get("items"), dict):
        return [shaped(body["items"], element) for element in data]
    return data


def answer(schema, gold: dict[str, Any]) -> dict[str, Any]:
    return shaped(schema.grammar_body, gold)


def perfect(schema, text: str, data: dict[str, Any], meta: dict[str, Any]) -> Verdict:
    notes = Completion("notes", "stop", 1, 1, 0.0, "perfect")
    written = json.dumps(data, ensure_ascii=False)
    shaped = Completion(written, "stop", 1, 1, 0.0, "perfect", ((written, 0.0),))
    return judge(schema, text, notes, shaped, meta=meta)


def wrong_answers(
    record: GoldRecord, data: dict[str, Any], others: list[str], order: DateOrder | None = None
) -> list[tuple[str, Any]]:
    """(field, wrong value) pairs the text does not support: another number, a shifted day, a name, the
    day and month swapped under a stated date `order`."""
    wrong: list[tuple[str, Any]] = []
    amount = data.get("amount")
    if isinstance(amount, int | float):
        bump = 1 if str(int(amount) + 1) not in record.text else 7
        wrong.append(("amount", amount + bump))
    if data.get("date"):  # a day later, or earlier where the text writes the later day ("Sent on …")
        day = date.fromisoformat(data["date"])
        days = (day + timedelta(days=n) for n in (1, -1, 2))
        written = ValueFinder(record.text)  # no reference: only the days the text writes outright
        wrong.append(("date", next(d.isoformat() for d in days if written.date(d.isoformat()) is None)))
        swapped = safe_date(day.year, day.day, day.month) if day.day != day.month else None
        if order and swapped and ValueFinder(record.text, order=order).date(swapped.isoformat()) is None:
            wrong.append(("date", swapped.isoformat()))
    for key in NAMES:
        if data.get(key):
            other = next((o for o in others if o != data[key] and o not in record.text), None)
            if other:
                wrong.append((key, other))
    return wrong


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sets", help="comma-separated gold file names without .jsonl (default: all)")
    parser.add_argument("--wrong", action="store_true", help="also judge answers with one wrong value")
    parser.add_argument(
        "--file", type=Path, help="one gold file anywhere (examples/gold/real/...), with --schema"
    )
    parser.add_argument("--schema", help="with --file: the schema its records are judged under")
    parser.add_argument("--model", action="store_true", help="score every answer with the bundled model "
                        "and judge with confidence in force (benchmarks/judge_scored.py)")  # fmt: skip
    parser.add_argument("--limit", type=int, default=5, help="with --model: records per gold set")
    parser.add_argument("--prompt", choices=("one-pass", "gold-notes"), default="one-pass",
                        help="with --model: the one-pass prompt, or the two-pass formatting prompt "
                        "with the gold answer as the notes")  # fmt: skip
    parser.add_argument("--grounded", action="store_true", help="with --model: score under each "
                        "record's grounded grammar (tasks/grounding/candidates.py)")  # fmt: skip
    args = parser.parse_args()
    if args.model:
        from judge_scored import run  # the script's folder is on sys.path

        return run(args)
    paths = sorted(GOLD.glob("*.jsonl"))
    if args.sets:
        paths = [GOLD / f"{name}.jsonl" for name in args.sets.split(",")]
    if args.file:
        if not args.schema:
            parser.error("--file needs --schema: the schema its records are judged under")
        paths = [args.file]
    total = ok = tried = accepted = 0
    print("| gold set | records | ok | share ok | wrong values tried | wrong accepted |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    refusals, lies = [], []
    for path in paths:
        schema = load_schema(args.schema if args.file else schema_name(path))
        records = load_gold(path, schema)
        names = [r.gold.get(k) for r in records for k in NAMES if r.gold.get(k)]
        set_ok = set_tried = set_accepted = 0
        for record in records:
            data = answer(schema, record.gold)
            verdict = perfect(schema, record.text, data, record.meta)
            set_ok += verdict.status == "ok"
            if verdict.status != "ok":
                refusals.append(f"- {path.stem} {record.id} ({verdict.status}): " + "; ".join(verdict.errors))
            if not args.wrong:
                continue
            for key, value in wrong_answers(record, data, names, schema.date_order):
                set_tried += 1
                bad = perfect(schema, record.text, data | {key: value}, record.meta)
                if bad.data is not None and bad.status != "failed" and bad.data.get(key) == value:
                    set_accepted += 1
                    lies.append(f"- {path.stem} {record.id}: {key}={value!r} accepted ({bad.status})")
        total, ok, tried, accepted = (
            total + len(records),
            ok + set_ok,
            tried + set_tried,
            accepted + set_accepted,
        )
        share = set_ok / len(records) if records else 0.0
        print(f"| {path.stem} | {len(records)} | {set_ok} | {share:.1%} | {set_tried} | {set_accepted} |")
    print(f"| all | {total} | {ok} | {ok / max(total, 1):.1%} | {tried} | {accepted} |")
    print("\nNot ok (with every reason):" if refusals else "\nEvery record ok.")
    print("\n".join(refusals))
    if args.wrong:
        print("\nWrong values accepted:" if lies else "\nNo wrong value accepted.")
        print("\n".join(lies))


if __name__ == "__main__":
    main()
