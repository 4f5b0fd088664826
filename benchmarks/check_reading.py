"""A second, differently framed reading (issue 53.4): each value read one-pass is shown back with the
text and the model is asked to confirm it, field by field; does its "yes" rank right above wrong better
than the value's own probability, and at what cost?

    .venv/bin/python benchmarks/check_reading.py --gold examples/gold/expense.jsonl --schema expense \\
        --model ~/.cache/formwork/models/qwen2.5-coder-1.5b.gguf [--half calibration] [--limit 40]

Per record: the one-pass reading as a run does it (`extract_record`, grounded grammar, judged), then one
check call that opens like every reading (tasks.prompts.reading_messages: the text and the field guide,
so the engine's slots hold them from the first call) and asks, under a grammar of `yes`/`no` per field,
whether each value (a null: that the text gives none) is what the text states. A field's check is the
probability of `yes` (one minus the chosen `no`'s). Per field: AUROC of the value's probability, its
share among the values (p / (1 - p_null)), the check, and their product; then seconds per record of the
reading and of the check, and the share of the check's prompt the cache held. Top-level fields only.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from readings_signals import auroc  # benchmarks/readings_signals.py, beside this script

from formwork.schemas.registry import Schema, load_schema
from formwork.tasks.calls import ExtractOptions
from formwork.tasks.confidence.probability import field_confidences
from formwork.tasks.confidence.readings import PathReading
from formwork.tasks.engines.base import Sampling
from formwork.tasks.engines.local import LocalEngine
from formwork.tasks.evaluation.gold import GoldRecord, load_gold
from formwork.tasks.evaluation.scoring import compare
from formwork.tasks.extract import extract_record
from formwork.tasks.prompts import reading_messages

ANSWERS = ("yes", "no")


def check_body(schema: Schema) -> dict[str, Any]:
    """The check's grammar: one `yes`/`no` per top-level field, in the schema's order."""
    keys = list(schema.properties)
    return {"type": "object", "properties": {k: {"enum": list(ANSWERS)} for k in keys},
            "required": keys, "additionalProperties": False}  # fmt: skip


def check_ask(data: dict[str, Any]) -> str:
    """Shows the first reading's values and asks for a verdict on each."""
    shown = "\n".join(f"- {key}: {json.dumps(value, ensure_ascii=False)}" for key, value in data.items())
    return (
        "Another reader found these values:\n"
        f"{shown}\n\n"
        "Check each one against the text and the field guide. Answer with one JSON object with the same "
        'keys, each "yes" when the value is exactly what the text states for that field (for null: the '
        'text gives no such value) and "no" when it is wrong, belongs to another field, or the text '
        "does not say it."
    )


def field_ask(key: str, node: dict[str, Any]) -> str:
    """Asks for one field alone, as a question: the other fields' answers cannot lead it."""
    return (
        f"Question: what does the text give for `{key}` ({node.get('description', '')})? Answer with one "
        f'JSON object with the one key "{key}". Use null when the text does not say.'
    )


def per_field(schema: Schema, engine: LocalEngine, text: str, meta: dict[str, Any],
              data: dict[str, Any]) -> tuple[dict[str, float], int]:  # fmt: skip
    """Per field, a second reading's probability of the first reading's value: its own where it gave the
    same value, else what it left for every value but its own (an upper bound); and the prompt tokens."""
    grounded = ExtractOptions().formatting_grammar(schema, text, meta)
    found, prompt = {}, 0
    for key, node in schema.properties.items():
        body = {"type": "object", "properties": {key: grounded["properties"][key]}, "required": [key],
                "additionalProperties": False}  # fmt: skip
        messages = reading_messages(schema, text, field_ask(key, node))
        done = engine.complete(messages, Sampling(max_tokens=64), body)
        prompt += done.prompt_tokens
        try:
            answer = json.loads(done.text)
        except json.JSONDecodeError:
            continue
        chosen = field_confidences(body, answer, done) or field_confidences(body, answer, done, nulls=True)
        if chosen:
            p = next(iter(chosen.values()))
            found[key] = p if compare(node, data.get(key), answer.get(key), key) else 1.0 - p
    return found, prompt


def p_yes(body: dict[str, Any], answer: dict[str, Any], done: Any) -> dict[str, float]:
    """Per field, the probability the check says `yes` (fields whose answer has no probability: left out)."""
    found = {}
    for path, p in field_confidences(body, answer, done).items():
        key = path.lstrip("/").split("/")[0]
        found[key] = p if answer.get(key) == "yes" else 1 - p
    return found


def _load(path: Path | None) -> dict[str, dict[str, Any]]:
    if path is None or not path.exists():
        return {}
    lines = path.read_text(encoding="utf-8").splitlines()
    return {row["id"]: row for row in map(json.loads, lines)}


def _keep(path: Path | None, key: str, reading: dict[str, Any]) -> None:
    if path is not None:
        with path.open("a", encoding="utf-8") as out:
            out.write(json.dumps({"id": key, **reading}, ensure_ascii=False) + "\n")


