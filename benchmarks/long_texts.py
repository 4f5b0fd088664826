"""Long texts read in parts and merged, against the same texts cut to fit: what each recovers.

    .venv/bin/python benchmarks/long_texts.py [--only receipt] [--judge-only]
    FORMWORK_LOCAL_MODEL=qwen2.5-coder-1.5b .venv/bin/python benchmarks/long_texts.py

The long gold documents of examples/gold/long/ (benchmarks/make_long_gold.py: a receipt of 60+
items, a statement of 30 expenses, a thread of 5 signed mails, each in English and in Chinese or
Japanese), each with its own schema (`NAME.schema.json`). Each record runs through
`extract_safely`, the function a run calls, on the configured engine (FORMWORK_* settings), twice:
read in parts (split_long_texts on) and cut to fit (off). Reported per record and way:
- parts: how many parts it was read in;
- item recall: gold items found (an extracted item matches a gold item when at least half of the
  gold item's non-null fields are equal; each gold item matches once);
- duplicates: extracted items beyond the first that match a gold item already matched, over all
  extracted items;
- header: header fields equal to the gold's, over the header fields;
- checks: whether the completeness checks passed (no `incomplete:` reason);
- status and seconds.
`--judge-only` skips the model's calls (its tokenizer still sizes the parts): each part answered as a
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

from formwork.schemas.registry import Schema, load_schema
from formwork.schemas.roles import schema_roles
from formwork.tasks.calls import ExtractOptions
from formwork.tasks.engines import open_engines
from formwork.tasks.engines.base import Completion
from formwork.tasks.extract import extract_safely
from formwork.tasks.long.completeness import INCOMPLETE
from formwork.tasks.long.merge import merge
from formwork.tasks.long.plan import part_schema, plan_parts
from formwork.tasks.settings import Settings
from formwork.tasks.validate import EMPTY_ROW, Verdict, judge

LONG = Path(__file__).resolve().parents[1] / "examples" / "gold" / "long"


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
    """Item recall, duplicates and header accuracy of `data` against `gold` (see the docstring)."""
    roles, data = schema_roles(schema.body), data or {}
    wanted = [item for name in roles.items for item in gold.get(name) or []]
    found = [item for name in roles.items for item in data.get(name) or []]
    matched: set[int] = set()
    duplicates = 0
    for item in found:
        hits = [i for i, g in enumerate(wanted) if _matches(g, item)]
        fresh = [i for i in hits if i not in matched]
        if fresh:
            matched.add(fresh[0])
        elif hits:
            duplicates += 1
    headers = [name for name in roles.headers if name in gold]
    right = sum(_same(gold[name], data.get(name)) for name in headers)
    return {
        "recall": len(matched) / len(wanted) if wanted else None,
        "duplicates": duplicates / len(found) if found else 0.0,
        "header": right / len(headers) if headers else None,
    }


def _judged(schema: Schema, text: str, data: dict[str, Any]) -> Verdict:
    written = json.dumps(data, ensure_ascii=False)
    shaped = Completion(written, "stop", 1, 1, 0.0, "perfect", ((written, 0.0),))
    return judge(schema, text, Completion("", "stop", 1, 1, 0.0, "perfect"), shaped)


def perfect_part(schema: Schema, text: str, gold: dict[str, Any]) -> Verdict:
    """A part answered as a perfect model would: each gold header value and item the judge finds
    stated in this part's own text, null and nothing for the rest."""
    reading, roles = part_schema(schema), schema_roles(schema.body)
    blank: dict[str, Any] = {name: None for name in roles.headers} | {name: [] for name in roles.items}

    def stated(data: dict[str, Any]) -> bool:
        return not [e for e in _judged(reading, text, blank | data).errors if not e.startswith(EMPTY_ROW)]

    data = dict(blank)
    for name in roles.headers:
        if gold.get(name) is not None and stated({name: gold[name]}):
            data[name] = gold[name]
    for name in roles.items:
        data[name] = [item for item in gold.get(name) or [] if stated({name: [item]})]
    return _judged(reading, text, data)


def run(args: argparse.Namespace) -> None:
    settings = Settings()
    engines = open_engines(settings)  # the judge alone still splits by the engine's tokens
    base = replace(ExtractOptions.from_settings(settings), ok_vouched=True)
    print("| document | way | parts | item recall | duplicates | header | checks | status | s |")
    print("|---|---|---:|---:|---:|---:|---|---|---:|")
    for gold_file in sorted(LONG.glob("*.jsonl")):
        if args.only and gold_file.stem not in args.only.split(","):
            continue
        schema = load_schema(LONG / f"{gold_file.stem}.schema.json")
        for line in gold_file.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            ways = ("split",) if args.judge_only else ("split", "cut")
            for way in ways:
                options = replace(base, split_long_texts=way == "split")
                started = time.perf_counter()
                if args.judge_only:
                    plan = plan_parts(row["text"], schema, engines, options)
                    judged = [(p, perfect_part(schema, p.text(row["text"]), row["gold"])) for p in plan.parts]
                    verdict, parts = (
                        merge(schema, schema_roles(schema.body), row["text"], judged).verdict,
                        len(judged),
                    )
                else:
                    outcome = extract_safely(0, row["text"], schema, engines, options)
                    verdict = outcome.verdict
                    parts = len({(c.judged or {}).get("part", {}).get("index") for c in outcome.calls}) or 1
                seconds = time.perf_counter() - started
                got = score(schema, row["gold"], verdict.data)
                checks = "failed" if any(e.startswith(INCOMPLETE) for e in verdict.errors) else "passed"
                shown = {k: "–" if v is None else f"{v:.0%}" for k, v in got.items()}
                cells = [row["id"], way, parts, *shown.values(), checks, verdict.status, f"{seconds:.0f}"]
                print("| " + " | ".join(str(cell) for cell in cells) + " |", flush=True)
                if args.verbose:
                    print("   ", verdict.errors[:6])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="comma-separated gold names (receipt, statement, thread_contacts)")
    parser.add_argument("--judge-only", action="store_true", help="perfect parts, no model")
    parser.add_argument("--verbose", action="store_true", help="print each row's first reasons")
    run(parser.parse_args())


if __name__ == "__main__":
    main()
