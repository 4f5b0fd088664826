"""Calibrations are managed (issue 51 point 5): `formwork audit calibrate` refuses, without --replace, a
calibration that certifies fewer values than the one runs apply now (or that drops the values runs keep
unchecked where none applies) and says per field what would change; `formwork calibrations` lists stored
and shipped ones with whether the current settings apply each; `formwork calibrations remove ID --yes`
removes a stored one, after which the lookup no longer finds it.

Runs are stored by the real judge, decide and store (tests/audited_run.py) and calibrations by the real
`audit calibrate`, on real SQLite; no model is called.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from formwork.db.calibrations import applying, policy_for
from formwork.db.models import Calibration
from formwork.db.session import session_factory
from formwork.flows.cli import app
from formwork.tasks.evaluation.key import local_key
from formwork.tasks.evaluation.shipped import shipped_files
from formwork.tasks.settings import Settings
from tests.audited_run import EXPENSE, KEY, Stored, export, store_run

runner = CliRunner()


@pytest.fixture(autouse=True)
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    """A wide terminal, so each table row is one line."""
    monkeypatch.setenv("COLUMNS", "400")


def _audit_file(db: str, stored: Stored, tmp_path: Path) -> str:
    path = tmp_path / f"audit-run-{stored.run_id}.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in export(db, stored)), encoding="utf-8")
    return str(path)


def _words(output: str) -> str:
    return " ".join(output.split())


def _changes(output: str) -> dict[str, str]:
    """`audit calibrate`'s lines of what storing changes, by field."""
    after = output.split("what storing it changes, against")[1].splitlines()[1:]
    return dict(line.strip().split(": ", 1) for line in after if line.startswith("  "))


def _rows(output: str) -> dict[str, list[str]]:
    """A Rich table's rows by their first cell."""
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in output.splitlines() if "│" in line]
    return {row[0]: row[1:] for row in rows if row}


def _count(db: str) -> int:
    with session_factory(db)() as session:
        return session.scalar(select(func.count()).select_from(Calibration)) or 0


def _applied(db: str) -> int | str | None:
    with session_factory(db)() as session:
        return policy_for(session, KEY).applied["calibration"]


def test_a_calibration_certifying_fewer_values_is_refused_without_replace_and_says_what_changes(
    db_url: str, tmp_path: Path
) -> None:
    stored = store_run(db_url, 60)  # under a calibration that certifies all six fields
    before = _applied(db_url)
    audit = _audit_file(db_url, stored, tmp_path)

    refused = runner.invoke(app, ["audit", "calibrate", audit, "--db", db_url])
    assert refused.exit_code == 2, refused.output
    said, changes = _words(refused.output), _changes(refused.output)
    assert f"not stored: against calibration {before}, it would certify fewer values of" in said
    assert "category" in said.split("fewer values of")[1]  # one category in seven is wrong, and sure
    assert changes["category"].startswith("certified at 95% from score 0.9")
    assert changes["category"].endswith("-> not certified (its values dropped) (fewer certified)")
    assert _count(db_url) == 1 and _applied(db_url) == before

    replaced = runner.invoke(app, ["audit", "calibrate", audit, "--replace", "--db", db_url])
    assert replaced.exit_code == 0, replaced.output
    assert _count(db_url) == 2 and _applied(db_url) not in (None, before)


def test_an_audit_certifying_no_field_does_not_silently_drop_the_values_kept_unchecked(
    db_url: str, tmp_path: Path
) -> None:
    stored = store_run(db_url, 5, calibrated=False)  # a few records, no calibration: the new user's case
    refused = runner.invoke(
        app, ["audit", "calibrate", _audit_file(db_url, stored, tmp_path), "--db", db_url]
    )
    assert refused.exit_code == 2, refused.output
    said, changes = _words(refused.output), _changes(refused.output)
    assert "0 of 6 fields certified" in said
    assert "against no calibration (values kept unchecked), it would certify fewer values of" in said
    for field in EXPENSE.properties:
        assert changes[field] == ("kept unchecked where sure (no calibration applies) -> not certified (its "
                                  "values dropped) (fewer certified)")  # fmt: skip
    assert _count(db_url) == 0 and _applied(db_url) is None


