"""Long lists read item by item, in parts, and whole: what each recovers, and what it costs.

    .venv/bin/python benchmarks/long_texts.py [--only receipt,statement-irregular] [--ways items,parts]
    .venv/bin/python benchmarks/long_texts.py --judge-only
    FORMWORK_LOCAL_MODEL=qwen2.5-coder-1.5b .venv/bin/python benchmarks/long_texts.py
    .venv/bin/python benchmarks/long_texts.py --held-out        # the held-out documents, and only them
    .venv/bin/python benchmarks/long_texts.py --first 6 --ways items,whole   # short lists: the rule

The long gold documents of examples/gold/long/: `NAME.jsonl` (benchmarks/make_long_gold.py: a receipt
of 60+ items, a statement of 30 expenses, a thread of 5 signed mails, each in English and in Chinese or
Japanese) and `NAME-irregular.jsonl` (benchmarks/make_irregular_gold.py: lists as banks, tills and
people write them), read under `NAME.schema.json`; `NAME-held-out.jsonl` only with `--held-out`. Each
record runs through `extract_safely`, the function a run calls, on the configured engine (FORMWORK_*
settings), with its meta, in each way:
- items: item by item (`x-units` set to the kind of units the text's layout shows);
- parts: read in parts where it does not fit one prompt or one answer (`x-units: none`);
- whole: read in one prompt (split_long_texts off: cut where it does not fit).
Reported per record and way:
- pieces: units (items) or parts (parts) it was read in, and model calls;
- item recall: gold items found (an extracted item matches a gold item when at least half of the
  gold item's non-null fields are equal; items and gold items are paired by a maximum matching, each
  used once);
- duplicates: extracted items left unpaired though they match a gold item (another item took it),
  over all extracted items; extra: extracted items that match no gold item (a payment read as an
  expense);
- header: header fields equal to the gold's, over the header fields;
- checks: whether the completeness checks passed (no `incomplete:` reason); reported: where items
  were missed, whether the row says it is incomplete;
- status and seconds.
`--judge-only` skips the model's calls (its tokenizer still sizes the parts): each piece answered as a
perfect model would (the gold items and header values its own text states), through the real judge
and merge, as benchmarks/judge_gold.py does for short records.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from formwork.schemas.registry import Schema, load_checked_body, load_schema
from formwork.schemas.roles import schema_roles
from formwork.tasks.calls import ExtractOptions
from formwork.tasks.engines import open_engines
from formwork.tasks.engines.base import Completion
from formwork.tasks.extract import extract_safely
from formwork.tasks.long.completeness import INCOMPLETE
from formwork.tasks.long.itemwise import _as_part, header_schema, unit_schema
from formwork.tasks.long.merge import merge
from formwork.tasks.long.plan import part_schema, plan_parts
from formwork.tasks.long.units import find_units
from formwork.tasks.settings import Settings
from formwork.tasks.validate import EMPTY_ROW, Verdict, judge

LONG = Path(__file__).resolve().parents[1] / "examples" / "gold" / "long"
WAYS = ("items", "parts", "whole")


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float):
        return abs(a - b) < 0.005
    if isinstance(a, str) and isinstance(b, str):
        return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()
    return a == b


def _matches(gold: dict[str, Any], found: Any) -> bool:
    if not isinstance(found, dict):
        return False
    named = [k for k, v in gold.items() if v is not None]
    return sum(_same(gold[k], found.get(k)) for k in named) * 2 >= len(named) > 0


def score(schema: Schema, gold: dict[str, Any], data: dict[str, Any] | None) -> dict[str, Any]:
    """Item recall, duplicates, extra items and header accuracy of `data` against `gold`. Items are
    paired with gold items by a maximum matching (each used once), so an item that could stand for
    two gold items does not take the one a later item needs."""
    roles, data = schema_roles(schema.body), data or {}
    wanted = [item for name in roles.items for item in gold.get(name) or []]
    found = [item for name in roles.items for item in data.get(name) or []]
    hits = [[i for i, g in enumerate(wanted) if _matches(g, item)] for item in found]
    owner: dict[int, int] = {}  # gold item -> the found item paired with it

    def pair(item: int, seen: set[int]) -> bool:  # an augmenting path (Kuhn's algorithm)
        for gold_item in hits[item]:
            if gold_item not in seen:
                seen.add(gold_item)
                if gold_item not in owner or pair(owner[gold_item], seen):
                    owner[gold_item] = item
                    return True
        return False

    paired = {item for item in range(len(found)) if pair(item, set())}
    duplicates = sum(1 for item in range(len(found)) if item not in paired and hits[item])
    extra = sum(1 for item in range(len(found)) if not hits[item])
    headers = [name for name in roles.headers if name in gold]
    right = sum(_same(gold[name], data.get(name)) for name in headers)
    return {
        "recall": len(owner) / len(wanted) if wanted else None,
        "duplicates": duplicates / len(found) if found else 0.0,
        "extra": extra,
        "header": right / len(headers) if headers else None,
    }


def _judged(schema: Schema, text: str, data: dict[str, Any], meta: dict[str, Any] | None) -> Verdict:
    written = json.dumps(data, ensure_ascii=False)
    shaped = Completion(written, "stop", 1, 1, 0.0, "perfect", ((written, 0.0),))
    return judge(schema, text, Completion("", "stop", 1, 1, 0.0, "perfect"), shaped, meta=meta)


def _stated(reading: Schema, text: str, data: dict[str, Any], meta: dict[str, Any] | None) -> bool:
    return not [e for e in _judged(reading, text, data, meta).errors if not e.startswith(EMPTY_ROW)]


def _unit_item(
    reading: Schema, text: str, items: list[dict], meta: dict[str, Any] | None, keyed: bool
) -> dict | None:
    """What a perfect model gives for one unit: the first gold item it states whole, else, where items
    are keyed (the same person may write twice), the gold item of which it states the most fields (a
    thread's second message signed with a first name), else null."""
    name = next(iter(reading.properties))
    whole = next((i for i in items if _stated(reading, text, {name: i}, meta)), None)
    if whole is not None or not keyed:
        return whole
    best: dict | None = None
    for item in items:
        blank = dict.fromkeys(item)
        said = {
            k: v
            for k, v in item.items()
            if v is not None and _stated(reading, text, {name: blank | {k: v}}, meta)
        }
        if said and (best is None or len(said) > sum(v is not None for v in best.values())):
            best = blank | said
    return best


def perfect_piece(
    schema: Schema, reading: Schema, text: str, gold: dict[str, Any], meta: dict[str, Any] | None
) -> Verdict:
    """A piece answered as a perfect model would under `reading`: each gold header value and item the
    judge finds stated in this piece's own text, null and nothing for the rest (a unit: the first
    gold item its text states, or null)."""
    listed = {n for n, node in reading.properties.items() if "array" in json.dumps(node.get("type"))}
    data: dict[str, Any] = {name: [] if name in listed else None for name in reading.properties}
    if not listed and len(data) == 1 and (name := next(iter(data))) in gold and isinstance(gold[name], list):
        keyed = bool(schema_roles(schema.body).keys)
        return _judged(reading, text, {name: _unit_item(reading, text, gold[name], meta, keyed)}, meta)
    for name in data:
        if name in listed:
            data[name] = [i for i in gold.get(name) or [] if _stated(reading, text, data | {name: [i]}, meta)]
        elif gold.get(name) is not None and _stated(reading, text, data | {name: gold[name]}, meta):
            data[name] = gold[name]
    return _judged(reading, text, data, meta)


def _perfect(way: str, schema: Schema, row: dict[str, Any], engines: Any, options: ExtractOptions) -> tuple:
    """The merged verdict and the pieces of `row` read the way `way` says, each piece answered perfectly."""
    text, gold, meta, roles = row["text"], row["gold"], row.get("meta"), schema_roles(schema.body)
    if way == "items":
        layout = find_units(text)
        assert layout.kind is not None
        name, reading = roles.items[0], unit_schema(schema, layout.kind)
        each = layout.reading_meta(meta, text, options.reference_date_field)  # as the run reads each unit
        pieces = [
            (u, _as_part(perfect_piece(schema, reading, u.text(text), gold, each), name))
            for u in layout.units
        ]
        names = [f"unit {i + 1} of {len(pieces)}" for i in range(len(pieces))]
        if roles.headers:
            shown = layout.header.text(text)
            pieces.insert(0, (layout.header, perfect_piece(schema, header_schema(schema), shown, gold, meta)))
            names.insert(0, "the header text")
        return merge(schema, roles, text, pieces, names).verdict, len(layout.units), len(pieces)
    plan = plan_parts(text, schema, engines, options)
    each = find_units(text).reading_meta(meta, text, options.reference_date_field)  # a part, or the whole
    judged = [(p, perfect_piece(schema, part_schema(schema), p.text(text), gold, each)) for p in plan.parts]
    return merge(schema, roles, text, judged).verdict, len(judged), len(judged)


def _way(schema: Schema, way: str, text: str) -> Schema | None:
    """The schema as the way `way` reads it: its items field's `x-units` set (None: no units found)."""
    name = schema_roles(schema.body).items[0]
    body = json.loads(json.dumps(schema.body))
    if way == "items":
        kind = find_units(text).kind
        if kind is None:
            return None
        body["properties"][name]["x-units"] = kind
    else:
        body["properties"][name]["x-units"] = "none"
    return load_checked_body(body, f"{schema.name}-{way}")


def documents(args: argparse.Namespace) -> list[tuple[Schema, dict[str, Any]]]:
    found = []
    for gold_file in sorted(LONG.glob("*.jsonl")):
        held_out = gold_file.stem.endswith("-held-out")
        if held_out != args.held_out or (args.only and gold_file.stem not in args.only.split(",")):
            continue
        schema = load_schema(LONG / f"{gold_file.stem.split('-')[0]}.schema.json")
        rows = [json.loads(line) for line in gold_file.read_text(encoding="utf-8").splitlines()]
        found += [(schema, first(row, args.first) if args.first else row) for row in rows]
    return found


def first(row: dict[str, Any], count: int) -> dict[str, Any]:
    """The document shortened to its first `count` units (what stands before and after the list kept),
    with the gold items those units state: a short list, to measure where reading item by item pays."""
    text, gold = row["text"], row["gold"]
    units = find_units(text).units
    name = next(k for k, v in gold.items() if isinstance(v, list))
    kept, at = [], 0
    for item in gold[name]:  # each gold item in the next unit that writes it (its description, its address)
        written = item.get("description") or item.get("email")
        found = next((i for i in range(at, len(units)) if written in units[i].text(text)), len(units))
        if found < count:
            kept.append(item)
        at = found + (item.get("description") is not None)  # a person may write again
    short = text[: units[count - 1].end] + text[units[-1].end :]
    return row | {"id": f"{row['id']}-first-{count}", "text": short, "gold": gold | {name: kept}}


def run(args: argparse.Namespace) -> None:
    settings = Settings()
    engines = open_engines(settings)  # the judge alone still splits by the engine's tokens
    base = replace(ExtractOptions.from_settings(settings), policy=None)
    columns = (
        "document | way | pieces | calls | item recall | duplicates | extra | header | checks | reported"
    )
    print(f"| {columns} | status | s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|---|---|---:|")
    for schema, row in documents(args):
        for way in args.ways.split(","):
            reading = _way(schema, way, row["text"])
            if reading is None:
                continue
            options = replace(base, split_long_texts=way != "whole")
            started = time.perf_counter()
            if args.judge_only:
                verdict, pieces, calls = _perfect(way, reading, row, engines, options)
            else:
                outcome = extract_safely(0, row["text"], reading, engines, options, row.get("meta"))
                verdict, calls = outcome.verdict, len(outcome.calls)
                key = "unit" if way == "items" else "part"
                read = {json.dumps(c.judged[key]["span"]) for c in outcome.calls if (c.judged or {}).get(key)}
                pieces = len(read) or 1  # a unit read twice (a second reading) is one piece
            seconds = time.perf_counter() - started
            got = score(schema, row["gold"], verdict.data)
            incomplete = any(e.startswith(INCOMPLETE) for e in verdict.errors)
            missed = got["recall"] is not None and got["recall"] < 1
            reported = ("yes" if incomplete else "NO") if missed else "–"
            shown = {
                k: "–" if v is None else (str(v) if k == "extra" else f"{v:.0%}") for k, v in got.items()
            }
            checks = "failed" if incomplete else "passed"
            cells = [
                row["id"],
                way,
                pieces,
                calls,
                *shown.values(),
                checks,
                reported,
                verdict.status,
                f"{seconds:.0f}",
            ]
            print("| " + " | ".join(str(cell) for cell in cells) + " |", flush=True)
            if args.verbose:
                print("   ", [e[:160] for e in verdict.errors[:6]], flush=True)
            if args.dump and not args.judge_only:
                calls = [{"judged": c.judged, "pass": c.pass_name, "output": c.output} for c in outcome.calls]
                shown = {
                    "id": row["id"],
                    "way": way,
                    "data": verdict.data,
                    "errors": verdict.errors,
                    "calls": calls,
                }
                with Path(args.dump).open("a", encoding="utf-8") as out:
                    out.write(json.dumps(shown, ensure_ascii=False) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="comma-separated gold files (receipt, statement-irregular, ...)")
    parser.add_argument("--ways", default=",".join(WAYS), help="comma-separated: items, parts, whole")
    parser.add_argument("--held-out", action="store_true", help="the held-out documents, and only them")
    parser.add_argument("--judge-only", action="store_true", help="perfect pieces, no model")
    parser.add_argument("--verbose", action="store_true", help="print each row's first reasons")
    parser.add_argument("--dump", help="append each row's data, reasons and calls to this JSONL file")
    parser.add_argument("--first", type=int, help="each document cut to its first N units: a short list")
    run(parser.parse_args())


if __name__ == "__main__":
    main()
