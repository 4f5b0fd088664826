"""The judge given perfect and wrong answers, each scored by the bundled model, with confidence in force.

    .venv/bin/python benchmarks/judge_gold.py --model [--limit 5] [--prompt one-pass] [--grounded]

Grounding refuses a value the text does not contain; confidence is what must refuse a wrong value the
text does contain (the subtotal for the total, another line of the signature for the company). So for
the first `--limit` records of each gold set, this feeds the judge:
- the gold answer (every field present, in the schema's order, as the grammar writes JSON);
- per value, the answer with that one value replaced by another the text contains: the nearest other
  number or date the record's reader proposes (`grounded_body`, the candidates grounded decoding
  chooses from), the span closest in length that neither holds nor is held by the gold, or the next
  enum label (a boolean flipped); a field without candidates (an e-mail, a free string) is skipped;
- the answers judge_gold.py --wrong builds with values the text does not contain.
Each answer is scored by teacher forcing (`LocalEngine.score`: the per-token masked logprobs the model
would have reported had it written that answer), under the schema's grammar or, with `--grounded`,
the record's own (where an answer outside it is refused, which counts as stopped). The prompt is the
one-pass prompt by default (the model reads only the text: its confidence is its own reading), or the
two-pass formatting prompt with the gold answer as the notes (`--prompt gold-notes`: how far the
formatting pass follows right notes). Each scored answer is judged at the run's conservative default
(no calibration: every value p >= 0.99, no enum or boolean passes, db/calibrations.py) and at one bound
for every value, 0 (grounding alone) and 0.5 / 0.7 / 0.9 / 0.95. A field's own `x-min-confidence`
(chat_tag's emotion) overrides both, as in a run. A perfect answer counts when `ok`; a wrong value
counts as accepted when the verdict's data still holds it (`ok`, or `partial` that kept it).
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from statistics import median
from typing import Any

from judge_gold import GOLD, NAMES, answer, schema_name, wrong_answers

from formwork.schemas.annotations import value_types
from formwork.schemas.paths import parse_path
from formwork.schemas.registry import Schema, load_schema
from formwork.tasks.calls import ExtractOptions
from formwork.tasks.confidence.policy import UNCALIBRATED
from formwork.tasks.confidence.probability import field_confidences, value_paths
from formwork.tasks.engines.base import Completion, RequestRejected
from formwork.tasks.engines.local import LocalEngine
from formwork.tasks.evaluation.gold import GoldRecord, load_gold
from formwork.tasks.evaluation.scoring import compare
from formwork.tasks.modes import single_pass_messages
from formwork.tasks.prompts import formatting_messages
from formwork.tasks.validate import judge

NEVER = 1.01  # a bound above 1: no enum or boolean passes, as uncalibrated (tasks/confidence/policy.py)
BOUNDS: dict[str, tuple[float, float]] = {"default": (UNCALIBRATED, NEVER)}
BOUNDS |= {f"{b:g}": (b, b) for b in (0.0, 0.5, 0.7, 0.9, 0.95)}
KINDS = ("number", "date", "quote", "label")
# the grammars a run would use, with grounded decoding and without
GROUNDED, PLAIN = ExtractOptions(grounded_decoding=True), ExtractOptions(grounded_decoding=False)


def value_at(data: Any, path: str) -> Any:
    for part in parse_path(path):
        if not isinstance(data, dict | list):
            return None
        data = data.get(part) if isinstance(data, dict) else data[part] if part < len(data) else None
    return data


def replaced(data: Any, path: str, value: Any) -> Any:
    copy = json.loads(json.dumps(data))
    *parents, last = parse_path(path)
    target = copy
    for part in parents:
        target = target[part]
    target[last] = value
    return copy


def nearest(kind: str, gold: Any, options: list[Any]) -> Any:
    """The wrong value hardest to tell from the gold: the closest number, day or length; the next label."""
    if kind == "number":
        return min(options, key=lambda o: abs(float(o) - float(gold)))
    if kind == "date":
        return min(options, key=lambda o: abs((date.fromisoformat(o) - date.fromisoformat(gold)).days))
    if kind == "quote":
        folded = gold.casefold()
        apart = [o for o in options if o.casefold() not in folded and folded not in o.casefold()]
        return min(apart or options, key=lambda o: abs(len(o) - len(gold)))
    return options[0]


def in_text_wrongs(schema: Schema, grounded: dict[str, Any], data: Any) -> list[tuple[str, str, Any]]:
    """(kind, path, wrong value) per value: another value the text contains, or another label."""
    original = dict(value_paths(schema.checked_body, data))
    found = []
    for path, node in value_paths(grounded, data):
        gold, first = value_at(data, path), original.get(path, {})
        if "enum" in first or value_types(first) == {"boolean"}:
            labels = first.get("enum", [True, False])
            at = labels.index(gold) if gold in labels else -1
            kind, options = "label", labels[at + 1 :] + labels[: at + 1]
        elif "enum" in node:
            kind, options = "quote", node["enum"]
            if isinstance(gold, int | float):
                kind = "number"
            elif first.get("format") == "date":
                kind = "date"
        else:
            continue
        wrong = [o for o in options if o is not None and not compare(first, gold, o)]
        if wrong:
            found.append((kind, path, nearest(kind, gold, wrong)))
    return found


def variants(schema: Schema, record: GoldRecord, names: list[str]) -> list[tuple[str, str, Any, Any]]:
    """(kind, path, value, answer): the perfect answer first, then one wrong value each."""
    data = answer(schema, record.gold)
    grounded = GROUNDED.formatting_grammar(schema, record.text, record.meta)
    rows = [("perfect", "", None, data)]
    rows += [(k, p, v, replaced(data, p, v)) for k, p, v in in_text_wrongs(schema, grounded, data)]
    rows += [("not in text", p, v, replaced(data, p, v)) for p, v in wrong_answers(record, data, names)]
    return rows


def score(engine: LocalEngine, messages: list, data: Any, grammar: dict[str, Any]) -> Completion | None:
    """The model's score of `data` under `grammar`; None when the grammar refuses it."""
    try:
        return engine.score(messages, json.dumps(data, ensure_ascii=False), grammar)
    except RequestRejected as exc:
        if "does not allow" not in exc.message:
            raise
        return None


