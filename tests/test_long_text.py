"""Long texts: split on natural units, each part judged on its own text, merged with spans into the whole.

The merge is measured apart from the model first, as the judge is: each part answered as a perfect
model would (the items its own text lists, the header fields its text states), through the real judge;
then one part made wrong. Then the real embedded model reads a text too long for one prompt through
the real flow and SQLite, and the review page shows the parts.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from formwork.db.models import ModelCall, Record, Result
from formwork.db.queries import latest_run_id, run_summary
from formwork.db.session import session_factory
from formwork.flows.batch_extract import batch_extract
from formwork.flows.review import load_review, render_review
from formwork.schemas.budget import format_budget
from formwork.schemas.registry import SchemaProblem, load_checked_body, load_schema
from formwork.schemas.roles import part_body, role_problems, schema_roles
from formwork.tasks.calls import ExtractOptions
from formwork.tasks.engines.base import Completion
from formwork.tasks.fit import CUT
from formwork.tasks.long.completeness import INCOMPLETE, adds_up, missing_from, missing_keys, missing_rows
from formwork.tasks.long.merge import merge
from formwork.tasks.long.parts import Part, split_text
from formwork.tasks.long.plan import part_options, part_schema, plan_parts
from formwork.tasks.validate import Verdict, judge

RECEIPT = load_schema("receipt")
IN_PARTS = json.loads(json.dumps(RECEIPT.body))
IN_PARTS["properties"]["items"]["x-units"] = "none"  # never item by item: what is under test is parts
RECEIPT_IN_PARTS = load_checked_body(IN_PARTS, "receipt-in-parts")
LONG_GOLD = Path(__file__).resolve().parents[1] / "examples" / "gold" / "long"
ROLES = schema_roles(RECEIPT.body)
ITEMS = [(f"Widget model {chr(65 + i % 26)}{i}", i % 4 + 1, round(2.5 + i * 1.25, 2)) for i in range(18)]
TOTAL = round(sum(amount for *_, amount in ITEMS), 2)


def receipt_text(items: list[tuple[str, int, float]] = ITEMS) -> str:
    lines = ["Hardware Haus GmbH", "Date: 2024-05-06", "| item | qty | price |", "|---|---|---|"]
    lines += [f"| {name} | {qty} | {amount:.2f} |" for name, qty, amount in items]
    return "\n".join([*lines, f"Total {TOTAL:.2f} EUR"])


TEXT = receipt_text()
EXTRA = {"| Widget model A0 | 5 | 2.50 |": {"description": "Widget model A0", "quantity": 5, "amount": 2.5}}


def fits(limit: int):
    return lambda piece: len(piece) <= limit


def answer(text: str, **changes: Any) -> dict[str, Any]:
    """What a perfect model writes for `text` (a part): what it states, null for what it does not, and
    one item per item line it shows."""
    lines = {f"| {d} | {q} | {a:.2f} |": {"description": d, "quantity": q, "amount": a} for d, q, a in ITEMS}
    lines |= {line: item for line, item in EXTRA.items()}
    data = {
        "merchant": "Hardware Haus GmbH" if "Hardware Haus GmbH" in text else None,
        "date": "2024-05-06" if "2024-05-06" in text else None,
        "total": TOTAL if f"Total {TOTAL:.2f}" in text else None,
        "currency": "EUR" if "EUR" in text else None,
        "items": [dict(lines[line]) for line in text.split("\n") if line in lines],
    }
    return data | changes


def judged(text: str, data: dict[str, Any]) -> Verdict:
    written = json.dumps(data)
    shaped = Completion(written, "stop", 1, 1, 0.0, "perfect", ((written, 0.0),))
    return judge(part_schema(RECEIPT), text, Completion("notes", "stop", 1, 1, 0.0, "perfect"), shaped)


def perfect_parts(text: str = TEXT, limit: int = 300) -> list[tuple[Part, Verdict]]:
    return [
        (part, judged(part.text(text), answer(part.text(text)))) for part in split_text(text, fits(limit))
    ]


def test_parts_fit_overlap_by_a_line_and_repeat_the_table_header() -> None:
    parts = split_text(TEXT, fits(300))
    assert len(parts) >= 3 and parts[0].start == 0 and parts[-1].end == len(TEXT)
    for before, after in itertools.pairwise(parts):
        assert after.start < before.end, "consecutive parts share at least one unit"
        assert TEXT[after.start - 1] == "\n" and TEXT[after.start : before.end].strip(), "on a line"
    for part in parts:
        shown = part.text(TEXT)
        assert len(shown) <= 300 and all(shown[i] == TEXT[part.to_whole(i)] for i in range(len(shown)))
        if part.start > TEXT.index("|---|"):
            assert shown.startswith("| item | qty | price |\n|---|---|---|\n")


def test_a_mail_thread_splits_between_messages_and_cjk_between_sentences() -> None:
    mails = [
        f"From: Person {i} <p{i}@example.com>\nHello,\n{'some words ' * 12}\nBest,\nPerson {i}\n"
        for i in range(5)
    ]
    thread = "\n".join(mails)
    parts = split_text(thread, fits(len(mails[0]) + 40))
    assert len(parts) >= 3
    assert all(thread[p.start :].startswith(("From: ", "Person ")) for p in parts[1:]), (
        "a message or its signature"
    )
    chinese = "我们在北京的酒店住了两晚。" * 30
    cut = split_text(chinese, fits(60))
    assert all(chinese[p.end - 1] == "。" for p in cut[:-1]), "a CJK part ends where a sentence does"


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.text(st.sampled_from("ab c.\n|。"), max_size=40), min_size=1, max_size=30), st.integers(8, 90)
)
@example(["a|\n", "aaaa|\n|"], 8)  # a unit that fits, but not with the header row repeated (was a flake)
def test_parts_cover_the_whole_text_and_each_fits(pieces: list[str], limit: int) -> None:
    text = "".join(pieces)
    parts = split_text(text, fits(limit))
    covered = set()
    for part in parts:
        assert len(part.text(text)) <= limit or part.end - part.start <= 1
        covered |= set(range(part.start, part.end))
    assert covered == set(range(len(text)))


def test_roles_follow_the_shape_and_the_annotations() -> None:
    assert ROLES.items == ["items"] and ROLES.headers == ["merchant", "date", "total", "currency"]
    body = json.loads(json.dumps(RECEIPT.body))
    body["properties"]["items"]["x-split"] = "header"
    body["properties"]["merchant"]["x-split"] = "items"
    body["properties"]["date"]["x-key"] = ["description"]
    assert schema_roles(body).headers[-1] == "items"
    body["properties"]["merchant"]["x-units"] = "pages"
    problems = role_problems(body)
    assert any("merchant" in p and "needs an array" in p for p in problems)
    assert any("merchant" in p and "x-units is one of rows, lines, messages, none" in p for p in problems)
    assert any(
        "read one of its rows at a time" in line
        for line in schema_roles(
            IN_PARTS | {"properties": {"items": IN_PARTS["properties"]["items"] | {"x-units": "rows"}}}
        ).explain()
    )
    assert any("date" in p and "x-key" in p for p in problems)
    assert any("from its shape" in line for line in ROLES.explain())
    with pytest.raises(SchemaProblem, match="x-split is 'items' or 'header'"):
        load_checked_body({**RECEIPT.body, "properties": {"a": {"type": "string", "x-split": "rows"}}}, "bad")
    part = part_body(RECEIPT.body)["properties"]
    assert "null" in part["total"]["type"] and not part["total"].get("x-critical")
    assert None in part["currency"]["enum"] and part["items"] == RECEIPT.body["properties"]["items"]


def test_perfect_parts_merge_into_a_perfect_ok_row_with_spans_in_the_whole_text() -> None:
    parts = perfect_parts()
    assert all(verdict.status == "ok" for _, verdict in parts), [v.errors for _, v in parts]
    merged = merge(RECEIPT, ROLES, TEXT, parts)
    assert merged.verdict.status == "ok", merged.verdict.errors
    assert merged.verdict.data == answer(TEXT) and merged.duplicates >= 1
    quoted = [row for row in merged.verdict.evidence if row["quote"] and row["spans"]]
    assert quoted and all(any(TEXT[s:e] == row["quote"] for s, e in row["spans"]) for row in quoted)
    assert {row["part"] for row in quoted} == set(range(1, len(parts) + 1))


def test_two_equal_lines_stay_two_items() -> None:
    twice = [*ITEMS[:5], ITEMS[4], *ITEMS[5:]]
    text = receipt_text(twice)
    merged = merge(RECEIPT, ROLES, text, perfect_parts(text))
    assert [i["description"] for i in merged.verdict.data["items"]] == [d for d, *_ in twice]


def test_parts_that_disagree_on_a_header_field_null_it_and_say_what_each_said() -> None:
    parts = perfect_parts()
    part, _ = parts[1]
    shown = part.text(TEXT)
    named = shown.split("\n")[-2].split(" | ")[0].strip("| ")  # a name this part's text does show
    parts[1] = (part, judged(shown, answer(shown, merchant=named)))
    merged = merge(RECEIPT, ROLES, TEXT, parts)
    assert merged.verdict.status == "partial" and merged.conflicts == ("merchant",)
    assert merged.verdict.data["merchant"] is None and "merchant" in merged.verdict.nulled
    assert any("Hardware Haus GmbH" in e and named in e for e in merged.verdict.errors)
    parts[1] = (part, judged(shown, answer(shown, currency="USD")))  # an enum needs no span
    merged = merge(RECEIPT, ROLES, TEXT, parts)
    assert merged.verdict.status == "failed" and "currency" in merged.conflicts, "critical: never a pick"


def test_a_part_that_gives_an_items_price_as_the_total_does_not_disagree() -> None:
    parts = perfect_parts()
    part, _ = parts[0]  # the total stands on the last line, in the last part only
    shown = part.text(TEXT)
    price = answer(shown)["items"][2]["amount"]  # written once, as that item's amount
    parts[0] = (part, judged(shown, answer(shown, total=price)))
    merged = merge(RECEIPT, ROLES, TEXT, parts)
    assert merged.verdict.status == "ok" and merged.verdict.data["total"] == TOTAL, merged.verdict.errors
    totals = [v["value"] for v in merged.verdict.values if v["path"] == "total"]
    assert not merged.conflicts and price not in totals


def test_a_wrong_value_and_a_failed_part_never_make_the_merged_row_ok() -> None:
    parts = perfect_parts()
    part, _ = parts[1]
    shown = part.text(TEXT)
    wrong = answer(shown)
    wrong["items"][0]["amount"] = 999.99  # the text never states it
    parts[1] = (part, judged(shown, wrong))
    merged = merge(RECEIPT, ROLES, TEXT, parts)
    assert merged.verdict.status == "partial"
    assert any(
        e.startswith("items[") and "999.99" in e and e.endswith("(part 2 of 3)")
        for e in merged.verdict.errors
    )
    assert 999.99 not in [item["amount"] for item in merged.verdict.data["items"]]
    parts = perfect_parts()
    parts[1] = (parts[1][0], Verdict("failed", None, ["no JSON came back"]))  # the last holds the total
    merged = merge(RECEIPT, ROLES, TEXT, parts)
    assert merged.verdict.status == "partial" and any(
        "part 2 of" in e and "missing" in e for e in merged.verdict.errors
    )


def test_a_part_that_leaves_an_item_out_or_misreads_one_is_caught_by_the_checks() -> None:
    parts = perfect_parts()
    part, _ = parts[1]
    shown = part.text(TEXT)
    fewer = answer(shown)
    assert merge(RECEIPT, ROLES, TEXT, parts).verdict.status == "ok"
    edges = dict(fewer, items=fewer["items"][1:-1])  # its first and last lines: the overlaps read them
    assert (
        merge(RECEIPT, ROLES, TEXT, [*parts[:1], (part, judged(shown, edges)), *parts[2:]]).verdict.status
        == "ok"
    )
    fewer["items"].pop(len(fewer["items"]) // 2)  # a line no other part reads
    parts[1] = (part, judged(shown, fewer))
    merged = merge(RECEIPT, ROLES, TEXT, parts)
    assert merged.verdict.status == "partial", merged.verdict.errors
    assert any(f"for the text's {len(ITEMS)} table rows" in e for e in merged.verdict.errors)
    assert any("add up to" in e for e in merged.verdict.errors)
    parts[1] = (part, judged(shown, answer(shown, items=[])))
    merged = merge(RECEIPT, ROLES, TEXT, parts)
    assert any("part 2 of" in e and "gave no items" in e for e in merged.verdict.errors)


def test_x_key_merges_items_that_share_a_key() -> None:
    text = TEXT.replace("\nTotal", "\n| Widget model A0 | 5 | 2.50 |\nTotal")  # the first item, again
    body = json.loads(json.dumps(RECEIPT.body))
    body["properties"]["items"]["x-key"] = ["description"]
    keyed = load_checked_body(body, "receipt-keyed")
    plain = merge(RECEIPT, ROLES, text, perfect_parts(text))
    merged = merge(keyed, schema_roles(body), text, perfect_parts(text))
    assert [i["description"] for i in plain.verdict.data["items"]].count("Widget model A0") == 2
    assert [i["description"] for i in merged.verdict.data["items"]].count("Widget model A0") == 1


@pytest.mark.slow
def test_the_embedded_model_reads_a_long_text_in_parts_through_the_flow(
    prefect_harness, local_engine, monkeypatch, write_jsonl, db_url, tmp_path
) -> None:
    monkeypatch.setenv("FORMWORK_REASONING_MAX_TOKENS", "32")
    monkeypatch.setenv("FORMWORK_MAX_ATTEMPTS", "1")
    lines = [f"| Widget {i:03d} | {i % 3 + 1} | {i + 0.5:.2f} |" for i in range(60)]
    long_text = "\n".join(
        ["Hardware Haus GmbH, 2024-05-06", "| item | qty | price |", *lines, "Total 1800.00 EUR"]
    )
    # 60 item lines fit the context, but their JSON would not fit half the formatting budget: parts
    schema = tmp_path / "receipt-in-parts.json"  # read in parts, never item by item: parts are under test
    schema.write_text(json.dumps(IN_PARTS), encoding="utf-8")
    batch_extract(str(write_jsonl([{"id": "long", "text": long_text}])), str(schema), db_url=db_url)
    sessions = session_factory(db_url)
    with sessions() as session:
        result = session.scalars(select(Result)).one()
        calls = session.scalars(select(ModelCall).order_by(ModelCall.id)).all()
        assert session.scalars(select(Record)).one().text == long_text
        items = load_review(session, None)
    indexes = {call.judged["part"]["index"] for call in calls}
    assert len(indexes) >= 2 and indexes == set(range(1, len(indexes) + 1))
    assert not any(e.startswith(CUT) for e in result.errors), "read in parts, never cut"
    for row in result.evidence or []:
        if row["quote"] and row["spans"] and row["kind"] in ("exact", "fuzzy"):
            assert any(long_text[s:e].lower() == row["quote"].lower() for s, e in row["spans"]), row
    assert result.status != "ok" or all(
        c.judged.get("status", "ok") == "ok" for c in calls if c.pass_name == "formatting"
    )
    with sessions() as session:
        summary = dict(run_summary(session, latest_run_id(session)).rows())
    assert summary["texts read in parts"] == "1"
    page = render_review(items, "long")
    assert f"read in {len(indexes)} parts" in page and "[part 2]" in page


class Silent:
    """An engine that gives a part no items until it is told so (`stubborn`: not even then). A real
    model cannot be made to skip a part on demand; the part read again is what is under test."""

    model, max_concurrency, context_window = "scripted", 1, 8192

    def __init__(self, silent_part: int, stubborn: bool = False) -> None:
        from formwork.tasks.calls import ExtractOptions

        self.silent, self.stubborn, self.told = silent_part, stubborn, 0
        self.parts = plan_parts(TEXT, RECEIPT, (self, self), ExtractOptions(max_attempts=1)).parts

    def count_tokens(self, text: str) -> int:
        return len(text)  # a token a character

    def complete(self, messages, sampling, schema=None) -> Completion:
        if schema is None:
            return Completion("the items as listed", "stop", 1, 1, 0.0, self.model)
        prompt = "\n".join(m["content"] for m in messages)
        part = next(p for p in self.parts if p.text(TEXT) in prompt)
        told = "gave no items" in messages[-1]["content"]
        self.told += told
        data = answer(part.text(TEXT))
        if part == self.parts[self.silent] and (self.stubborn or not told):
            data["items"] = []
        written = json.dumps(data)
        return Completion(written, "stop", 1, 1, 0.0, self.model, ((written, 0.0),))


@pytest.mark.parametrize("stubborn", [False, True])
def test_a_part_that_gave_no_items_is_read_once_more_and_alone(stubborn: bool) -> None:
    from formwork.tasks.calls import ExtractOptions
    from formwork.tasks.extract import extract_safely

    engine = Silent(silent_part=1, stubborn=stubborn)
    outcome = extract_safely(1, TEXT, RECEIPT_IN_PARTS, (engine, engine), ExtractOptions(max_attempts=1))
    parts = {(c.judged["part"]["index"], c.judged["part"].get("again", False)) for c in outcome.calls}
    n = len(engine.parts)
    assert n > 1 and parts == {(i, False) for i in range(1, n + 1)} | {(2, True)}, parts
    assert engine.told == 1  # once, that part only
    if stubborn:
        assert outcome.verdict.status == "partial"
        assert any(e.startswith(f"incomplete: part 2 of {n} gave no items") for e in outcome.verdict.errors)
    else:
        assert outcome.verdict.status == "ok" and outcome.verdict.data == answer(TEXT), outcome.verdict.errors


class LeavesOut:
    """An engine whose JSON lists every item but the last: a model whose answer ran out of room. The
    whole text fits one prompt, so no part is read; what is under test is the check of the whole."""

    model, max_concurrency, context_window = "scripted", 1, 8192

    def count_tokens(self, text: str) -> int:
        return len(text)

    def complete(self, messages, sampling, schema=None) -> Completion:
        if schema is None:
            return Completion("the items as listed", "stop", 1, 1, 0.0, self.model)
        data = answer("\n".join(m["content"] for m in messages))
        data["items"] = data["items"][:-1]
        written = json.dumps(data)
        return Completion(written, "stop", 1, 1, 0.0, self.model, ((written, 0.0),))


def test_a_text_read_whole_whose_items_leave_table_rows_out_is_partial() -> None:
    from formwork.tasks.calls import ExtractOptions
    from formwork.tasks.extract import extract_safely

    short = receipt_text(ITEMS[:5])
    outcome = extract_safely(1, short, RECEIPT, (LeavesOut(), LeavesOut()), ExtractOptions(max_attempts=1))
    assert not any("part" in (c.judged or {}) for c in outcome.calls)  # read whole
    assert outcome.verdict.status == "partial"
    assert f"{INCOMPLETE} items holds 4 items for the text's 5 table rows" in outcome.verdict.errors
    tags = {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}}}
    assert missing_rows(tags, schema_roles(tags), short, {"tags": ["hardware"]}) == []  # not records


def test_a_part_of_an_items_schema_may_reason_as_long_as_it_formats() -> None:
    from formwork.tasks.calls import ExtractOptions

    roomy, configured = Silent(0), ExtractOptions()
    formatting = format_budget(part_schema(RECEIPT).grammar_body)
    assert part_options(RECEIPT, configured, [roomy]).reasoning_max_tokens == formatting > 384
    roomy.context_window = 3 * formatting  # no room for both budgets and the prompt: the configured one
    assert part_options(RECEIPT, configured, [roomy]).reasoning_max_tokens == 384


def test_what_a_perfect_model_writes_for_each_part_fits_the_formatting_budget() -> None:
    # Short lines restate the most keys for their size (as CJK ones do): 60 items of two letters.
    short = [(f"{chr(65 + i % 26)}{i % 9}", i % 4 + 1, float(i + 1)) for i in range(60)]
    text, engine = receipt_text(short), Silent(0)  # a token a character: the JSON's length is its tokens
    parts = plan_parts(text, RECEIPT, (engine, engine), ExtractOptions(max_attempts=1)).parts
    budget = format_budget(part_schema(RECEIPT).grammar_body)
    for part in parts:
        rows = re.findall(r"^\| (\w+) \| (\d+) \| ([\d.]+) \|$", part.text(text), re.MULTILINE)
        items = [{"description": d, "quantity": int(q), "amount": float(a)} for d, q, a in rows]
        written = json.dumps(answer("") | {"items": items})
        assert len(written) <= budget, (len(written), budget, len(parts))


def test_a_list_keyed_by_e_mail_that_leaves_an_address_out_is_incomplete() -> None:
    long = LONG_GOLD / "thread_contacts"
    schema = load_schema(long.with_suffix(".schema.json"))
    roles = schema_roles(schema.body)
    for line in long.with_suffix(".jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        text, gold = row["text"], row["gold"]
        assert missing_keys(schema.body, roles, text, gold) == []  # a perfect answer holds them all
        fewer = {"contacts": gold["contacts"][:1]}
        (reason,) = missing_keys(schema.body, roles, text, fewer)
        assert reason == f"{INCOMPLETE} contacts leaves out 4 of the 5 email addresses the text writes"
        unsure = {"contacts": [c | {"email": None} for c in gold["contacts"]]}  # dropped below the bound
        (said,) = missing_keys(schema.body, roles, text, unsure)  # the row says it cannot vouch for them
        assert (
            said.startswith(f"{INCOMPLETE} 5 of the 5 email addresses")
            and "5 of its items have no email" in said
        )


class Counting:
    """The real engine's tokenizer, with its calls counted: each is a `POST /tokenize` on a server."""

    def __init__(self, engine: Any) -> None:
        self.engine, self.calls = engine, 0
        self.model, self.max_concurrency, self.context_window = engine.model, 1, engine.context_window

    def count_tokens(self, text: str) -> int:
        self.calls += 1
        return self.engine.count_tokens(text)


