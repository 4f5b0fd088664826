"""Issue 54 points 19, 22 and 26: what the CLI says about a database it cannot use, a run that is not
there, and a record's control characters.

- Every command that opens the database answers a mistyped, missing or unreachable one with one line
  (its URL redacted, what failed, what to fix) and exit 1, never a traceback (22).
- A read-only command refuses a SQLite file that does not exist, without creating it, and a run number
  the database does not hold, instead of answering as if they were empty (26).
- `formwork results` shows an id's or value's control characters escaped; the exports keep them (19).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from formwork.db.session import session_factory
from formwork.db.store import QueuePolicy, finish_run, save_outcomes, start_run, store_records
from formwork.flows.cli import app
from formwork.schemas.registry import load_schema
from formwork.tasks.calls import Outcome
from formwork.tasks.sources import InputRecord
from formwork.tasks.validate import Verdict

EXPENSE = load_schema("expense")
SECRET = "pw-cli-errors-54"

# every command that opens the database, with what it needs besides --db
COMMANDS = {
    "results": ["results"],
    "results jsonl": ["results", "--format", "jsonl"],
    "queue": ["queue"],
    "requeue": ["requeue", "1"],
    "retry": ["retry"],
    "review": ["review", "--out", "{tmp}/r.html"],
    "audit": ["audit", "--out", "{tmp}/a.html"],
    "audit check": ["audit", "check", "{tmp}/a.jsonl"],
    "audit calibrate": ["audit", "calibrate", "{tmp}/a.jsonl"],
    "eval": ["eval", "{tmp}/gold.jsonl", "--schema", "expense"],
}
# the commands that only read what a run stored (requeue changes one entry, which must exist already)
READ_ONLY = ("results", "results jsonl", "queue", "requeue", "review", "audit", "audit check",
             "audit calibrate")  # fmt: skip


def _invoke(command: str, db: str, tmp_path: Path) -> Result:
    args = [a.replace("{tmp}", str(tmp_path)) for a in COMMANDS[command]]
    return CliRunner().invoke(app, [*args, "--db", db])


def _one_line(result: Result, *said: str) -> str:
    """The error, checked to be one line with no traceback, and to say each of `said`."""
    lines = [line for line in result.output.splitlines() if line.strip()]
    error = [line for line in lines if line.startswith("error:")]
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output and len(error) == 1, result.output
    for words in said:
        assert words in error[0], error[0]
    return error[0]


@pytest.mark.parametrize("command", list(COMMANDS))
def test_an_unreachable_database_is_one_line_with_its_url_redacted(command: str, tmp_path: Path) -> None:
    url = f"postgresql://formwork:{SECRET}@127.0.0.1:9/formwork"  # port 9 (discard): nothing listens
    result = _invoke(command, url, tmp_path)
    assert result.exit_code == 1, result.output
    said = _one_line(result, "cannot open the database", "127.0.0.1:9", "start the database")
    assert SECRET not in result.output and "***" in said


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_mistyped_database_url_is_one_line(command: str, tmp_path: Path) -> None:
    result = _invoke(command, f"postgresq://formwork:{SECRET}@localhost/formwork", tmp_path)
    assert result.exit_code == 1, result.output
    _one_line(result, "cannot open the database", "sqlite:///PATH or postgresql://")
    assert SECRET not in result.output


def test_a_file_that_is_no_database_is_one_line(tmp_path: Path) -> None:
    notes = tmp_path / "notes.db"
    notes.write_text("these are notes, not a database\n" * 100)
    result = _invoke("results", f"sqlite:///{notes}", tmp_path)
    assert result.exit_code == 1, result.output
    _one_line(result, "not a Formwork database")


@pytest.mark.parametrize("command", READ_ONLY)
def test_a_read_only_command_refuses_a_sqlite_file_that_is_not_there(command: str, tmp_path: Path) -> None:
    missing = tmp_path / "mistyped.db"
    result = _invoke(command, f"sqlite:///{missing}", tmp_path)
    assert result.exit_code == 1, result.output
    _one_line(result, "there is no database at", "mistyped.db")
    assert not missing.exists() and not list(tmp_path.glob("mistyped.db*"))  # nor its WAL files


def _stored_run(db_url: str, key: str = "k1", data: dict | None = None) -> int:
    with session_factory(db_url)() as session:
        [record_id] = store_records(session, "test", [InputRecord(key, "Lunch 12.50 EUR at Bistro")])
        run_id = start_run(session, EXPENSE, flow="test", source="test", engine="local",
                           reasoning_model="m", formatting_model="m")  # fmt: skip
        verdict = Verdict("partial", data or {"who": "Bistro"}, ["amount: unsure"])
        save_outcomes(session, run_id, EXPENSE, [Outcome(record_id, verdict, 1)], QueuePolicy())
        finish_run(session, run_id)
    return run_id


@pytest.mark.parametrize("command", ["results", "review", "audit"])
def test_a_run_number_the_database_does_not_hold_is_refused(command: str, db_url: str, tmp_path) -> None:
    run_id = _stored_run(db_url)
    args = [a.replace("{tmp}", str(tmp_path)) for a in COMMANDS[command]]
    result = CliRunner().invoke(app, [*args, "--run", str(run_id + 41), "--db", db_url])
    assert result.exit_code == 2, result.output
    _one_line(result, f"there is no run {run_id + 41}", f"the latest is run {run_id}")
    shown = CliRunner().invoke(app, ["results", "--run", str(run_id), "--db", db_url])
    assert shown.exit_code == 0 and "Bistro" in shown.output, shown.output


def test_results_of_a_database_without_a_run_say_so(db_url: str) -> None:
    session_factory(db_url)  # the database is made (migrated) but holds no run
    result = CliRunner().invoke(app, ["results", "--db", db_url])
    assert result.exit_code == 2, result.output
    _one_line(result, "no run in this database yet")


def test_results_show_control_characters_escaped_and_exports_keep_them(db_url: str) -> None:
    key, value = "k\x1b]0;pwned\x07", "Bistro\x1b[2J\x1b]52;c;ZWNobyBoaQ==\x07\u202e"
    run_id = _stored_run(db_url, key, {"who": value})
    shown = CliRunner().invoke(app, ["results", "--run", str(run_id), "--db", db_url])
    assert shown.exit_code == 0, shown.output
    assert not any(c in shown.stdout for c in "\x1b\x07\u202e"), repr(shown.stdout)
    assert "k\\x1b]0;pw" in shown.stdout and "Bistro\\x1b[2J" in shown.stdout
    jsonl = CliRunner().invoke(app, ["results", "--run", str(run_id), "--format", "jsonl", "--db", db_url])
    row = json.loads(jsonl.stdout.splitlines()[0])
    assert (row["record"], row["data"]["who"]) == (key, value)
    written = CliRunner().invoke(app, ["results", "--run", str(run_id), "--format", "csv", "--db", db_url])
    header, first = list(csv.reader(io.StringIO(written.stdout)))[:2]
    assert dict(zip(header, first, strict=True))["who"] == value
