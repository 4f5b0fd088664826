"""`formwork eval` scores what the user is handed, beside what the row kept (issue 51 point 1, eval side).

The rows are made by tasks.decide from readings the real judge judged (tests/test_decide.py's `read`)
and stored in the real SQLite store, as `formwork run` stores them: no model. Before, eval scored only a
row's `data`, so a value dropped as unsure but right (amount 42.8 at p 0.6) counted wrong, and its row
counted as a schema mismatch, though the user gets that value (flows.delivered.every_value).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from formwork.db.session import session_factory
from formwork.db.store import QueuePolicy, finish_run, save_outcomes, start_run, store_records
from formwork.flows.cli.common import out
from formwork.flows.cli.eval_reports import print_reports
from formwork.flows.eval_steps import score_run
from formwork.tasks.calls import Outcome
from formwork.tasks.decide import decide
from formwork.tasks.engines.base import Completion
from formwork.tasks.evaluation.gold import GoldRecord
from formwork.tasks.sources.records import InputRecord
from formwork.tasks.validate import judge
from tests.test_decide import CALIBRATED, NOTES, SCHEMA, TEXT, read

GOLD = {"who": "Maria", "amount": 42.8, "category": "meals"}


def _scored(tmp_path: Path) -> dict[str, Any]:
    """The report of a stored run of three records: `unsure`, whose amount is right but dropped as
    unsure (not in `data`); `refused`, whose who the judge refused (not in the text); `failed`, whose
    answer held no JSON."""
    no_json = judge(SCHEMA, TEXT, NOTES, Completion("I cannot answer", "stop", 1, 1, 0.0, "scripted"))
    readings = {
        "unsure": read(who=("Maria", 0.99), amount=(42.8, 0.6), category=("meals", 0.99)),
        "refused": read(who=("Bob", 0.99), amount=(42.8, 0.99), category=("meals", 0.99)),
        "failed": no_json,
    }
    with session_factory(f"sqlite:///{tmp_path}/eval.db")() as session:
        ids = store_records(session, "gold", [InputRecord(key, TEXT) for key in readings])
        run_id = start_run(session, SCHEMA, flow="test", source="gold", engine="local",
                           reasoning_model="test", formatting_model="test")  # fmt: skip
        outcomes = []
        for record_id, reading in zip(ids, readings.values(), strict=True):
            verdict = decide(SCHEMA, {"two-pass": reading, "notes-free": reading}, CALIBRATED, {}, False)
            outcomes.append(Outcome(record_id, verdict, 1))
        assert "amount" not in outcomes[0].verdict.data and outcomes[0].verdict.nulled == ["amount"]
        assert outcomes[2].verdict.status == "failed"
        save_outcomes(session, run_id, SCHEMA, outcomes, QueuePolicy())
        finish_run(session, run_id)
        golds = [GoldRecord(key, TEXT, GOLD) for key in readings]
        report, _ = score_run(session, SCHEMA, run_id, golds, "gold")
    return report


def test_a_right_value_dropped_as_unsure_counts_right_read_and_wrong_kept(tmp_path: Path) -> None:
    report = _scored(tmp_path)
    assert report["field_accuracy"]["amount"] == 1 / 3  # kept: the unsure 42.8 is not in the row's data
    assert report["read_accuracy"]["amount"] == 2 / 3  # read: the user is handed it, and it is right
    assert report["read_stated_accuracy"]["amount"] == 2 / 3
    assert report["read_accuracy"]["who"] == 1 / 3  # a refused value is null for the user too: wrong
    assert report["field_accuracy"]["who"] == 1 / 3


def test_a_row_whose_only_gap_is_unsure_values_is_no_schema_mismatch(tmp_path: Path) -> None:
    """On kept values both read rows were a schema mismatch; on delivered values only the refused one
    is, and the failed row, whose every value is refused (null), stays no JSON."""
    report = _scored(tmp_path)
    assert report["outcomes"] == {"no_json": 1, "schema_mismatch": 1, "content_wrong": 0, "all_correct": 1}
    assert report["kept_outcomes"]["schema_mismatch"] == 2


def test_the_per_field_table_shows_read_and_kept_per_mode(tmp_path: Path) -> None:
    """The table had one column per mode, the kept values': a right unsure amount read 33%."""
    report = _scored(tmp_path) | {"prompt_tokens_per_record": 0.0, "completion_tokens_per_record": 0.0,
                                  "wall_seconds_per_record": 0.0, "parse_steps": {}, "run_id": 1}  # fmt: skip
    with out.capture() as captured:
        print_reports({"one-pass": report})
    table = captured.get()
    assert "one-pass read" in table and "one-pass kept" in table
    assert any("amount" in line and "67%" in line and "33%" in line for line in table.splitlines())
