"""An audit of a real run, end to end: `formwork run` with the bundled model, the audit page of that run,
its export (here: every value the page shows marked right), `formwork audit calibrate`, and the next
`formwork run` of the same key applies that calibration and says it was measured on the user's records.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from formwork.db.models import Run
from formwork.db.session import session_factory
from formwork.flows.cli import app
from tests.run_exit import expected_exit

pytestmark = pytest.mark.slow
runner = CliRunner()


def _page_export(page: str) -> list[dict]:
    """What the page's Export writes when every field is answered "right" (flows/audit.js)."""
    data = json.loads(re.search(r'<script type="application/json" id="audit-data">(.*?)</script>', page)[1])
    meta = {"run": data["run"], "seed": data["seed"]}
    return [{"id": r["id"], "text": r["text"], "gold": r["values"],
             "meta": meta | {"record": r["key"], "record_id": r["record_id"]}}
            for r in data["records"]]  # fmt: skip


def test_a_run_applies_the_calibration_audited_on_its_own_records(
    prefect_harness, local_engine, monkeypatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("FORMWORK_REASONING_MAX_TOKENS", "32")
    monkeypatch.setenv("FORMWORK_MAX_ATTEMPTS", "1")
    db = f"sqlite:///{tmp_path}/audit.db"
    first = tmp_path / "first.jsonl"
    first.write_text('{"id": "a", "text": "Taxi 35 EUR, 2024-03-03, Tom"}\n'
                     '{"id": "b", "text": "Lunch 12.50 USD on 2024-03-04, Maria"}\n')  # fmt: skip
    ran = runner.invoke(app, ["run", str(first), "--schema", "expense", "--db", db])
    assert ran.exit_code == expected_exit(ran.output), ran.output

    page = tmp_path / "audit.html"
    made = runner.invoke(app, ["audit", "--run", "1", "--sample", "50", "--seed", "5", "--out", str(page),
                               "--db", db])  # fmt: skip
    assert made.exit_code == 0 and "2 records of run 1, seed 5" in " ".join(made.output.split())
    rows = _page_export(page.read_text(encoding="utf-8"))
    assert [r["id"] for r in rows] == ["a", "b"] and all(len(r["gold"]) == 6 for r in rows)
    export = tmp_path / "audit-run-1.jsonl"
    export.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")

    checked = runner.invoke(app, ["audit", "check", str(export), "--db", db])
    assert checked.exit_code == 0 and "audit of run 1: 2 records of expense@v3 (seed 5)" in checked.output
    calibrated = runner.invoke(app, ["audit", "calibrate", str(export), "--replace", "--db", db])
    assert calibrated.exit_code == 0, calibrated.output
    assert "0 of 6 fields certified" in calibrated.output  # two records certify nothing, and it says so

    second = tmp_path / "second.jsonl"
    second.write_text('{"id": "c", "text": "Hotel 300 GBP, 2024-03-05, Aiko"}\n')
    again = runner.invoke(app, ["run", str(second), "--schema", "expense", "--db", db])
    assert again.exit_code == expected_exit(again.output), again.output
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    said = f"calibrated on 2 of your own records on {today}"
    assert said in " ".join(again.output.replace("│", " ").split())
    with session_factory(db)() as session:
        run = session.get(Run, 2)
        assert (
            said in run.confidence["guarantee"]
            and run.confidence["key"] == session.get(Run, 1).confidence["key"]
        )