@dataclass
class Cost:
    """Seconds and prompt tokens of the readings and of the checks, summed over the records."""

    reading_s: float = 0.0
    check_s: float = 0.0
    prompt: int = 0
    reused: int = 0


def check(framing: str, schema: Schema, engine: LocalEngine, record: GoldRecord, data: dict[str, Any],
          cost: Cost) -> dict[str, float]:  # fmt: skip
    """Per field, the check's probability that the first reading's value is right."""
    before, started = engine.timings.reused_tokens, time.perf_counter()
    if framing == "per-field":
        checks, asked = per_field(schema, engine, record.text, record.meta, data)
    else:
        body = check_body(schema)
        messages = reading_messages(schema, record.text, check_ask(data))
        done = engine.complete(messages, Sampling(max_tokens=16 * len(body["properties"]) + 16), body)
        checks, asked = p_yes(body, json.loads(done.text), done), done.prompt_tokens
    cost.check_s += time.perf_counter() - started
    cost.prompt += asked
    cost.reused += engine.timings.reused_tokens - before
    return checks


def signals(schema: Schema, record: GoldRecord, values: list[dict[str, Any]],
            checks: dict[str, float]) -> Iterator[dict[str, Any]]:  # fmt: skip
    """One row per top-level field the reading gave a probability and the check a verdict."""
    by_path = {v["path"].lstrip("/"): v for v in values}
    for key, node in schema.properties.items():
        judged = by_path.get(key)
        if judged is None or key not in checks or judged.get("confidence") is None:
            continue
        value, p = judged["value"], judged["confidence"]
        reading = PathReading(value, p, judged["verdict"], "", null=judged.get("p_null"))
        share = p if (among := reading.among_values) is None else among  # a null, or no p_null: its p
        yes = checks[key]
        yield {"id": record.id, "field": key, "value": value,
               "right": compare(node, record.gold.get(key), value, key),
               "p": p, "share": share, "check": yes,
               "p x check": p * yes, "share x check": share * yes}  # fmt: skip


def report(rows: list[dict[str, Any]]) -> str:
    """AUROC per field and signal, over values and nulls, then over values alone."""
    names = ("p", "share", "check", "p x check", "share x check")
    lines = [f"| field | values | right | {' | '.join(names)} |", "| --- |" + " ---: |" * (2 + len(names))]
    fields = dict.fromkeys(r["field"] for r in rows)
    for field, only_values in [(f, v) for f in [*fields, "all"] for v in (False, True)]:
        kept = [r for r in rows if field in ("all", r["field"]) and not (only_values and r["value"] is None)]
        found = [auroc([r[n] for r in kept], [r["right"] for r in kept]) for n in names]
        shown = " | ".join("-" if a is None else f"{a:.3f}" for a in found)
        label = f"{field} (values)" if only_values else field
        lines.append(f"| {label} | {len(kept)} | {sum(r['right'] for r in kept)} | {shown} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gold", required=True)
    parser.add_argument("--schema", required=True)
    parser.add_argument("--model", type=Path, required=True, help="a GGUF file")
    parser.add_argument("--half", choices=("calibration", "verification"), default=None)
    parser.add_argument("--limit", type=int, default=40)
    parser.add_argument("--framing", choices=("confirm", "per-field"), default="confirm",
                        help="confirm: the values shown back, yes or no per field; per-field: each field "
                             "asked again alone, as a question")  # fmt: skip
    parser.add_argument("--out", type=Path, default=None, help="write each value's signals here (JSON lines)")
    parser.add_argument("--readings", type=Path, default=None,
                        help="keep the one-pass readings here (JSON lines) and reuse them when the file "
                             "exists, so another framing of the check costs only its calls")  # fmt: skip
    args = parser.parse_args()
    schema = load_schema(args.schema)
    records = load_gold([args.gold], schema, limit=args.limit, half=args.half)
    engine, options, cost = LocalEngine(args.model), ExtractOptions(mode="one-pass"), Cost()
    kept, rows = _load(args.readings), []
    for number, record in enumerate(records):
        if record.id not in kept:
            started = time.perf_counter()
            outcome = extract_record(number, record.text, schema, engine, engine, options, meta=record.meta)
            cost.reading_s += time.perf_counter() - started
            kept[record.id] = {"data": outcome.verdict.data, "values": outcome.verdict.values}
            _keep(args.readings, record.id, kept[record.id])
        if isinstance(data := kept[record.id]["data"], dict):
            checks = check(args.framing, schema, engine, record, data, cost)
            rows += signals(schema, record, kept[record.id]["values"], checks)
        print(f"{number + 1}/{len(records)} {record.id}", flush=True)
    engine.close()
    if args.out:
        args.out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    count = max(1, len(records))
    print(f"\n{engine.model}, {len(records)} records of {args.gold} ({args.half or 'both halves'}), "
          f"check {args.framing}\nseconds per record: reading {cost.reading_s / count:.1f} (0: kept from "
          f"--readings), check {cost.check_s / count:.1f}; check prompt tokens the cache held: "
          f"{cost.reused / max(cost.prompt, 1):.0%}\n\n{report(rows)}")  # fmt: skip


if __name__ == "__main__":
    main()