@pytest.mark.slow
def test_planning_a_huge_text_counts_tokens_a_bounded_number_of_times(local_engine) -> None:
    statement = load_schema(LONG_GOLD / "statement.schema.json")
    huge = "\n".join(f"2024-05-{d % 28 + 1:02d}  Cafe table {d}  {d % 97 + 3}.50 EUR" for d in range(19_000))
    assert len(huge) > 700_000
    options = ExtractOptions()
    counted, small = Counting(local_engine), Counting(local_engine)
    plan = plan_parts(huge, statement, (counted, counted), options)
    assert len(plan.parts) == options.max_parts and plan.cut_to == plan.parts[-1].end < len(huge)
    assert all(part.end <= plan.cut_to for part in plan.parts), "nothing past the cut is planned"
    tenth = huge[: len(huge) // 10]
    assert plan_parts(tenth, statement, (small, small), options) == plan, "the same parts from a tenth of it"
    # each part grows by doubling then halving: ~2 log2(lines a part holds) counts, never one a line
    per_part = 2 * (len(plan.parts[0].text(huge).split("\n"))).bit_length() + 2
    assert counted.calls <= options.max_parts * per_part and counted.calls <= small.calls + 2, counted.calls


def test_a_failed_merged_row_still_says_what_it_leaves_out() -> None:
    parts = perfect_parts()
    last, _ = parts[-1]
    parts[-1] = (last, Verdict("failed", None, ["no JSON came back"]))  # it alone states the total
    merged = merge(RECEIPT, ROLES, TEXT, parts)
    assert merged.verdict.status == "failed", "the total is critical"
    assert any(e.startswith(f"{INCOMPLETE} items holds") for e in merged.verdict.errors), (
        merged.verdict.errors
    )


class Answers:
    """An engine that writes the same JSON for every formatting call: a model whose answer left an
    expense out, on cue."""

    model, max_concurrency, context_window = "scripted", 1, 8192

    def __init__(self, data: dict[str, Any]) -> None:
        self.written = json.dumps(data)

    def count_tokens(self, text: str) -> int:
        return len(text)

    def complete(self, messages, sampling, schema=None) -> Completion:
        if schema is None:
            return Completion("the statement as listed", "stop", 1, 1, 0.0, self.model)
        return Completion(self.written, "stop", 1, 1, 0.0, self.model, ((self.written, 0.0),))


def test_a_text_read_whole_whose_items_do_not_add_up_to_its_total_is_partial() -> None:
    from formwork.tasks.extract import extract_safely

    statement = load_schema(LONG_GOLD / "statement.schema.json")
    lines = [(f"2024-05-0{d}", f"Cafe {d}", d + 0.5) for d in range(1, 5)]  # a short list: read whole
    text = "\n".join(
        ["Card holder: Ana Lima", *(f"{a}  {b}  {c:.2f} EUR" for a, b, c in lines), "Total 12.00 EUR"]
    )
    expenses = [{"date": a, "description": b, "amount": c} for a, b, c in lines]
    whole = {"holder": "Ana Lima", "currency": "EUR", "total": 12.0, "expenses": expenses}
    engine = Answers(whole)
    assert (
        extract_safely(1, text, statement, (engine, engine), ExtractOptions(max_attempts=1)).verdict.status
        == "ok"
    )
    engine = Answers(
        whole | {"expenses": expenses[:2]}
    )  # two of four: the JSON ran out, or the model stopped
    outcome = extract_safely(1, text, statement, (engine, engine), ExtractOptions(max_attempts=1))
    assert not any("unit" in (c.judged or {}) or "part" in (c.judged or {}) for c in outcome.calls), (
        "read whole"
    )
    assert outcome.verdict.status == "partial"
    assert (
        f"{INCOMPLETE} the expenses' amount add up to 4, the total is 12: an item may be missing or misread"
        in (outcome.verdict.errors)
    )


def test_items_that_add_up_to_a_stated_subtotal_are_complete_with_vat_added_after() -> None:
    """An invoice's lines add up to its net; its total adds VAT. A missing line misses both."""
    body = load_schema(LONG_GOLD / "receipt.schema.json").body
    roles = schema_roles(body)
    text = (
        "Qty Description Amount\n2 Cable 15.80\n1 Level 18.99\n\n"
        "Subtotal 34.79\nVAT 20% 6.96\nTotal GBP 41.75"
    )
    lines = [
        {"description": "Cable", "quantity": 2, "amount": 15.8},
        {"description": "Level", "quantity": 1, "amount": 18.99},
    ]
    row = {"merchant": None, "date": None, "total": 41.75, "currency": "GBP", "items": lines}
    assert adds_up(body, roles, row, text).agrees and not missing_from(body, roles, text, row)
    assert not adds_up(body, roles, row).agrees, "without the text, only the total is known"
    short = row | {"items": lines[:1]}
    assert any("add up to 15.8, the total is 41.75" in e for e in missing_from(body, roles, text, short))


def test_amounts_stated_beyond_the_total_beside_items_without_one_are_misread() -> None:
    """Items without an amount cannot add up, but the ones stated may already exceed the total."""
    body = load_schema(LONG_GOLD / "statement.schema.json").body
    roles = schema_roles(body)
    items = [
        {"date": None, "description": "A", "amount": 40.0},
        {"date": None, "description": "B", "amount": None},
    ]
    row = {"holder": None, "currency": "EUR", "total": 30.0, "expenses": items}
    (reason,) = missing_from(body, roles, "", row)
    assert reason.startswith(
        f"{INCOMPLETE} the 1 expenses' amount stated add up to 40, more than the total 30"
    )
    assert not missing_from(body, roles, "", row | {"total": 55.0}), "the amount-less one may hold the rest"
    listed = "02/05  MONOPRIX  10.00\n03/05  EDF  20.00\nTotal 30.00"
    (none,) = missing_from(body, roles, listed, row | {"expenses": []})
    assert none == f"{INCOMPLETE} no expenses, but the total is 30 and the text lists some"
    assert not missing_from(body, roles, listed, row | {"expenses": [], "total": 0}), "a statement of nothing"
    assert not missing_from(body, roles, "Paid 30 EUR, thanks", row | {"expenses": []}), "no list, none asked"
