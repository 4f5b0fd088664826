"""A long list read item by item: each unit on its own, the header once, merged with spans in the whole.

Apart from any model first, as the judge and merge are measured: each unit answered as a perfect model
would (the gold item it states, or null), through the real judge and merge. Then the real bundled
model reads a statement unit by unit through the real flow and SQLite. A scripted engine stands in
only where a real model cannot be made to fail on cue: a unit it skips, a unit the engine fails.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from formwork.db.models import ModelCall, Result
from formwork.db.session import session_factory
from formwork.flows.batch_extract import batch_extract
from formwork.schemas.registry import load_checked_body, load_schema
from formwork.schemas.roles import schema_roles
from formwork.tasks.calls import ExtractOptions, Outcome
from formwork.tasks.engines.base import Completion, EngineUnavailable
from formwork.tasks.extract import extract_safely
from formwork.tasks.long.completeness import INCOMPLETE
from formwork.tasks.long.examples import kept, nearest_example, not_again, shown_first
from formwork.tasks.long.itemwise import _as_part, header_schema, unit_messages, unit_schema
from formwork.tasks.long.merge import merge
from formwork.tasks.long.units import Layout, find_units
from formwork.tasks.validate import Verdict, judge

LONG_GOLD = Path(__file__).resolve().parents[1] / "examples" / "gold" / "long"
STATEMENT = load_schema(LONG_GOLD / "statement.schema.json")
ROW = json.loads((LONG_GOLD / "statement-irregular.jsonl").read_text(encoding="utf-8").splitlines()[0])
TEXT, GOLD, META = ROW["text"], ROW["gold"], ROW["meta"]
LAYOUT = find_units(TEXT)
HEADER = {name: GOLD[name] for name in ("holder", "currency", "total")}


def answers(layout: Layout = LAYOUT, text: str = TEXT) -> list[dict[str, Any] | None]:
    """What a perfect model gives each unit: the next gold expense its line states, else null (a
    payment, a refund, a pending line)."""
    found, at = [], 0
    for unit in layout.units:
        shown = unit.text(text)
        expense = GOLD["expenses"][at] if at < len(GOLD["expenses"]) else None
        said = (
            expense is not None and expense["description"] in shown and f"{expense['amount']:,.2f}" in shown
        )
        found.append(expense if said else None)
        at += said
    return found


def written(reading: Any, text: str, data: dict[str, Any]) -> Verdict:
    shown = json.dumps(data, ensure_ascii=False)
    done = Completion(shown, "stop", 1, 1, 0.0, "perfect", ((shown, 0.0),))
    return judge(reading, text, Completion("", "stop", 1, 1, 0.0, "perfect"), done, meta=META)


def pieces(items: list[dict[str, Any] | None]) -> tuple[list, list[str]]:
    reading = unit_schema(STATEMENT, "lines")
    units = [
        (unit, _as_part(written(reading, unit.text(TEXT), {"expenses": item}), "expenses"))
        for unit, item in zip(LAYOUT.units, items, strict=True)
    ]
    header = written(header_schema(STATEMENT), LAYOUT.header.text(TEXT), HEADER)
    names = ["the header text", *(f"unit {i + 1} of {len(units)}" for i in range(len(units)))]
    return [(LAYOUT.header, header), *units], names


def test_perfect_units_merge_into_the_gold_row_with_spans_in_the_whole_text() -> None:
    items = answers()
    assert sum(item is None for item in items) == 5, "a payment, a refund and three pending lines"
    merged = merge(STATEMENT, schema_roles(STATEMENT.body), TEXT, *pieces(items)).verdict
    assert merged.status == "ok", merged.errors
    assert merged.data == GOLD
    quoted = [row for row in merged.evidence if row["quote"] and row["spans"]]
    assert {row["path"] for row in quoted} >= {
        "holder",
        "expenses[0].description",
        "expenses[23].description",
    }
    assert all(any(TEXT[s:e] == row["quote"] for s, e in row["spans"]) for row in quoted), "in the whole"


def test_a_wrong_unit_or_a_unit_read_as_no_item_never_makes_the_row_ok() -> None:
    items = answers()
    wrong = dict(items[2] or {}, amount=99.99)  # the text never states it
    parts, names = pieces([*items[:2], wrong, *items[3:]])
    merged = merge(STATEMENT, schema_roles(STATEMENT.body), TEXT, parts, names).verdict
    assert merged.status == "partial" and 99.99 not in [e["amount"] for e in merged.data["expenses"]]
    assert any("99.99" in e and e.endswith("(unit 3 of 29)") for e in merged.errors), merged.errors
    parts, names = pieces([*items[:2], None, *items[3:]])  # an expense read as none: the total says so
    merged = merge(STATEMENT, schema_roles(STATEMENT.body), TEXT, parts, names).verdict
    assert merged.status == "partial" and len(merged.data["expenses"]) == 23
    assert any(e.startswith(INCOMPLETE) and "add up to" in e for e in merged.errors)


class Lister:
    """An engine that answers each unit with its perfect answer, except one it skips (null) or fails
    on: a real model cannot be made to skip, or its engine to fail, on a chosen line."""

    model, context_window = "scripted", 8192

    def __init__(
        self,
        skipped: int | None = None,
        failing: int | None = None,
        header: dict = HEADER,
        money_in: bool = False,
    ) -> None:
        self.skipped, self.failing, self.header, self.max_concurrency, self.units = (
            skipped,
            failing,
            header,
            4,
            0,
        )
        self.by_line = {unit.text(TEXT): item for unit, item in zip(LAYOUT.units, answers(), strict=True)}
        if money_in:  # as the 1.5B read a statement's credits: each an expense of its amount
            self.by_line |= {
                unit.text(TEXT): item for unit, item in zip(LAYOUT.units, MONEY_IN, strict=False)
            }

    def count_tokens(self, text: str) -> int:
        return len(text)

    def complete(self, messages, sampling, schema=None) -> Completion:
        prompt = messages[-1]["content"]
        if schema is None:
            return Completion("the header as stated", "stop", 1, 1, 0.0, self.model)
        if "The line:\n" not in prompt:  # the header text
            shown = json.dumps(self.header)
        else:
            line = prompt.split("The line:\n", 1)[1]
            index = [unit.text(TEXT) for unit in LAYOUT.units].index(line)
            self.units += 1
            if index == self.failing:
                raise EngineUnavailable("the server went away")
            shown = json.dumps({"expenses": None if index == self.skipped else self.by_line[line]})
        return Completion(shown, "stop", 1, 1, 0.0, self.model, ((shown, 0.0),))


def test_a_unit_read_as_no_item_is_named_where_the_items_do_not_add_up() -> None:
    engine = Lister(skipped=6)  # 10 May SHELL ISLINGTON 4432: 61.20 missing from the total
    outcome = extract_safely(1, TEXT, STATEMENT, (engine, engine), ExtractOptions(max_attempts=1), META)
    assert engine.units == len(LAYOUT.units) == 29, "every unit read once"
    units = [c.judged["unit"] for c in outcome.calls if "unit" in (c.judged or {})]
    assert sorted(u["index"] for u in units) == list(range(1, 30)) and all(u["of"] == 29 for u in units)
    assert [c for c in outcome.calls if "header" in (c.judged or {})], "the header read is stored too"
    assert outcome.verdict.status == "partial"
    (named,) = [e for e in outcome.verdict.errors if "units gave no item" in e]
    assert named.startswith(f"{INCOMPLETE} 6 units gave no item: unit 1 of 29 ('07 May   PAYMENT RECEIVED")
    assert "unit 7 of 29 ('10 May   SHELL ISLINGTON 4432" in named, "the skipped one with the others"


def test_units_read_as_no_item_are_vouched_for_by_the_total_alone() -> None:
    engine = Lister()
    outcome = extract_safely(1, TEXT, STATEMENT, (engine, engine), ExtractOptions(max_attempts=1), META)
    assert outcome.verdict.status == "ok" and outcome.verdict.data == GOLD, "the total adds up"
    engine = Lister(header=HEADER | {"total": None})  # no total read: nothing vouches for the five
    outcome = extract_safely(1, TEXT, STATEMENT, (engine, engine), ExtractOptions(max_attempts=1), META)
    assert outcome.verdict.status == "partial"
    assert any(
        e.startswith(f"{INCOMPLETE} 5 units gave no item: unit 1 of 29") for e in outcome.verdict.errors
    )


MONEY_IN = [
    {"date": "2024-05-07", "description": "PAYMENT RECEIVED - THANK YOU", "amount": 1250.0},
    {"date": "2024-05-15", "description": "REFUND AMAZON.CO.UK*2K4LL91", "amount": 23.99},
]  # the first two units: the lines under "PAYMENTS AND CREDITS"


def test_money_in_read_as_an_item_is_left_out_only_where_the_rest_adds_up_to_the_total() -> None:
    assert [unit.credit for unit in LAYOUT.units[:3]] == [True, True, False]
    engine = Lister(money_in=True)
    outcome = extract_safely(1, TEXT, STATEMENT, (engine, engine), ExtractOptions(max_attempts=1), META)
    assert outcome.verdict.status == "ok" and outcome.verdict.data == GOLD, outcome.verdict.errors
    left_out = [
        c.judged["unit"]["index"] for c in outcome.calls if "left_out" in (c.judged or {}).get("unit", {})
    ]
    assert left_out == [1, 2], "each credit's call says it was left out, and why"
    engine = Lister(
        money_in=True, header=HEADER | {"total": None}
    )  # no total: nothing says they are no items
    outcome = extract_safely(1, TEXT, STATEMENT, (engine, engine), ExtractOptions(max_attempts=1), META)
    assert outcome.verdict.data["expenses"][:2] == MONEY_IN and outcome.verdict.status == "partial"


def test_a_unit_the_engine_fails_on_retries_the_whole_record() -> None:
    engine = Lister(failing=7)
    outcome = extract_safely(1, TEXT, STATEMENT, (engine, engine), ExtractOptions(max_attempts=1), META)
    assert outcome.verdict.status == "failed" and outcome.retryable and outcome.queueable
    assert any("the server went away" in e for e in outcome.verdict.errors)


@pytest.mark.slow
def test_the_embedded_model_reads_a_statement_line_by_line_through_the_flow(
    prefect_harness, local_engine, write_jsonl, db_url, monkeypatch
) -> None:
    monkeypatch.setenv("FORMWORK_MAX_ATTEMPTS", "1")
    monkeypatch.setenv("FORMWORK_REASONING_MAX_TOKENS", "32")
    lines = [f"2024-05-{d:02d}  Cafe Bellecour {d}  {d + 0.5:.2f} EUR" for d in range(1, 11)]
    text = "\n".join(["Card statement, May 2024. Card holder: Marie Dubois", *lines, "Total: 60.00 EUR"])
    schema = str(LONG_GOLD / "statement.schema.json")
    batch_extract(str(write_jsonl([{"id": "statement", "text": text}])), schema, db_url=db_url)
    with session_factory(db_url)() as session:
        result = session.scalars(select(Result)).one()
        calls = session.scalars(select(ModelCall).order_by(ModelCall.id)).all()
    units = [c.judged["unit"] for c in calls if "unit" in (c.judged or {})]
    assert sorted(u["index"] for u in units) == list(range(1, 11)), "one call a line, each stored"
    assert all(text[u["span"][0] : u["span"][1]] == lines[u["index"] - 1] for u in units)
    headers = [c for c in calls if "header" in (c.judged or {})]
    assert [c.pass_name for c in headers] == ["formatting"] and len(calls) == 11, "the header in one call too"
    for row in result.evidence or []:
        if row["quote"] and row["spans"] and row["kind"] in ("exact", "fuzzy"):
            assert any(text[s:e].lower() == row["quote"].lower() for s, e in row["spans"]), row
    assert result.status != "ok" or len(result.data["expenses"]) == 10


@pytest.mark.slow
def test_units_are_decoded_together_and_share_their_prompts_prefix(local_engine) -> None:
    lines = [f"2024-05-{d:02d}  Cafe Bellecour {d}  {d + 0.5:.2f} EUR" for d in range(1, 13)]
    text = "\n".join(["Card statement, May 2024. Card holder: Marie Dubois", *lines])
    layout = find_units(text)
    reading = unit_schema(STATEMENT, "lines")
    first, second = (
        local_engine.prompt_tokens(unit_messages(reading, "lines", u.context, u.text(text)))
        for u in layout.units[:2]
    )
    shared = next(i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b)
    before = replace(local_engine.timings)
    extract_safely(1, text, STATEMENT, (local_engine, local_engine), ExtractOptions(max_attempts=1))
    after = local_engine.timings
    steps, tokens = after.steps - before.steps, after.tokens - before.tokens
    assert tokens > 1.5 * steps, "several units share each llama.cpp step"
    slots = local_engine.max_concurrency
    assert after.reused_tokens - before.reused_tokens >= (len(layout.units) - slots) * shared > 0, (
        "each unit's prompt finds what all units share already evaluated in its slot"
    )


def test_a_person_who_writes_twice_is_one_contact_with_what_either_message_gives() -> None:
    schema = load_schema(LONG_GOLD / "thread_contacts.schema.json")
    row = json.loads((LONG_GOLD / "thread_contacts-irregular.jsonl").read_text(encoding="utf-8"))
    text, gold = row["text"], row["gold"]["contacts"]
    layout = find_units(text)
    dana, marcus, oskar, priya = gold
    signed_dana = dict.fromkeys(dana) | {"name": dana["name"], "email": dana["email"]}  # "Dana" only
    answers = [signed_dana, marcus, oskar, signed_dana, priya, dana]  # the newest message first
    reading = unit_schema(schema, "messages")
    pieces = [
        (unit, _as_part(written(reading, unit.text(text), {"contacts": answer}), "contacts"))
        for unit, answer in zip(layout.units, answers, strict=True)
    ]
    names = [f"unit {i + 1} of 6" for i in range(6)]
    merged = merge(schema, schema_roles(schema.body), text, pieces, names)
    assert merged.verdict.status == "ok" and merged.duplicates == 2, merged.verdict.errors
    assert merged.verdict.data == {"contacts": gold}, "Dana's phone and company from her signed message"
    (phone,) = [row for row in merged.verdict.evidence if row["path"] == "contacts[0].phone"]
    assert all(layout.units[5].start <= s < e <= layout.units[5].end for s, e in phone["spans"])


THREAD = load_schema(LONG_GOLD / "thread_contacts.schema.json")
THREAD_JA = next(
    json.loads(line)
    for line in (LONG_GOLD / "thread_contacts.jsonl").read_text(encoding="utf-8").splitlines()
    if '"long-thread-ja"' in line
)


def test_two_readings_of_one_person_that_disagree_null_the_field_and_name_both() -> None:
    text, gold = THREAD_JA["text"], THREAD_JA["gold"]["contacts"]
    layout = find_units(text)
    ito, tanaka, takahashi, sato, suzuki = gold
    quoted = sato | {"organization": "Subject"}  # as the 1.5B read the quoted copy of Sato's message
    reading = unit_schema(THREAD, "messages")
    for first, expected in ((quoted, None), (sato | {"name": "佐藤"}, "さくら物流株式会社")):
        answers = [ito, tanaka, takahashi, first, suzuki, sato]
        pieces = [
            (unit, _as_part(written(reading, unit.text(text), {"contacts": answer}), "contacts"))
            for unit, answer in zip(layout.units, answers, strict=True)
        ]
        names = [f"unit {i + 1} of 6" for i in range(6)]
        merged = merge(THREAD, schema_roles(THREAD.body), text, pieces, names).verdict
        if expected is None:
            assert merged.status == "partial" and merged.data["contacts"][3]["organization"] is None
            (said,) = [e for e in merged.errors if "two readings of one item disagree" in e]
            assert '"Subject"' in said and '"さくら物流株式会社"' in said and "unit 4 of 6" in said
            (value,) = [v for v in merged.values if v["path"] == "contacts[3].organization"]
            assert value["verdict"] == "refused"
            shown = [r for r in merged.evidence if r["path"] == "contacts[3].organization"]
            assert [r["kind"] for r in shown] == ["refused"], "no span for a value the row does not hold"
        else:  # a name written shorter in one message is the same name, not two readings
            assert merged.status == "ok", merged.errors
            assert merged.data["contacts"][3] == sato | {"name": "佐藤"}


@pytest.mark.slow
def test_a_unit_the_judge_refuses_is_read_again_with_a_sibling_shown_first(qwen_engine) -> None:
    """The 1.5B gave the fifth sender of the Japanese thread as her company, with no address, read
    alone; shown the message before it and what it read there, it reads her as it read the others."""
    text, gold = THREAD_JA["text"], THREAD_JA["gold"]["contacts"]
    body = json.loads(json.dumps(THREAD.body))
    body["properties"]["contacts"]["x-units"] = "messages"
    schema = load_checked_body(body, "thread-by-message")
    engines = (qwen_engine, qwen_engine)
    outcome = extract_safely(1, text, schema, engines, ExtractOptions(max_attempts=1), THREAD_JA.get("meta"))
    units = [c.judged["unit"] for c in outcome.calls]
    again = [u for u in units if "example" in u]
    assert len(units) <= 2 * len(find_units(text).units), "at most one second reading a unit"
    read = {(u["index"], "example" in u): c.judged for u, c in zip(units, outcome.calls, strict=True)}
    for unit in again:
        assert read[(unit["index"], False)]["status"] != "ok", "only a unit the judge did not pass"
        assert read[(unit["example"], False)]["status"] == "ok", "the example, a reading the judge passed"
    assert {c["email"] for c in outcome.verdict.data["contacts"]} == {c["email"] for c in gold}


def test_a_second_reading_is_kept_only_where_the_judge_passes_it_and_it_keeps_the_item() -> None:
    def read(status: str, item: dict | None) -> Outcome:
        errors = [] if status == "ok" else ["refused"]
        return Outcome(1, Verdict(status, {"contacts": item}, errors), attempts=1)

    person = {"name": "鈴木 美咲", "email": "suzuki.m@aoba-shoji.co.jp", "phone": None, "organization": None}
    asked = [{"role": "user", "content": f"unit {i}"} for i in range(4)]
    units = [read("ok", None), read("ok", person), read("partial", person), read("ok", person)]
    example = nearest_example(2, units, asked, "contacts")
    assert example is not None and example.index == 1, "the nearest before, never a unit with no item"
    assert nearest_example(1, [read("ok", None), read("partial", person)], asked, "contacts") is None
    shown = shown_first(example, [{"role": "system", "content": "s"}, asked[2]])
    answer = json.dumps({"contacts": person}, ensure_ascii=False)
    assert [m["content"] for m in shown][1:] == ["unit 1", answer, "unit 2"]
    first = read("partial", person)
    assert kept(first, read("ok", person), "contacts").verdict.status == "ok", "a mended refusal"
    assert kept(read("partial", person), read("ok", None), "contacts").verdict.status == "partial", (
        "a second reading of no item at all never drops the item the first read"
    )
    assert kept(read("partial", person), read("partial", person), "contacts").verdict.status == "partial"


def test_a_second_reading_is_not_offered_the_values_the_judge_refused_in_the_first() -> None:
    """The 1.5B read the supermarket's natto line (three packs a box, two boxes) as 3 packs twice;
    its second reading is offered neither 3 again nor the price its amount kept: the line's other
    numbers, and null."""
    receipt = load_schema(LONG_GOLD / "receipt.schema.json")
    rows = (LONG_GOLD / "receipt-irregular.jsonl").read_text(encoding="utf-8").splitlines()
    text = next(row["text"] for row in map(json.loads, rows) if row["id"] == "long-receipt-ja-super")
    natto = next(unit.text(text) for unit in find_units(text).units if "納豆" in unit.text(text))
    reading = unit_schema(receipt, "lines")
    grammar = ExtractOptions().formatting_grammar(reading, natto, None)
    item = {"description": "納豆　３パック", "quantity": 3, "amount": 176}
    first = written(reading, natto, {"items": item})
    assert ("items.quantity", 3) in [(row["path"], row["value"]) for row in first.values]
    assert first.status != "ok", "the judge refuses a count that is part of the word ３パック"
    offered = not_again(grammar, first)["properties"]["items"]["properties"]
    before = grammar["properties"]["items"]["properties"]
    assert {3, 176} <= set(before["quantity"]["enum"]), "both were offered the first time"
    assert {2, 88, None} == set(offered["quantity"]["enum"]), "not 3 again, nor the amount's 176"
    assert offered["amount"] == before["amount"], "what the judge passed is offered as before"
    passed = written(reading, natto, {"items": {**item, "quantity": 2}})
    assert passed.status == "ok" and not_again(grammar, passed) == grammar
