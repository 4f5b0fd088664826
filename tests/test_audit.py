"""`formwork audit check` and `formwork audit calibrate` on audit files, against runs stored by the real
judge, decide and store (tests/audited_run.py), on SQLite and PostgreSQL. No model is called.

The page's own export is pinned in a real browser (tests/test_audit_browser.py); here the exports are
written as it writes them, from each record's true answer, then damaged where a test says so.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import select
from typer.testing import CliRunner

from formwork.db.calibrations import AUDIT, policy_for, statement
from formwork.db.models import Calibration
from formwork.db.session import session_factory
from formwork.flows.cli import app
from formwork.tasks.evaluation.audit import needed, sample
from tests.audited_run import EXPENSE, KEY, export, store_run

runner = CliRunner()


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _words(output: str) -> str:
    """The output as one line: Rich wraps at 80 columns."""
    return " ".join(output.split())


def _table(output: str) -> dict[str, list[str]]:
    """A Rich table's rows by their first cell."""
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in output.splitlines() if "│" in line]
    return {row[0]: row[1:] for row in rows if row}


def test_a_sample_is_uniform_fixed_by_its_seed_and_in_stored_order() -> None:
    ids = list(range(100, 400))
    drawn = sample(ids, 50, seed=7)
    assert drawn == sample(list(reversed(ids)), 50, seed=7) == sorted(drawn)  # the seed alone decides
    assert len(set(drawn)) == 50 and set(drawn) <= set(ids) and drawn != sample(ids, 50, seed=8)
    assert sample(ids[:20], 50, seed=7) == ids[:20]  # a small run: every record
    counts = Counter(i for seed in range(600) for i in sample(ids, 50, seed))
    assert min(counts.values()) > 60 and max(counts.values()) < 140  # each about 600 * 50 / 300 = 100 times
    assert needed(EXPENSE) == 80  # six fields at 95%, together at 90%


def test_audit_check_on_a_damaged_export_reports_the_bound_broken(any_db_url: str, tmp_path: Path) -> None:
    stored = store_run(any_db_url, 60, wrong=False)
    clean = export(any_db_url, stored)
    checked = runner.invoke(app, ["audit", "check", str(_write(tmp_path / "clean.jsonl", clean)), "--db",
                                  any_db_url])  # fmt: skip
    assert checked.exit_code == 0, checked.output
    table = _table(checked.output)
    assert all(table[name][3] == "not contradicted" for name in EXPENSE.properties), checked.output
    assert "broken" not in checked.output and "verdict: not contradicted" in _words(checked.output)
    assert "audit of run 1: 60 records of expense@v3 (seed 0)" in checked.output

    flipped = [_flip_who(row, i) for i, row in enumerate(clean)]
    damaged = runner.invoke(app, ["audit", "check", str(_write(tmp_path / "damaged.jsonl", flipped)), "--db",
                                  any_db_url])  # fmt: skip
    assert damaged.exit_code == 0, damaged.output
    table, said = _table(damaged.output), _words(damaged.output)
    assert table["who"][0] == "36/48" and table["who"][3] == "broken"  # 12 flipped of 48 kept as certified
    assert table["date"][3] == "not contradicted" and "verdict: broken" in said
    assert "who is broken: 36 of 48 values kept as certified are right" in said
    assert "below the 95% calibration 1 states. Do not rely on who" in said
    assert "`formwork audit calibrate FILE...` on 94 or more audited records" in said  # look 1: level 0.05


def _flip_who(row: dict, i: int) -> dict:
    """Row `row`, its `who` answered as someone else in every fourth record whose who the run certified
    (it drops who in every fifth from the third: tests/audited_run.py), 12 of 60."""
    flip = i % 4 == 0 and i % 5 != 2
    return {**row, "gold": {**row["gold"], "who": "Someone Else"}} if flip else row


