"""`formwork examples` writes the run's schema with solved examples from rows a person settled, only
values the text holds, a new x-version, and an audit never samples a record the prompt shows solved
(issue 53, deliver 2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy import select, update
from typer.testing import CliRunner

from formwork.db.models import Record, Run
from formwork.db.session import reader_factory, session_factory
from formwork.flows.audit import audit_page
from formwork.flows.cli import app
from formwork.schemas.examples import schema_examples
from formwork.schemas.registry import load_schema
from tests.audited_run import EXPENSE, store_run

runner = CliRunner()


def _settle(db_url: str, tmp_path: Path, action: str, value: Any) -> tuple[int, str, dict[str, Any]]:
    """Store a run of three records and settle r-002's unsure `who` (the readings disagree on it)."""
    stored = store_run(db_url, 3)
    with reader_factory(db_url)() as session:
        record_id, text = session.execute(select(Record.id, Record.text).where(Record.key == "r-002")).one()
    read = stored.truth["r-002"]["who"]
    line = {"run": stored.run_id, "record": "r-002", "record_id": record_id, "field": "who",
            "action": action, "value": read if value is None else value, "model_value": read,
            "model_state": "unsure", "at": "2026-01-02T03:04:05Z"}  # fmt: skip
    (tmp_path / "settle.jsonl").write_text(json.dumps(line) + "\n")
    settled = runner.invoke(app, ["settle", str(tmp_path / "settle.jsonl"), "--db", db_url])
    assert settled.exit_code == 0, settled.output
    return stored.run_id, text, stored.truth["r-002"]


def test_a_settled_row_becomes_an_example_of_a_new_schema_version(db_url: str, tmp_path: Path) -> None:
    run_id, text, truth = _settle(db_url, tmp_path, "accept", None)
    written = tmp_path / "expense-examples.json"
    made = runner.invoke(app, ["examples", "--run", str(run_id), "--out", str(written), "--db", db_url])
    assert made.exit_code == 0, made.output
    said = " ".join(made.output.split())
    assert "1 example(s) from rows a person settled" in said and "no calibration" in said
    schema = load_schema(written)  # the file loads: the schema's own check accepts the example
    (example,) = schema_examples(schema.body)
    assert example.text == text
    assert example.answer["who"] == truth["who"] and set(example.answer) == set(EXPENSE.properties)
    assert schema.version == EXPENSE.version + 1  # a new body never shares the old version's rows


def test_a_correction_the_text_does_not_hold_is_left_out_with_its_reason(db_url: str, tmp_path: Path) -> None:
    run_id, text, _ = _settle(db_url, tmp_path, "fix", "Zebulon Quartermaine")
    assert "Zebulon" not in text
    made = runner.invoke(app, ["examples", "--run", str(run_id), "--db", db_url])
    assert made.exit_code == 2
    said = " ".join(made.output.split())
    assert "no settled row makes an example" in said and "does not occur in the example's text" in said
    assert "Traceback" not in said


def test_without_a_settled_row_it_says_what_to_do(db_url: str) -> None:
    stored = store_run(db_url, 2)
    made = runner.invoke(app, ["examples", "--run", str(stored.run_id), "--db", db_url])
    assert made.exit_code == 2
    assert "formwork review --unsure" in " ".join(made.output.split())


def test_an_audit_never_samples_a_record_its_schema_shows_solved(db_url: str) -> None:
    stored = store_run(db_url, 4)
    with session_factory(db_url)() as session:
        text = session.scalars(select(Record.text).where(Record.key == "r-001")).one()
        body = EXPENSE.body | {"x-examples": [{"text": text, "answer": stored.truth["r-001"]}]}
        session.execute(update(Run).where(Run.id == stored.run_id).values(schema_body=body))
        session.commit()
        page, size = audit_page(session, stored.run_id, 10, seed=3)
    assert size == 3
    assert '"r-001"' not in page and '"r-000"' in page
