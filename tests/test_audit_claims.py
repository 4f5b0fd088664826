"""Issue 52 points 2 and 7, the audit side of pooled claims and record units: `formwork audit calibrate
--claim` certifies what `formwork eval --calibrate --claim` certifies, at its look's level; an audit of a
run whose calibration pooled fields judges the pool against its own target; a list field's values read
are counted by record; what a field needs is counted over the claim's tests. No model: the audited rows
and the applied calibration are built here, or stored by tests/audited_run.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console
from typer.testing import CliRunner

from formwork.flows.audit import _note
from formwork.flows.cli import app
from formwork.flows.cli.audit_check import _claims_table
from formwork.schemas.registry import load_schema
from formwork.tasks.confidence.certify import LEVEL, field_level, values_needed
from formwork.tasks.confidence.readings import PathReading
from formwork.tasks.evaluation.audit import Audited, check_audit, look_level, needed
from tests.audited_run import EXPENSE, export, store_run

runner = CliRunner()
POOL = ["who", "date"]


def _write(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


def _words(output: str) -> str:
    return " ".join(output.split())


def _table(output: str) -> dict[str, list[str]]:
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in output.splitlines() if "│" in line]
    return {row[0]: row[1:] for row in rows if row}


def test_audit_calibrate_certifies_the_claim_named_as_eval_does_at_its_looks_level(
    db_url: str, tmp_path: Path
) -> None:
    """--claim pooled:who,date: who and date share one threshold and one bound, the summary says it is
    pooled and at which level; a claim naming no field is one line, and spends no look."""
    first, second = store_run(db_url, 60), store_run(db_url, 60, first=60)
    files = [
        _write(tmp_path / f"audit-run-{s.run_id}.jsonl", export(db_url, s, seed=3)) for s in (first, second)
    ]

    bad = runner.invoke(app, ["audit", "calibrate", *files, "--claim", "pooled:who,nobody", "--db", db_url])
    assert bad.exit_code == 2 and "--claim pools nobody: no field of expense" in bad.output
    assert len(bad.output.strip().splitlines()) == 1 and "Traceback" not in bad.output
    odd = runner.invoke(app, ["audit", "calibrate", *files, "--claim", "together", "--db", db_url])
    assert odd.exit_code == 2 and "--claim is per-field, pooled or pooled:FIELD,FIELD" in odd.output

    pooled = runner.invoke(app, ["audit", "calibrate", *files, "--claim", "pooled:date,who", "--dry-run",
                                 "--db", db_url])  # fmt: skip
    assert pooled.exit_code == 0, pooled.output
    table, said = _table(pooled.output), _words(pooled.output)
    assert table["who"][1] == table["date"][1] != "none" and table["who"][3] == table["date"][3]
    assert table["who"][0] == "120"
    assert "pooled over who, date: target 95% over their kept values together, not per field" in said
    assert "certified at look 1's level 0.95: pooled over who, date" in said

    per_field = runner.invoke(app, ["audit", "calibrate", *files, "--dry-run", "--db", db_url])
    assert per_field.exit_code == 0 and "pooled" not in per_field.output
    assert "target 95% per field" in _words(per_field.output)

    stored = runner.invoke(app, ["audit", "calibrate", *files, "--replace", "--db", db_url])
    assert "look 1 of this audit" in _words(stored.output)
    pooled_again = ["--claim", "pooled:who,date", "--replace", "--db", db_url]
    again = runner.invoke(app, ["audit", "calibrate", *files, *pooled_again])
    assert again.exit_code == 0, again.output  # another claim on the same answers is another test
    assert "look 2 of this audit: level 0.025" in _words(again.output)
    assert "certified at look 2's level 0.975: pooled over who, date" in _words(again.output)


def _entry(path: str, field: str, value: object, certified: bool = True) -> dict[str, Any]:
    reading = PathReading(value, 0.99, "passed", "exact", True).as_dict()
    return {"path": path, "field": field, "readings": {"two-pass": reading}, "reading": "two-pass",
            "certified": certified, "offered": 5, "competes": False}  # fmt: skip


def _expense(records: int, wrong: int) -> list[Audited]:
    """Expense records, every value certified; who and date wrong in the first `wrong`."""
    rows = []
    for r in range(records):
        gold = {"who": f"P{r}", "date": "2024-01-01", "amount": 5.0, "currency": "EUR", "category": "meals",
                "project": None}  # fmt: skip
        read = gold | ({"who": "Else", "date": "2023-12-31"} if r < wrong else {})
        trust = [_entry(name, name, value) for name, value in read.items()]
        rows.append(Audited(f"r{r}", "ok", trust, gold))
    return rows


def _pooled_applied() -> dict[str, Any]:
    """A run's stored calibration pooling who and date at 90% (the others per field at 95%), five tests."""
    share = field_level(LEVEL, 5)
    names = list(EXPENSE.properties)
    return {"calibration": 7, "target": 0.95, "level": LEVEL,
            "targets": {name: 0.9 if name in POOL else 0.95 for name in names},
            "levels": dict.fromkeys(names, share), "pools": dict.fromkeys(POOL, POOL)}  # fmt: skip