def test_remove_takes_a_stored_calibration_away_and_the_lookup_falls_back(
    db_url: str, tmp_path: Path
) -> None:
    stored = store_run(db_url, 60)
    first = _applied(db_url)
    audit = _audit_file(db_url, stored, tmp_path)
    assert runner.invoke(app, ["audit", "calibrate", audit, "--replace", "--db", db_url]).exit_code == 0
    second = _applied(db_url)
    assert isinstance(second, int) and second != first

    asked = runner.invoke(app, ["calibrations", "remove", str(second), "--db", db_url])
    assert asked.exit_code == 2 and "pass --yes to remove it" in _words(asked.output)
    assert _applied(db_url) == second

    removed = runner.invoke(app, ["calibrations", "remove", str(second), "--yes", "--db", db_url])
    assert removed.exit_code == 0, removed.output
    assert f"removed calibration {second} (expense@v3, test-model, two-readings)" in _words(removed.output)
    assert f"now apply calibration {first}:" in _words(removed.output)
    with session_factory(db_url)() as session:
        assert session.get(Calibration, second) is None
        chosen = applying(session, KEY)
    assert chosen is not None and chosen[1] == first

    again = runner.invoke(app, ["calibrations", "remove", str(first), "--yes", "--db", db_url])
    assert again.exit_code == 0 and "now apply uncalibrated: none" in _words(again.output)
    assert _applied(db_url) is None
    gone = runner.invoke(app, ["calibrations", "remove", str(first), "--yes", "--db", db_url])
    assert gone.exit_code == 2 and f"there is no calibration {first} in this database" in _words(gone.output)


def test_a_shipped_calibration_cannot_be_removed_and_says_why(db_url: str) -> None:
    store_run(db_url, 1)
    shipped = shipped_files()[0]["file"]
    refused = runner.invoke(app, ["calibrations", "remove", shipped, "--yes", "--db", db_url])
    assert refused.exit_code == 2
    said = _words(refused.output)
    assert f"{shipped} is not the id of a calibration stored in this database" in said
    assert "cannot be removed" in said and "applies instead of it" in said
    assert "Traceback" not in refused.output


def test_the_list_shows_stored_and_shipped_calibrations_and_which_the_current_settings_apply(
    db_url: str, tmp_path: Path
) -> None:
    here = local_key(Settings(), EXPENSE)  # the bundled model, the default mode: what a plain run applies
    older, newer = store_run(db_url, 60, key=here), store_run(db_url, 60, key=here, first=60)
    audit = _audit_file(db_url, newer, tmp_path)
    assert runner.invoke(app, ["audit", "calibrate", audit, "--replace", "--db", db_url]).exit_code == 0
    store_run(db_url, 1)  # and one for another model
    listed = runner.invoke(app, ["calibrations", "--db", db_url])
    assert listed.exit_code == 0, listed.output
    rows = _rows(listed.output)
    assert older.run_id == 1 and rows["1"][:5] == ["expense@v3", here.model, here.mode, "local", "eval"]
    assert rows["1"][-1] == "no: calibration 2 applies instead (newer, or your own over a shipped one)"
    assert rows["2"][4] == "audit" and rows["2"][-1] == "yes"
    assert "not: " in rows["2"][6] and "category" in rows["2"][6].split("not: ")[1]
    assert rows["3"][-1].startswith(f"no: model test-model in it, {here.model} here; mode two-readings in it")
    for data in shipped_files():
        shipped = rows[data["file"]]
        assert shipped[:5] == [f"{data['key']['schema_name']}@v{data['key']['schema_version']}",
                               data["key"]["model"], data["key"]["mode"], "local", "shipped"]  # fmt: skip
        assert shipped[-1].startswith("no: ")
