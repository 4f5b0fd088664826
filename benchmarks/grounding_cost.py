"""Measure what grounding costs per record against the model's time for the same record.

    .venv/bin/python benchmarks/grounding_cost.py [--repeats 20] [--no-model]

One 6,000-character expense text (a long e-mail thread with the expense near the end). Grounding is
timed on three outputs: every value present as written (the cheap path), every value written another
way (normalised numbers, a written date, a fuzzy name), and every value absent (the slowest path: the
full fuzzy alignment and the dateparser search run and find nothing). The model time is one real
record through both passes on the embedded engine (SmolLM2-135M), measured in the same process, so
the two compare as a ratio.
"""

from __future__ import annotations

import argparse
import json
import time

from formwork.schemas.registry import load_schema
from formwork.tasks.engines.base import Completion
from formwork.tasks.validate import judge

FILLER = (
    "Hi all, following up on the planning call: the venue needs the final head count by Thursday, "
    "and the catering menu still has two open options. Please reply in this thread. "
)
TAIL = (
    "Expense for the records: lunch with the Globex team on March 14th 2024, paid 1.234,50 EUR by "
    "Maria-José Fernández, billed to project Apollo Relaunch. Thanks!"
)
TEXT = (FILLER * 60)[: 6000 - len(TAIL) - 1] + "\n" + TAIL
OUTPUTS = {
    "as written": {"who": "Maria-José Fernández", "date": "2024-03-14", "amount": 1234.5, "currency": "EUR",
                   "category": "meals", "project": "Apollo Relaunch"},
    "written another way": {"who": "Maria Jose Fernandes", "date": "2024-03-14", "amount": 1234.50,
                            "currency": "EUR", "category": "meals", "project": "apollo relaunch"},
    "absent": {"who": "Robert Smith", "date": "2018-12-25", "amount": 12, "currency": "EUR",
               "category": "meals", "project": "Zeus Upgrade"},
}  # fmt: skip


def time_grounding(schema, output: dict, repeats: int) -> tuple[float, str]:
    notes = Completion("notes", "stop", 1, 1, 0.0, "bench")
    shaped = Completion(json.dumps(output, ensure_ascii=False), "stop", 1, 1, 0.0, "bench")
    verdict = judge(schema, TEXT, notes, shaped)  # warm-up: imports, dateparser's language data
    start = time.perf_counter()
    for _ in range(repeats):
        judge(schema, TEXT, notes, shaped)
    kinds = ", ".join(f"{e['path']}={e['kind']}" for e in verdict.evidence if e["rule"] != "none")
    return (time.perf_counter() - start) / repeats, f"{verdict.status}: {kinds}"


def time_model(schema) -> float:
    from formwork.tasks.calls import ExtractOptions
    from formwork.tasks.engines import open_engines
    from formwork.tasks.extract import extract_record
    from formwork.tasks.settings import Settings

    engine, formatter = open_engines(Settings(engine="local"))
    outcome = extract_record(1, TEXT, schema, engine, formatter, ExtractOptions(max_attempts=1))
    return sum(call.duration_s for call in outcome.calls)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--no-model", action="store_true", help="time grounding only")
    args = parser.parse_args()
    schema = load_schema("expense")
    print(f"text: {len(TEXT)} characters; judge (validation + grounding) per record, {args.repeats} repeats")
    print("| output | ms per record | verdict |\n| --- | ---: | --- |")
    worst = 0.0
    for name, output in OUTPUTS.items():
        seconds, what = time_grounding(schema, output, args.repeats)
        worst = max(worst, seconds)
        print(f"| {name} | {seconds * 1000:.1f} | {what} |")
    if not args.no_model:
        model_s = time_model(schema)
        print(f"\nmodel time for the same record (both passes, one attempt): {model_s:.1f} s")
        print(f"slowest grounding / model time: {worst / model_s:.2%}")


if __name__ == "__main__":
    main()