def test_a_broken_pooled_claim_is_judged_against_the_pools_own_target() -> None:
    """who and date pooled at 90%: 80 of 100 pooled values right is broken against 90%, the sentence and
    the table say 90% (the pool's target), never the default 95% its name would look up."""
    applied = _pooled_applied()
    report = check_audit(EXPENSE, _expense(50, 10), applied)
    pooled = next(c for c in report.claims if c.pool)
    assert (pooled.name, pooled.correct, pooled.kept, pooled.target) == (
        "pooled over who, date",
        80,
        100,
        0.9,
    )
    (sentence,) = report.broken(applied)
    assert (
        "80 of 100 values kept as certified are right" in sentence
        and "below the 90% calibration 7" in sentence
    )
    console = Console(width=200, record=True)
    console.print(_claims_table(report))
    row = _table(console.export_text())["pooled over who, date"]
    assert row[0] == "80/100" and row[2] == "90%" and row[3] == "broken"
    assert row[4] == "80/100"  # read right over the pool's fields, certified or not


def test_values_read_of_a_list_field_are_counted_by_record() -> None:
    """Two receipts: three items all right, and two items one of them wrong: 1 of 2 records read right,
    as calibration and verification count a list field, not 4 of 5 items."""
    schema = load_schema("receipt")
    rows = []
    for r, names in enumerate([["tea", "milk", "bread"], ["soap", "rice"]]):
        gold = {"merchant": "Shop", "items": [{"description": name} for name in names]}
        trust = [_entry("merchant", "merchant", "Shop")]
        read = ["oats" if (r, j) == (1, 1) else name for j, name in enumerate(names)]
        trust += [_entry(f"items[{j}].description", "items[].description", value, certified=False)
                  for j, value in enumerate(read)]  # fmt: skip
        rows.append(Audited(f"r{r}", "partial", trust, gold))
    report = check_audit(schema, rows, {})
    assert report.read["items[].description"] == (1, 2) and report.read["merchant"] == (2, 2)


def test_what_a_field_needs_is_counted_over_the_claims_tests_at_the_next_looks_level() -> None:
    """Six fields per field: 94 values at look 1 (six tests sharing 0.05); who and date pooled: five
    tests, 90; every field pooled: one test, 59 kept values of the pool."""
    assert needed(EXPENSE, 0.95, 1 - look_level(1)) == 94
    assert needed(EXPENSE, 0.95, 1 - look_level(1), POOL) == values_needed(0.95, field_level(0.95, 5)) == 90
    assert needed(EXPENSE, 0.95, 1 - look_level(1), list(EXPENSE.properties)) == 59
    report = check_audit(EXPENSE, _expense(50, 0), _pooled_applied(), look=1)
    assert report.to_calibrate == 90 and report.needed == values_needed(0.95, field_level(LEVEL, 5)) == 77


def test_the_page_counts_what_a_field_needs_over_the_runs_claims() -> None:
    """A run whose calibration pooled who and date: five tests share look 1's 0.05, so 90, not 94."""
    note = _words(_note(3, EXPENSE, 30, _pooled_applied(), 1))
    assert "(who, date pooled as one claim, their values counted together)" in note
    assert "a field needs 90 of its values kept and right" in note
    assert "a field needs 94 of its values" in _words(_note(3, EXPENSE, 30, {"target": 0.95}, 1))