def run(args: Any) -> None:
    engine = LocalEngine()
    paths = sorted(GOLD.glob("*.jsonl"))
    if args.sets:
        paths = [GOLD / f"{name}.jsonl" for name in args.sets.split(",")]
    tally: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])  # (set, kind, bound): hit, n
    refused: dict[str, int] = defaultdict(int)  # answers the grammar refused, by group
    pairs: dict[str, list[tuple[float, float]]] = defaultdict(list)  # kind: (gold's, wrong's confidence)
    weakest: dict[str, int] = defaultdict(int)  # the field of each perfect answer's least confidence
    with ThreadPoolExecutor(engine.max_concurrency) as pool:
        for path in paths:
            schema = load_schema(schema_name(path))
            every = load_gold(path, schema)
            names = [r.gold.get(k) for r in every for k in NAMES if r.gold.get(k)]
            print(f"{path.stem}: {min(args.limit, len(every))} records", file=sys.stderr, flush=True)
            for record in every[: args.limit]:
                notes_text = json.dumps(record.gold, ensure_ascii=False)
                if args.prompt == "gold-notes":
                    messages = formatting_messages(schema, record.text, notes_text)
                    notes = Completion(notes_text, "stop", 1, 1, 0.0, engine.model)
                else:
                    messages = single_pass_messages(schema, record.text, "one-pass")
                    notes = Completion("", "stop", 0, 0, 0.0, engine.model)
                options = GROUNDED if args.grounded else PLAIN
                grammar = options.formatting_grammar(schema, record.text, record.meta)
                rows = variants(schema, record, names)
                scored = list(pool.map(score, [engine] * len(rows), [messages] * len(rows),
                                       [row[3] for row in rows], [grammar] * len(rows)))  # fmt: skip
                gold_conf = field_confidences(schema.checked_body, rows[0][3], scored[0]) if scored[0] else {}
                if gold_conf:
                    least = min(gold_conf, key=gold_conf.__getitem__)
                    pairs["perfect"].append((gold_conf[least], 0.0))
                    weakest[least.split("[")[0]] += 1
                for (kind, where, value, data), done in zip(rows, scored, strict=True):
                    group = kind if kind in ("perfect", "not in text") else "in text"
                    if done is None:
                        refused[group] += 1
                    elif kind in KINDS and where in gold_conf:
                        wrong_conf = field_confidences(schema.checked_body, data, done).get(where, 1.0)
                        pairs[kind].append((gold_conf[where], wrong_conf))
                    for bound, (values, choices) in BOUNDS.items():
                        hit = False
                        if done is not None:
                            verdict = judge(schema, record.text, notes, done, meta=record.meta,
                                            min_confidence=values, choice_confidence=choices)  # fmt: skip
                            hit = verdict.status == "ok" if kind == "perfect" else (
                                verdict.data is not None and verdict.status != "failed"
                                and value_at(verdict.data, where) == value)  # fmt: skip
                        for name in (path.stem, "all"):
                            for k in {kind, group}:
                                tally[(name, k, bound)][0] += hit
                                tally[(name, k, bound)][1] += 1
    engine.close()
    report(tally, [p.stem for p in paths], refused, pairs, args)
    least = [g for g, _ in pairs["perfect"]]
    print(f"Perfect answers' least confidence: median {median(least):.3f}, max {max(least):.3f}; "
          f"the field that holds it: {dict(weakest)}")  # fmt: skip


def report(tally: dict, sets: list[str], refused: dict, pairs: dict, args: Any) -> None:
    def cell(name: str, kind: str, bound: str) -> str:
        hit, n = tally.get((name, kind, bound), (0, 0))
        return f"{hit}/{n}" if n else "-"

    print(f"prompt: {args.prompt}; grammar: {'grounded' if args.grounded else 'schema'}; "
          f"{args.limit} records per set")  # fmt: skip
    print("\n| gold set | bound | perfect ok | wrong in text accepted | " + " | ".join(KINDS)
          + " | wrong not in text accepted |")  # fmt: skip
    print("| --- | --- | ---: | ---: |" + " ---: |" * len(KINDS) + " ---: |")
    for name in [*sets, "all"]:
        for bound in BOUNDS:
            kinds = " | ".join(cell(name, k, bound) for k in KINDS)
            print(f"| {name} | {bound} | {cell(name, 'perfect', bound)} | {cell(name, 'in text', bound)} | "
                  f"{kinds} | {cell(name, 'not in text', bound)} |")  # fmt: skip
    print(f"\nRefused by the grammar (counted as not accepted): {dict(refused) or 'none'}")
    print("\nConfidence at the changed path, gold answer against wrong answer (median; how often lower):")
    for kind in KINDS:
        if pairs.get(kind):
            gold, wrong = zip(*pairs[kind], strict=True)
            lower = sum(w < g for g, w in pairs[kind])
            print(f"- {kind}: gold {median(gold):.3f}, wrong {median(wrong):.3f}; "
                  f"wrong lower in {lower}/{len(wrong)}")  # fmt: skip