def test_audit_check_of_a_run_no_calibration_covered_says_there_is_nothing_to_check(
    db_url: str, tmp_path: Path
) -> None:
    stored = store_run(db_url, 30, calibrated=False)
    path = str(_write(tmp_path / "a.jsonl", export(db_url, stored)))
    checked = runner.invoke(app, ["audit", "check", path, "--db", db_url])
    table, said = _table(checked.output), _words(checked.output)
    assert checked.exit_code == 0, checked.output
    assert all(table[name][:4] == ["0/0", "-", "95%", "none certified"] for name in EXPENSE.properties)
    assert table["who"][4] == "30/30" and table["category"][4] == "26/30"  # read right, certified or not
    assert "the run applied uncalibrated: none: no calibration for expense@v3" in said
    assert "verdict: nothing to check: the run applied no calibration" in said and "broken" not in said


def test_audit_check_counts_none_in_the_text_both_ways(db_url: str, tmp_path: Path) -> None:
    stored = store_run(db_url, 30, wrong=False)
    rows = export(db_url, stored)
    nulls = sum(row["gold"]["project"] is None for row in rows)
    rows[1]["gold"]["who"] = None  # the text had no one, by this person's reading: the run said Tom
    checked = runner.invoke(app, ["audit", "check", str(_write(tmp_path / "a.jsonl", rows)), "--db", db_url])
    said = _words(checked.output)
    assert checked.exit_code == 0, checked.output
    assert f'"none in the text": the run said so {nulls} times and was right {nulls} of {nulls}' in said
    assert f"the text had none for {nulls + 1} values and the run said so for {nulls} of {nulls + 1}" in said


def test_audit_calibrate_on_two_audits_certifies_and_runs_like_them_say_so(
    any_db_url: str, tmp_path: Path
) -> None:
    first, second = store_run(any_db_url, 60), store_run(any_db_url, 60, first=60)
    files = [str(_write(tmp_path / f"audit-run-{s.run_id}.jsonl", export(any_db_url, s, seed=3)))
             for s in (first, second)]  # fmt: skip
    with session_factory(any_db_url)() as session:
        before = statement(policy_for(session, KEY).applied)
    preview = runner.invoke(app, ["audit", "calibrate", *files, "--dry-run", "--db", any_db_url])
    assert preview.exit_code == 0, preview.output
    assert (f"nothing stored and no level spent (look 1 is still to take); runs like this one still apply "
            f"{before}") in _words(preview.output)  # fmt: skip

    done = runner.invoke(app, ["audit", "calibrate", *files, "--replace", "--db", any_db_url])
    assert done.exit_code == 0, done.output
    table, said = _table(done.output), _words(done.output)
    certified = [name for name, cells in table.items() if name in EXPENSE.properties and cells[1] != "none"]
    assert certified and "category" not in certified  # one category in seven is wrong, and sure
    assert all(table[name][0] == "120" for name in EXPENSE.properties)
    assert f"120 audited records of run 1, 2: {len(certified)} of 6 fields certified" in said
    assert "more audited records narrow its bound, but cannot lift a field the run reads wrong" in said
    with session_factory(any_db_url)() as session:
        row = session.scalars(select(Calibration).order_by(Calibration.id.desc())).first()
        applied = policy_for(session, KEY).applied
    assert row.source == AUDIT and row.gold_size == 120 and row.run_id == first.run_id
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    assert statement(applied) == (
        f"calibration {row.id}: calibrated on 120 of your own records on {today}: {len(certified)} of 6 "
        "fields certified "
        "(target 95% per field, all fields together at 95% confidence), for records like those"
    )  # the first look of the audit spends half the error budget of 0.1 (tasks.evaluation.audit.look_level)
    assert "look 1 of this audit: level 0.05 of 0.1" in said
    assert f"Before: {before}. From now on: {statement(applied)}" in said


