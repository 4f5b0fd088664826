"""The audit page in a real headless Chromium: answers come back only to the very same page (issue 54,
point 20), "wrong" with the run's own value is refused (point 25), and the person marks blind: no
value's trust state and no row status is on the page (issue 52, point 7).

The runs are stored through the real judge, decide and store (tests/audited_run.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from formwork.flows.cli import app
from tests.audited_run import EXPENSE, store_run
from tests.browser import press

FIELDS = list(EXPENSE.properties)
runner = CliRunner()
pytestmark = pytest.mark.browser


def _page(db: str, out: Path, seed: int = 1, sample: int = 10) -> Path:
    made = runner.invoke(app, ["audit", "--run", "1", "--sample", str(sample), "--seed", str(seed), "--out",
                               str(out), "--db", db])  # fmt: skip
    assert made.exit_code == 0, made.output
    return out


def _progress(browser: Any) -> str:
    return browser.find_element("id", "progress").text


def _focused_answer(browser: Any) -> str:
    return browser.find_element("css selector", "section.rec:not([hidden]) tr.focus td.ans").text


def test_answers_come_back_only_to_the_same_page_of_the_same_database(browser, tmp_path: Path) -> None:
    first, other = f"sqlite:///{tmp_path / 'first.db'}", f"sqlite:///{tmp_path / 'other.db'}"
    store_run(first, 10)
    store_run(other, 10)  # the same run number, records, texts and values: another database
    browser.get(_page(first, tmp_path / "first.html").as_uri())
    press(browser, "r" * len(FIELDS) * 2)  # two records answered
    assert _progress(browser).startswith("2 of 10 records done (12 of 60 answers)")

    browser.get(_page(other, tmp_path / "other.html").as_uri())
    assert _progress(browser).startswith("0 of 10 records done (0 of 60 answers)")
    browser.get(_page(first, tmp_path / "first.html", seed=2).as_uri())  # another sample of the same run
    assert _progress(browser).startswith("0 of 10 records done")
    browser.get(_page(first, tmp_path / "again.html").as_uri())  # the same page, written again
    assert _progress(browser).startswith("2 of 10 records done (12 of 60 answers)")


def test_wrong_with_the_runs_own_value_is_refused_on_the_page(browser, db_url: str, tmp_path: Path) -> None:
    from selenium.webdriver.common.keys import Keys

    stored = store_run(db_url, 10)
    browser.get(_page(db_url, tmp_path / "audit.html").as_uri())
    key = browser.find_element("css selector", "section.rec:not([hidden]) header b").text
    who = stored.truth[key]["who"]
    press(browser, f"w{Keys.ENTER}")  # the box starts with the run's value
    assert "that is the value the run read" in _focused_answer(browser)
    assert _progress(browser).startswith("0 of 10 records done (0 of 60 answers)")
    box = browser.find_element("css selector", "section.rec:not([hidden]) tr.focus td.ans input")
    box.clear()
    box.send_keys(f" {who.upper()}  {Keys.ENTER}")  # the same, case and spaces aside
    assert "that is the value the run read" in _focused_answer(browser)
    press(browser, f"{Keys.ESCAPE}r")
    assert _progress(browser).startswith("0 of 10 records done (1 of 60 answers)")
    press(browser, f"w2023-01-01{Keys.ENTER}")  # a real correction is kept
    assert _progress(browser).startswith("0 of 10 records done (2 of 60 answers)")
    answers = browser.execute_script(
        "return Array.from(document.querySelectorAll('section.rec:not([hidden]) td.ans'))"
        ".map(c => c.textContent)"
    )
    assert answers[:2] == ["right", 'wrong → "2023-01-01"']


def test_the_person_marks_blind_no_value_shows_what_the_run_did(browser, db_url: str, tmp_path: Path) -> None:
    store_run(db_url, 10)  # certified, kept, dropped values and ok and partial rows among them
    browser.get(_page(db_url, tmp_path / "audit.html").as_uri())
    seen = []
    for _ in range(10):
        shown = browser.find_element("css selector", "section.rec:not([hidden])")
        header = shown.find_element("css selector", "tr").text
        seen.append(shown.text)
        assert header.split() == ["field", "the", "run", "read", "your", "answer"]
        press(browser, "\ue014")  # the next record
    said = " ".join(seen)
    for word in ("✓", "✗", "certified", "dropped", "kept", "unsure", "partial", " ok"):
        assert word not in said, word
    markup = browser.page_source
    assert "certified" not in markup.split("<footer>")[0].split('id="audit-data"')[0]
