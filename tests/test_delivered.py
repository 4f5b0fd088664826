"""Every value a row read, with its state (flows.delivered; issue 51 points 1 and 3).

`REAL` are two rows as `formwork run` stored them (the bundled SmolLM2-135M, one-pass, no calibration,
examples/expenses.jsonl lines exp-007 and exp-008; evidence and trust trimmed to the keys read here):
the row kept a fifth of what the model read, and the user saw none of the rest. The certified rows
are made by tasks.decide from readings the real judge judged (tests/test_decide.py's `read`).
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from formwork.db.session import session_factory
from formwork.db.store import QueuePolicy, finish_run, save_outcomes, start_run, store_records
from formwork.flows.cli import app
from formwork.flows.delivered import NO_POLICY, certified_only, every_value, top_fields
from formwork.schemas.registry import load_schema
from formwork.tasks.calls import Outcome
from formwork.tasks.decide import decide
from formwork.tasks.sources.records import InputRecord
from tests.test_decide import BODY, CALIBRATED, SCHEMA, TEXT, read

EXPENSE = top_fields(load_schema("expense").body)


def _trust(path: str, value: Any, p: float, dropped: bool, why: str, threshold: float | None = 0.99) -> dict:
    return {"path": path, "readings": {"one-pass": {"value": value, "p": p, "verdict": "passed"}},
            "reading": "one-pass", "score": None, "threshold": threshold, "certified": False,
            "dropped": dropped, "why": why, "value": value}  # fmt: skip


UNCHECKED = "kept unchecked: no calibration"
REAL: dict[str, dict[str, Any]] = {
    "exp-007": {  # "Train ticket Zurich-Geneva CHF 88, 2024-09-09, Lukas"
        "status": "partial",
        "data": {"who": None, "date": "2024-09-09", "amount": 88, "currency": "CHF", "category": None,
                 "project": None},
        "errors": ['project "Lukas" is the text that gives who, not a value of its own; give the project the '
                   "text names, or null if it names none", 'who "Lukas" dropped: unsure (p 0.986 < 0.99)',
                   'category "meals" dropped: no calibration covers this choice'],
        "nulled": ["category", "project", "who"],
        "evidence": [
            {"path": "who", "value": "Lukas", "kind": "exact", "grounded": True, "confidence": 0.9864},
            {"path": "date", "value": "2024-09-09", "kind": "exact", "grounded": True, "confidence": 0.9997},
            {"path": "amount", "value": 88, "kind": "exact", "grounded": True, "confidence": 1.0},
            {"path": "currency", "value": "CHF", "kind": "exact", "grounded": True, "confidence": 0.9935},
            {"path": "category", "value": "meals", "kind": "none", "grounded": True, "confidence": 0.9623},
            {"path": "project", "value": "Lukas", "kind": "exact", "grounded": False, "confidence": 0.9945},
            {"path": "project", "value": None, "kind": "refused", "grounded": False},
        ],
        "trust": [
            _trust("who", "Lukas", 0.9864, True, "unsure (p 0.986 < 0.99)"),
            _trust("date", "2024-09-09", 0.9997, False, UNCHECKED),
            _trust("amount", 88, 1.0, False, UNCHECKED),
            _trust("currency", "CHF", 0.9935, False, UNCHECKED),
            _trust("category", "meals", 0.9623, True, "no calibration covers this choice", None),
        ],
    },
    "exp-008": {  # "coffee for the team 18.50 dollars yesterday": currency dropped, so not even a key
        "status": "partial",
        "data": {"who": None, "date": None, "amount": 18.5, "category": None, "project": None},
        "errors": ['project "coffee for the team 18.50" is the text that gives who, not a value of its own; '
                   "give the project the text names, or null if it names none",
                   'who "coffee for the team 18.50" dropped: unsure (p 0.97 < 0.99)',
                   'currency "USD" dropped: unsure (p 0.98 < 0.99)',
                   'category "meals" dropped: no calibration covers this choice'],
        "nulled": ["category", "currency", "project", "who"],
        "evidence": [
            {"path": "who", "value": "coffee for the team 18.50", "kind": "exact", "grounded": True,
             "confidence": 0.9698},
            {"path": "amount", "value": 18.5, "kind": "normalised", "grounded": True, "confidence": 1.0},
            {"path": "currency", "value": "USD", "kind": "exact", "grounded": True, "confidence": 0.9849},
            {"path": "category", "value": "meals", "kind": "none", "grounded": True, "confidence": 0.8685},
            {"path": "project", "value": "coffee for the team 18.50", "kind": "exact", "grounded": False,
             "confidence": 0.9282},
            {"path": "project", "value": None, "kind": "refused", "grounded": False},
        ],
        "trust": [
            _trust("who", "coffee for the team 18.50", 0.9698, True, "unsure (p 0.97 < 0.99)"),
            {**_trust("date", None, 0.9923, False, UNCHECKED), "readings": {"one-pass": {
                "value": None, "p": 0.9923, "verdict": "null"}}},
            _trust("amount", 18.5, 1.0, False, UNCHECKED),
            _trust("currency", "USD", 0.9849, True, "unsure (p 0.98 < 0.99)"),
            _trust("category", "meals", 0.8685, True, "no calibration covers this choice", None),
        ],
    },
}  # fmt: skip


def test_an_uncalibrated_run_gives_every_value_it_read_with_its_state() -> None:
    """Issue 51: the row held 2 of 6 values and said `who:dropped`; every value now reaches the user,
    none of them certified (no calibration), the refused copy apart with its reason."""
    found = every_value(EXPENSE, REAL["exp-007"])
    assert list(found) == EXPENSE == ["who", "date", "amount", "currency", "category", "project"]
    assert {f: (d.value, d.state) for f, d in found.items()} == {
        "who": ("Lukas", "unsure"), "date": ("2024-09-09", "unsure"), "amount": (88, "unsure"),
        "currency": ("CHF", "unsure"), "category": ("meals", "unsure"), "project": ("Lukas", "refused"),
    }  # fmt: skip
    assert (found["who"].score, found["who"].threshold, found["who"].why) == (
        0.9864, 0.99, "unsure (p 0.986 < 0.99)")  # fmt: skip
    assert found["category"].why == "no calibration covers this choice"
    assert found["project"].why.startswith("a copy of who")
    assert certified_only(EXPENSE, REAL["exp-007"]) == dict.fromkeys(EXPENSE)  # nothing vouched for


def test_a_field_dropped_out_of_data_and_a_null_still_have_their_state() -> None:
    found = every_value(EXPENSE, REAL["exp-008"])
    assert "currency" not in REAL["exp-008"]["data"]
    assert (found["currency"].value, found["currency"].state) == ("USD", "unsure")
    assert (found["date"].value, found["date"].state, found["date"].why) == (None, "none", UNCHECKED)
    assert found["amount"].as_dict() == {"value": 18.5, "state": "unsure", "score": 1.0, "threshold": 0.99,
                                         "by": None, "why": UNCHECKED}  # fmt: skip


def test_certified_values_name_what_certified_them_and_unsure_ones_are_given_as_read() -> None:
    sure = read(who=("Maria", 0.99), amount=(42.8, 0.99), category=("meals", 0.99))
    verdict = decide(SCHEMA, {"two-pass": sure, "notes-free": sure}, CALIBRATED, {}, False)
    row = {"status": verdict.status, "data": verdict.data, "errors": verdict.errors, "nulled": verdict.nulled,
           "evidence": verdict.evidence, "trust": verdict.trust}  # fmt: skip
    found = every_value(list(BODY["properties"]), row, by="calibration 7")
    assert {f: (d.state, d.by) for f, d in found.items()} == dict.fromkeys(
        ["who", "amount", "category"], ("certified", "calibration 7"))  # fmt: skip
    fields = list(BODY["properties"])
    assert certified_only(fields, row) == {"who": "Maria", "amount": 42.8, "category": "meals"}

    # an unsure critical amount: not in `data` at all (the schema cannot hold its null), yet delivered
    two_pass = read(who=("Maria", 0.99), amount=(3, 0.6), category=("meals", 0.99))
    notes_free = read(who=("Maria", 0.99), amount=(42.8, 0.6), category=("meals", 0.99))
    verdict = decide(SCHEMA, {"two-pass": two_pass, "notes-free": notes_free}, CALIBRATED, {}, False)
    row |= {"status": verdict.status, "data": verdict.data, "errors": verdict.errors,
            "nulled": verdict.nulled, "evidence": verdict.evidence, "trust": verdict.trust}  # fmt: skip
    assert "amount" not in verdict.data
    found = every_value(list(BODY["properties"]), row, by="calibration 7")
    assert found["amount"].state == "unsure" and found["amount"].value in (3, 42.8)
    assert found["amount"].why.startswith("unsure (score")
    assert found["who"].state == "certified"
    assert certified_only(list(BODY["properties"]), row)["amount"] is None


def test_an_escalated_value_names_the_model_that_certified_it() -> None:
    sure = {"certified": True, "dropped": False, "certified_by": "qwen-1.5b"}
    row = {**REAL["exp-007"], "trust": [t | sure for t in REAL["exp-007"]["trust"]]}
    row["errors"] = [e for e in row["errors"] if not e.startswith("who")]
    assert every_value(EXPENSE, row, by="calibration 2")["who"].by == "qwen-1.5b"


def test_a_list_is_certified_only_whole_and_otherwise_given_whole_as_read() -> None:
    row = {
        "status": "partial",
        "data": {"shop": "Lidl", "items": [{"price": None}, {"name": "Milk", "price": 0.95}]},
        "errors": ['items[0].name "Bread" dropped: unsure (score 0.50 < 0.9)',
                   "items[0].price 1.2 dropped: unsure (score 0.50 < 0.9)"],
        "nulled": ["items[0].name", "items[0].price"], "evidence": [],
        "trust": [
            {"path": "shop", "value": "Lidl", "certified": True, "dropped": False, "score": 0.99,
             "threshold": 0.9, "why": ""},
            {"path": "items[0].name", "value": "Bread", "certified": False, "dropped": True, "score": 0.5,
             "threshold": 0.9, "why": "unsure (score 0.50 < 0.9)"},
            {"path": "items[0].price", "value": 1.2, "certified": False, "dropped": True, "score": 0.5,
             "threshold": 0.9, "why": "unsure (score 0.50 < 0.9)"},
            {"path": "items[1].name", "value": "Milk", "certified": True, "dropped": False, "score": 0.95,
             "threshold": 0.9, "why": ""},
            {"path": "items[1].price", "value": 0.95, "certified": True, "dropped": False, "score": 0.95,
             "threshold": 0.9, "why": ""},
        ],
    }  # fmt: skip
    found = every_value(["shop", "items"], row)
    assert found["shop"].state == "certified"
    assert found["items"].state == "unsure" and found["items"].score == 0.5
    assert found["items"].value == [{"price": 1.2, "name": "Bread"}, {"name": "Milk", "price": 0.95}]
    assert row["data"]["items"][0] == {"price": None}  # the stored row is not changed
    certain = {**row, "errors": [], "nulled": [], "trust": [t for t in row["trust"] if t["certified"]],
               "data": {"shop": "Lidl", "items": [{"name": "Milk", "price": 0.95}]}}  # fmt: skip
    assert every_value(["shop", "items"], certain)["items"].state == "certified"


def test_a_failed_row_hands_out_no_value_and_a_row_without_a_policy_none_as_certified() -> None:
    failed = {"status": "failed", "data": None, "unchecked": {"who": "Tom"},
              "errors": ["no JSON came back (finish=length)"], "trust": []}  # fmt: skip
    found = every_value(EXPENSE, failed)
    assert {d.state for d in found.values()} == {"refused"} and {d.value for d in found.values()} == {None}
    assert found["who"].why == "the row failed: no JSON came back (finish length)"
    plain = {"status": "ok", "data": {"who": "Tom", "amount": 35}, "errors": [], "nulled": [], "evidence": []}
    found = every_value(EXPENSE, plain)  # calibration off: the judge kept it, nothing certified it
    assert (found["who"].value, found["who"].state, found["who"].why) == ("Tom", "unsure", NO_POLICY)
    assert found["project"].state == "none" and certified_only(EXPENSE, plain)["who"] is None


def test_results_have_a_column_per_schema_field_even_one_dropped_in_every_row(tmp_path: Path) -> None:
    """Issue 51: the CSV's columns were the keys some row kept, so a field dropped in every row (a
    critical amount the schema cannot hold as null) had no column. Now every schema field has its value
    and state columns; the table marks the unsure value; --certified-only leaves it out."""
    url = f"sqlite:///{tmp_path}/delivered.db"
    texts = {"lunch": TEXT, "dinner": TEXT.replace("lunch", "dinner")}
    with session_factory(url)() as session:
        ids = store_records(session, "test", [InputRecord(k, t) for k, t in texts.items()])
        run_id = start_run(session, SCHEMA, flow="test", source="test", engine="local",
                           reasoning_model="test", formatting_model="test")  # fmt: skip
        outcomes = []
        for record_id in ids:  # the readings disagree on the amount, each unsure: dropped in every row
            two_pass = read(who=("Maria", 0.99), amount=(3, 0.6), category=("meals", 0.99))
            notes_free = read(who=("Maria", 0.99), amount=(42.8, 0.6), category=("meals", 0.99))
            verdict = decide(SCHEMA, {"two-pass": two_pass, "notes-free": notes_free}, CALIBRATED, {}, False)
            assert "amount" not in verdict.data
            outcomes.append(Outcome(record_id, verdict, 1))
        save_outcomes(session, run_id, SCHEMA, outcomes, QueuePolicy())
        finish_run(session, run_id)

    written = CliRunner().invoke(app, ["results", "--db", url, "--format", "csv"])
    assert written.exit_code == 0, written.output
    header, *rows = csv.reader(io.StringIO(written.stdout))
    assert header[8:] == ["who", "who_state", "amount", "amount_state", "category", "category_state"]
    by_key = {row[0]: dict(zip(header, row, strict=True)) for row in rows}
    assert {k: (r["who_state"], r["amount_state"]) for k, r in by_key.items()} == dict.fromkeys(
        texts, ("certified", "unsure"))  # fmt: skip
    assert by_key["lunch"]["amount"] in ("3", "42.8") and by_key["lunch"]["who"] == "Maria"

    safe = CliRunner().invoke(app, ["results", "--db", url, "--format", "csv", "--certified-only"])
    header, *rows = csv.reader(io.StringIO(safe.stdout))
    lunch = dict(zip(header, rows[0], strict=True))
    assert (lunch["who"], lunch["amount"], lunch["amount_state"]) == ("Maria", "", "unsure")

    lines = CliRunner().invoke(app, ["results", "--db", url, "--format", "jsonl"]).stdout.splitlines()
    values = json.loads(lines[0])["values"]
    assert list(values) == ["who", "amount", "category"] and values["amount"]["state"] == "unsure"
    assert values["amount"]["why"].startswith("unsure (score") and values["who"]["state"] == "certified"

    table = CliRunner().invoke(app, ["results", "--db", url]).stdout
    assert re.search(r"lunch\s+partial who=Maria amount=(3|42\.8)\? category=meals", table), table
    assert "a person settles the 2 unsure value(s) (marked ?): `formwork review --unsure --run 1" in table
