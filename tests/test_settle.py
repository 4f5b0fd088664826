"""`formwork settle` stores a person's decisions only where they fit what the run stored, a row becomes
`ok` only once every value is certified or confirmed, and a decision applies to the reading it was
made on, never to another (tests/test_settle_browser.py drives the page itself)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from typer.testing import CliRunner

from formwork.db.models import Decision, Record, Result
from formwork.db.session import reader_factory
from formwork.flows.cli import app
from formwork.flows.delivered import certified_only, every_value
from tests.audited_run import EXPENSE, store_run

FIELDS = list(EXPENSE.properties)
runner = CliRunner()


def _line(run: int, record_id: int, key: str, field: str, action: str, value: Any, read: Any) -> str:
    return json.dumps({"run": run, "record": key, "record_id": record_id, "field": field, "action": action,
                       "value": value, "model_value": read, "model_state": "unsure",
                       "at": "2026-01-02T03:04:05Z"})  # fmt: skip


def _unsure_row(db_url: str) -> tuple[int, int, str]:
    """The run's one row held back by an unsure value (record 2: the readings disagree on who)."""
    stored = store_run(db_url, 3)
    with reader_factory(db_url)() as session:
        record_id = session.scalars(select(Record.id).where(Record.key == "r-002")).one()
        assert session.scalars(select(Result.status).where(Result.record_id == record_id)).one() == "partial"
    return stored.run_id, record_id, stored.truth["r-002"]["who"]


def test_a_decision_on_a_value_the_run_did_not_read_is_refused_and_nothing_is_stored(
    db_url: str, tmp_path: Path
) -> None:
    run, record_id, who = _unsure_row(db_url)
    export = tmp_path / "settle.jsonl"
    lines = [_line(run, record_id, "r-002", "who", "accept", who, who),
             _line(run, record_id, "r-002", "who", "fix", "Bob", "Someone else")]  # fmt: skip
    export.write_text("\n".join(lines) + "\n")
    settled = runner.invoke(app, ["settle", str(export), "--db", db_url])
    assert settled.exit_code != 0
    said = " ".join(settled.output.split())
    assert "line 2: who of 'r-002' is not the value run" in said and "Traceback" not in said
    with reader_factory(db_url)() as session:
        assert session.scalar(select(func.count()).select_from(Decision)) == 0
        assert session.scalars(select(Result.status).where(Result.record_id == record_id)).one() == "partial"


def test_a_settled_row_is_ok_and_the_decision_holds_only_for_the_reading_it_was_made_on(
    db_url: str, tmp_path: Path
) -> None:
    run, record_id, who = _unsure_row(db_url)
    export = tmp_path / "settle.jsonl"
    export.write_text(_line(run, record_id, "r-002", "who", "fix", "Aiko Tanaka", who) + "\n")
    settled = runner.invoke(app, ["settle", str(export), "--who", "tom", "--db", db_url])
    assert settled.exit_code == 0, settled.output
    assert "1 rows are now ok" in " ".join(settled.output.split())
    with reader_factory(db_url)() as session:
        result = session.scalars(select(Result).where(Result.record_id == record_id)).one()
        decision = session.scalars(select(Decision)).one()
    assert result.status == "ok" and result.data.get("who") is None  # the model's reading is untouched
    assert (decision.value, decision.model_value, decision.who) == ("Aiko Tanaka", who, "tom")
    assert decision.decided_at.isoformat().startswith("2026-01-02T03:04:05")
    decisions = {"who": {"value": "Aiko Tanaka", "model_value": who, "action": "fix", "who": "tom",
                         "at": "2026-01-02T03:04:05Z"}}  # fmt: skip
    row = {"status": result.status, "data": result.data, "errors": result.errors, "nulled": result.nulled,
           "evidence": result.evidence, "trust": result.trust}  # fmt: skip
    found = every_value(FIELDS, row | {"decisions": decisions})["who"]
    assert (found.state, found.value, found.read, found.by) == ("confirmed", "Aiko Tanaka", who, "tom")
    assert certified_only(FIELDS, row | {"decisions": decisions})["who"] == "Aiko Tanaka"
    other = decisions["who"] | {"model_value": "Someone else"}  # a later reading that differs: unsure again
    assert every_value(FIELDS, row | {"decisions": {"who": other}})["who"].state == "unsure"

    page = tmp_path / "settle.html"
    again = runner.invoke(app, ["review", "--unsure", "--run", str(run), "--out", str(page), "--db", db_url])
    assert "0 unsure values in 0 rows" in " ".join(again.output.split())
    for flags in ([], ["--certified-only"]):  # what a user reads: the person's value, the model's beside it
        shown = runner.invoke(app, ["results", "--run", str(run), "-f", "jsonl", "--db", db_url, *flags])
        rows = {r["record"]: r for r in map(json.loads, shown.stdout.splitlines())}
        assert rows["r-002"]["values"]["who"] == {"value": "Aiko Tanaka", "state": "confirmed", "score": None,
                                                  "threshold": None, "by": "tom", "read": who,
                                                  "why": f"fixed by tom on 2026-01-02T03:04:05Z; the "
                                                         f'model read "{who}" (unsure)'}  # fmt: skip


def test_a_row_with_a_value_left_unsure_stays_partial(db_url: str, tmp_path: Path) -> None:
    stored = store_run(db_url, 1, calibrated=False)  # every value unsure
    with reader_factory(db_url)() as session:
        record_id = session.scalars(select(Record.id)).one()
    export = tmp_path / "settle.jsonl"
    export.write_text(_line(stored.run_id, record_id, "r-000", "who", "accept", "Maria", "Maria") + "\n")
    settled = runner.invoke(app, ["settle", str(export), "--db", db_url])
    assert "0 rows are now ok" in " ".join(settled.output.split()), settled.output
    with reader_factory(db_url)() as session:
        assert session.scalars(select(Result.status)).one() == "partial"


def test_settle_and_the_unsure_page_say_what_is_wrong_in_one_line(db_url: str, tmp_path: Path) -> None:
    run, record_id, who = _unsure_row(db_url)
    unreachable = "postgresql://formwork:pw-settle@127.0.0.1:9/formwork"  # port 9: nothing listens
    export = tmp_path / "settle.jsonl"
    export.write_text(_line(run, record_id, "r-002", "who", "keep", who, who) + "\n")
    cases = {
        "no such file": (["settle", str(tmp_path / "missing.jsonl"), "--db", db_url], "cannot read"),
        "an unknown action": (["settle", str(export), "--db", db_url], "action 'keep': use one of accept"),
        "another run's page": (["settle", str(export), "--db", f"sqlite:///{tmp_path / 'other.db'}"],
                               "there is no database at"),
        "a dead server": (["settle", str(export), "--db", unreachable], "cannot open the database"),
        "--unsure with --status": (["review", "--unsure", "--status", "ok", "--out", str(tmp_path / "p.html"),
                                    "--db", db_url], "leave out --status"),
    }  # fmt: skip
    for case, (args, said) in cases.items():
        result = runner.invoke(app, args)
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert result.exit_code != 0 and len(lines) == 1 and "Traceback" not in result.output, (case, lines)
        assert said in " ".join(result.output.split()), (case, result.output)
        assert "pw-settle" not in result.output
