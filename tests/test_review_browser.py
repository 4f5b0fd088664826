"""The review page in a real headless Chromium: highlights match the stored spans, filters hide records.

The database rows are written by the real store functions from verdicts the real `judge` gave on
hand-written formatter outputs (no model needed: the page shows whatever the results hold).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from formwork.db.session import session_factory
from formwork.db.store import QueuePolicy, save_outcomes, start_run, store_records
from formwork.schemas.registry import load_schema
from formwork.tasks.calls import CallLog, Outcome
from formwork.tasks.engines.base import Completion
from formwork.tasks.sources import InputRecord
from formwork.tasks.validate import judge
from tests.browser import chromium

EXPENSE = load_schema("expense")
GOOD = {"who": "Maria", "date": "2024-03-14", "amount": 42.8, "currency": "USD", "category": "meals",
        "project": None}  # fmt: skip
CASES = [  # key, text, formatter output
    ("ok-1", "Lunch on 14.03.2024, $42.80, paid by Maria", GOOD),
    ("partial-1", "Maria paid $42.80 for lunch on 14.03.2024", {**GOOD, "who": "Bob"}),
    ("failed-1", "Lunch, 42.80 USD, Maria, March 14th 2024", {**GOOD, "amount": 1.5}),
    ("ok-cjk", "张伟 <script>alert(1)</script> & 付款 50 元，2024年3月1日，项目 Apollo",
     {"who": "张伟", "date": "2024-03-01", "amount": 50, "currency": "CNY", "category": None,
      "project": "Apollo"}),
]  # fmt: skip


@pytest.fixture(scope="module")
def browser():
    driver = chromium()
    yield driver
    driver.quit()


def _store_run(db_url: str) -> list[Outcome]:
    notes = Completion("The payer is Maria; <b>bold</b> notes.", "stop", 10, 10, 0.1, "test")
    with session_factory(db_url)() as session:
        run_id = start_run(session, flow="test", source="cases", schema_name="expense", schema_version=1,
                           engine="none", reasoning_model="m", formatting_model="m")  # fmt: skip
        ids = store_records(session, "cases", [InputRecord(key, text, {}) for key, text, _ in CASES])
        outcomes = []
        for record_id, (_, text, output) in zip(ids, CASES, strict=True):
            shaped = Completion(json.dumps(output, ensure_ascii=False), "stop", 10, 10, 0.1, "test")
            call = CallLog("reasoning", 1, "m", "h", 64, "stop", output=notes.text)
            outcomes.append(Outcome(record_id, judge(EXPENSE, text, notes, shaped), 1, "stop", "stop",
                                    calls=[call]))  # fmt: skip
        save_outcomes(session, run_id, EXPENSE, outcomes, QueuePolicy())
    return outcomes


@pytest.mark.browser
def test_the_review_page_highlights_the_stored_spans_and_filters(
    browser, db_url: str, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from formwork.flows.cli import app

    outcomes = _store_run(db_url)
    assert [o.verdict.status for o in outcomes] == ["ok", "partial", "failed", "ok"]
    page = tmp_path / "review.html"
    result = CliRunner().invoke(app, ["review", "--db", db_url, "--out", str(page)])
    assert result.exit_code == 0, result.output
    browser.get(page.as_uri())

    marks = browser.execute_script(
        """return Array.from(document.querySelectorAll('section.rec')).map(section => {
             const found = {};
             for (const mark of section.querySelectorAll('mark'))
               for (const id of mark.dataset.s.split(' ')) found[id] = (found[id] || '') + mark.textContent;
             return found;
           });"""
    )
    assert len(marks) == len(CASES)
    for (_, text, _), outcome, shown in zip(CASES, outcomes, marks, strict=True):
        expected = {
            f"e{i}s{j}": text[s:e]
            for i, row in enumerate(outcome.verdict.evidence)
            for j, (s, e) in enumerate(row["spans"])
        }
        assert expected and shown == expected
    assert marks[3]["e0s0"] == "张伟"
    assert browser.execute_script("return document.scripts.length") == 1  # the record's <script> is text
    sections = browser.find_elements(By.CSS_SELECTOR, "section.rec")
    assert "<script>alert(1)</script>" in sections[3].text

    browser.find_element(By.CSS_SELECTOR, "input.status[value=failed]").click()
    assert [s.is_displayed() for s in sections] == [True, True, False, True]
    Select(browser.find_element(By.ID, "field")).select_by_visible_text("who")
    Select(browser.find_element(By.ID, "mode")).select_by_value("b")
    assert [s.is_displayed() for s in sections] == [False, True, False, False]  # only the ungrounded who
    browser.find_element(By.CSS_SELECTOR, "input.status[value=failed]").click()
    Select(browser.find_element(By.ID, "field")).select_by_visible_text("amount")
    assert [s.is_displayed() for s in sections] == [False, False, True, False]


def test_review_rejects_an_unknown_status(db_url: str, tmp_path: Path) -> None:
    from formwork.flows.cli import app

    result = CliRunner().invoke(
        app, ["review", "--db", db_url, "--status", "good", "--out", str(tmp_path / "r.html")]
    )
    assert result.exit_code == 2 and "unknown status good" in result.output