def test_audit_files_that_do_not_match_their_run_are_refused(db_url: str, tmp_path: Path) -> None:
    stored = store_run(db_url, 10)
    rows = export(db_url, stored)
    other_key = store_run(db_url, 5, key=replace(KEY, model="other-model"), first=10)
    cases = {
        "names run 99": [{**rows[0], "meta": {**rows[0]["meta"], "run": 99}}],
        "is not one of run 1's records": [{**rows[0], "meta": {**rows[0]["meta"], "record_id": 10_000}}],
        "the gold leaves out project": [{**rows[0], "gold": {**rows[0]["gold"], "project": ...}}],
    }
    cases["the gold leaves out project"][0]["gold"].pop("project")
    for expected, lines in cases.items():
        path = str(_write(tmp_path / "x.jsonl", lines))
        refused = runner.invoke(app, ["audit", "check", path, "--db", db_url])
        assert refused.exit_code == 2 and expected in _words(refused.output), refused.output
    again = [{**rows[0], "gold": {**rows[0]["gold"], "who": "Else"}}]
    files = [_write(tmp_path / "a.jsonl", rows), _write(tmp_path / "b.jsonl", again)]
    twice = runner.invoke(app, ["audit", "calibrate", *map(str, files), "--db", db_url])
    assert twice.exit_code == 2 and "was audited before with other answers" in _words(twice.output)
    mixed = [files[0], _write(tmp_path / "c.jsonl", export(db_url, other_key))]
    refused = runner.invoke(app, ["audit", "calibrate", *map(str, mixed), "--db", db_url])
    assert refused.exit_code == 2 and "different keys" in _words(refused.output)


def test_a_wrong_mark_whose_right_value_is_the_runs_own_counts_neither_way(
    db_url: str, tmp_path: Path
) -> None:
    """`w` then Enter on a page before issue 54 stored "wrong" with the run's value as gold, which check
    counted as right: such a field is left out of every count, and each is named in a warning."""
    stored = store_run(db_url, 60, wrong=False)
    rows = export(db_url, stored)
    marks = {name: "right" for name in EXPENSE.properties}
    said_wrong = [_flip_who(row, i) is not row for i, row in enumerate(rows)]  # 12 of the 48 certified
    for row, wrong in zip(rows, said_wrong, strict=True):
        row["meta"]["audited"] = marks | ({"who": "wrong"} if wrong else {})  # the gold stays the run's value
    path = str(_write(tmp_path / "a.jsonl", rows))
    checked = runner.invoke(app, ["audit", "check", path, "--db", db_url])
    assert checked.exit_code == 0, checked.output
    table, said = _table(checked.output), _words(checked.output)
    assert table["who"][0] == "36/36" and table["who"][4] == "48/48", checked.output  # 12 counted neither way
    assert table["date"][0] == "60/60" and table["date"][4] == "60/60"  # the rest of those rows still count
    assert said.count("marks who wrong and gives the value the run read as the right one") == sum(said_wrong)
    assert "record 'r-000' marks who wrong" in said and "counted neither right nor a correction" in said

    preview = runner.invoke(app, ["audit", "calibrate", path, "--dry-run", "--db", db_url])
    assert preview.exit_code == 0 and "counted neither right nor a correction" in _words(preview.output)
    rows[0]["gold"]["who"] = "Someone Else"  # a real correction stays one
    fixed = runner.invoke(app, ["audit", "check", str(_write(tmp_path / "b.jsonl", rows)), "--db", db_url])
    assert _words(fixed.output).count("marks who wrong") == sum(said_wrong) - 1
    assert _table(fixed.output)["who"][0] == "36/37", fixed.output


def test_the_page_saves_answers_under_its_database_and_everything_it_shows(db_url: str) -> None:
    """Issue 54 point 20: the key the page's answers are saved under changes with the database, a text
    or a value shown, and only with them (the browser side: tests/test_audit_page_integrity.py)."""
    import re

    from formwork.db.audits import database_identity, run_rows, run_schema
    from formwork.db.models import Run
    from formwork.flows.audit import render_audit

    store_run(db_url, 5)
    with session_factory(db_url)() as session:
        run = session.get(Run, 1)
        rows, schema, database = run_rows(session, 1), run_schema(run), database_identity(session, run)
        assert database_identity(session, run) == database  # the same database: the same stamp

    def key(rows: list, database: str = database) -> str:
        page = render_audit(1, schema, rows, 1, 5, None, database)
        return json.loads(re.search(r'id="audit-data">(.*?)</script>', page)[1])["page"]

    changed = {"value": [replace(rows[0], data={**rows[0].data, "who": "Else"}), *rows[1:]],
               "text": [replace(rows[0], text=rows[0].text + " "), *rows[1:]]}  # fmt: skip
    assert key(rows) == key(list(rows))
    assert len({key(rows), key(rows, "another database"), *(key(r) for r in changed.values())}) == 4
