"""A person settles every unsure value of a run in a real headless Chromium, by keyboard alone: the page
shows each row with the focused value's evidence highlighted; a accepts, f fixes (type, Enter), n sets
none, and the next row shows at once; the export, stored by `formwork settle`, makes each row `ok` with
the person's values beside the model's, which stay as the run stored them.

The run is stored through the real judge, decide and store (tests/audited_run.py) with no calibration,
so every value is unsure; record 3's category is read wrong and record 4 has no project.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from formwork.db.decisions import row_decisions
from formwork.db.models import Decision, Result
from formwork.db.session import reader_factory
from formwork.flows.cli import app
from formwork.flows.delivered import every_value
from tests.audited_run import EXPENSE, store_run
from tests.browser import press

FIELDS = list(EXPENSE.properties)
runner = CliRunner()


def _shown(browser: Any) -> tuple[str, dict[str, Any], str]:
    """The shown row's key, each open value as the page shows it, and the field in focus."""
    key = browser.find_element("css selector", "section.rec:not([hidden]) header b").text
    values = dict(
        browser.execute_script(
            "return Array.from(document.querySelectorAll('section.rec:not([hidden]) tr.frow'))"
            ".map(tr => [tr.dataset.f, JSON.parse(tr.querySelector('td.val').textContent)]);"
        )
    )
    focus = browser.find_element("css selector", "section.rec:not([hidden]) tr.focus").get_attribute("data-f")
    return key, values, focus


@pytest.mark.browser
def test_a_person_settles_a_runs_unsure_values_by_keyboard_and_the_rows_are_ok(
    browser, db_url: str, tmp_path: Path
) -> None:
    from selenium.webdriver.common.keys import Keys

    stored = store_run(db_url, 5, calibrated=False)
    with reader_factory(db_url)() as session:
        before = {r.record_id: (r.status, r.data, r.trust) for r in session.scalars(select(Result))}
    assert {status for status, _, _ in before.values()} == {"partial"}
    page = tmp_path / "settle.html"
    made = runner.invoke(app, ["review", "--unsure", "--run", str(stored.run_id), "--out", str(page),
                               "--db", db_url])  # fmt: skip
    assert made.exit_code == 0, made.output
    assert "30 unsure values in 5 rows" in " ".join(made.output.split())
    browser.get(page.as_uri())
    assert browser.execute_script("return document.scripts.length") == 2  # the data <script> is text

    keystrokes, started = 0, time.monotonic()
    for number in range(5):
        key, values, focus = _shown(browser)
        assert key == f"r-{number:03d}" and list(values) == FIELDS and focus == "who"
        marks = browser.find_elements("css selector", "section.rec:not([hidden]) .text mark")
        lit = [m.text for m in marks if m.value_of_css_property("background-color") != "rgba(0, 0, 0, 0)"]
        assert lit == [stored.truth[key]["who"]]  # only the focused value's evidence stays highlighted
        truth = stored.truth[key]
        for name in FIELDS:
            assert _shown(browser)[2] == name
            if truth[name] is None:
                typed = "n"
            elif values[name] == truth[name]:
                typed = "a"
            else:
                typed = f"f{truth[name]}{Keys.ENTER}"  # the model's value starts selected: typing replaces it
            press(browser, typed)
            keystrokes += 1 if len(typed) == 1 else len(typed) - 1
    elapsed = time.monotonic() - started
    progress = browser.find_element("id", "progress").text
    assert progress.startswith("5 of 5 rows settled (30 of 30 values)")
    # one key a value, and a fixed value's letters and Enter: 36 keys for 5 rows of 6 values (7.2 a row)
    assert keystrokes == 36 and elapsed < 30

    press(browser, "e")
    export = tmp_path / "downloads" / f"settle-run-{stored.run_id}.jsonl"
    for _ in range(50):
        if export.exists() and export.read_text().count("\n") == 30:
            break
        time.sleep(0.1)
    lines = [json.loads(line) for line in export.read_text().splitlines()]
    assert sorted(line["action"] for line in lines).count("fix") == 1
    assert {line["action"] for line in lines} == {"accept", "fix", "none"}

    settled = runner.invoke(app, ["settle", str(export), "--who", "maria", "--db", db_url])
    assert settled.exit_code == 0, settled.output
    assert "stored 30 decisions by maria on 5 rows; 5 rows are now ok" in " ".join(settled.output.split())
    with reader_factory(db_url)() as session:
        results = {r.record_id: r for r in session.scalars(select(Result))}
        decided = row_decisions(session, list(results), "expense", EXPENSE.version)
        fixed = session.scalars(select(Decision).where(Decision.action == "fix")).one()
        rows = {d.record_id for d in session.scalars(select(Decision))}
    assert {r.status for r in results.values()} == {"ok"}
    assert {i: (r.status, r.data, r.trust) for i, r in results.items()} == {
        i: ("ok", data, trust) for i, (_, data, trust) in before.items()
    }  # the model's reading stays as it was
    assert (fixed.field, fixed.value, fixed.model_value, fixed.model_state, fixed.who) == (
        "category", "office", "other", "unsure", "maria")  # fmt: skip
    assert rows == set(results)
    for record_id, result in results.items():
        found = every_value(FIELDS, _stored(result) | {"decisions": decided[record_id]})
        key = next(k for k, t in stored.truth.items() if found["who"].value == t["who"])
        assert {n: d.value for n, d in found.items()} == stored.truth[key]
        assert {d.state for d in found.values()} == {"confirmed"}
    row = _stored(results[fixed.record_id]) | {"decisions": decided[fixed.record_id]}
    category = every_value(FIELDS, row)["category"]
    assert (category.value, category.read, category.by) == ("office", "other", "maria")
    assert category.as_dict()["read"] == "other"

    again = runner.invoke(app, ["review", "--unsure", "--run", str(stored.run_id), "--out", str(page),
                                "--db", db_url])  # fmt: skip
    assert "0 unsure values in 0 rows" in " ".join(again.output.split())


def _stored(result: Result) -> dict[str, Any]:
    return {"status": result.status, "data": result.data, "errors": result.errors, "nulled": result.nulled,
            "evidence": result.evidence, "trust": result.trust}  # fmt: skip
