"""Issue 52 point 4: the stronger reader of a cascade certified by a calibration measured on the records
its first reader escalates, stored with a key naming both readers and the first one's calibration.

No model: the runs, their rows (judged by the real judge from answers written at stated probabilities,
tests.test_decide) and the calibrations are built here and stored in SQLite; the lookup, the flows'
policy, the cascade and `formwork eval --escalated-from` are the product's own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from formwork.db.calibration_store import shipped_data, store_calibration
from formwork.db.calibrations import find_calibration, policy_for
from formwork.db.escalated_calibrations import (
    escalated_run_policy,
    escalation_reach,
    find_escalated,
    first_identity,
    first_readers,
)
from formwork.db.models import Calibration, Record, Run
from formwork.db.session import session_factory
from formwork.db.store import QueuePolicy, save_outcomes, start_run, store_records
from formwork.flows.cli import app
from formwork.schemas.registry import Schema, load_checked_schema
from formwork.tasks.calls import Outcome
from formwork.tasks.confidence.certify import LEVEL
from formwork.tasks.confidence.policy import Policy
from formwork.tasks.confidence.score import ScoreModel
from formwork.tasks.decide import decide
from formwork.tasks.escalation import MEASURED_ON_ALL, combine, escalated
from formwork.tasks.evaluation.calibration import Calibrated, GoldRow
from formwork.tasks.evaluation.key import CalibrationKey, pipeline_version
from formwork.tasks.sources import InputRecord
from formwork.tasks.validate import Verdict
from tests.test_decide import BODY, TEXT, claims, read

SETUP = "smollm2-135m@two-pass"  # the reader conftest's runs are read as
ALONE = ScoreModel({"own": 1.0})  # a score that is each value's own probability
GOLD = {"who": "Maria", "amount": 42.8, "category": "meals"}
runner = CliRunner()


@pytest.fixture
def schema(tmp_path: Path) -> Schema:
    path = tmp_path / "decide_test.json"
    path.write_text(json.dumps(BODY), encoding="utf-8")
    return load_checked_schema(str(path))


def _key(schema: Schema, model: str, mode: str) -> CalibrationKey:
    return CalibrationKey(schema.name, schema.version, schema.digest, model, None, "local", mode, True, model,
                          "s", pipeline_version())  # fmt: skip


def _store(session: Any, key: CalibrationKey, threshold: float | None, escalated_from: str | None = None
           ) -> Calibration:  # fmt: skip
    """A calibration of `key` whose score is each value's probability, certifying every field from
    `threshold` (None: none)."""
    found = Calibrated(ALONE, claims(threshold), 0, 0, LEVEL)
    return store_calibration(session, key, found, 0.95, gold_hash="h", gold_size=100, run_id=None,
                             escalated_from=escalated_from)  # fmt: skip


def _verdict(schema: Schema, who: float, amount: float = 0.99) -> Verdict:
    """A row read at these probabilities of who and amount (category sure), held to a threshold of 0.9."""
    found = read(schema, TEXT, who=("Maria", who), amount=(42.8, amount), category=("meals", 0.99))
    return decide(schema, {"one-pass": found}, Policy("calibrated", ALONE, claims(0.9)), {}, False)


def _run(session: Any, schema: Schema, source: str, applied: dict[str, Any], rows: dict[str, Verdict],
         flow: str = "evaluate") -> int:  # fmt: skip
    """A finished run of `flow` that applied `applied` and stored `rows` (record key -> verdict)."""
    run = start_run(session, schema, flow=flow, source=source, engine="local", reasoning_model="m",
                    formatting_model="m", confidence=applied, setup=SETUP)  # fmt: skip
    ids = store_records(session, source, [InputRecord(key, TEXT, {}) for key in rows])
    outcomes = [Outcome(i, verdict, 1) for i, verdict in zip(ids, rows.values(), strict=True)]
    save_outcomes(session, run, schema, outcomes, QueuePolicy())
    return run


def test_the_key_round_trips_and_matches_no_other_first_reader_nor_calibration(
    db_url: str, schema: Schema
) -> None:
    """Stored for escalations from the small reader under its calibration, the large reader's calibration
    is found for exactly those; not for another first reader, not for the small reader under another
    calibration, and never for the large reader's own runs (nor shipped, which would make it so)."""
    small, other, large = (
        _key(schema, "small", "one-pass"),
        _key(schema, "other", "one-pass"),
        _key(schema, "large", "two-pass"),
    )
    with session_factory(db_url)() as session:
        first, stricter, someone = (
            _store(session, small, 0.9),
            _store(session, small, 0.95),
            _store(session, other, 0.9),
        )
        identity = first_identity(first)
        assert identity.startswith("small@one-pass:")
        assert identity not in {first_identity(stricter), first_identity(someone)}
        stored = _store(session, large, 0.5, escalated_from=identity)
        session.commit()
        assert find_escalated(session, large, identity) == stored
        assert find_escalated(session, large, first_identity(someone)) is None
        assert find_escalated(session, large, first_identity(stricter)) is None
        assert find_escalated(session, other, identity) is None  # another stronger reader
        assert find_calibration(session, large) is None
        assert policy_for(session, large).policy.model is None  # its own runs: uncalibrated
        with pytest.raises(ValueError, match="holds only for escalations from small@one-pass"):
            shipped_data(stored)


def _cascade(
    db_url: str, schema: Schema, escalated_threshold: float | None
) -> tuple[Verdict, dict[str, Any]]:
    """The small reader's production run leaves `who` unsure (0.5 under 0.9); the large reader's
    escalation run (its own calibration from 0.5, measured on all records) reads who at 0.97 and amount
    at 0.6; where given, a calibration of it measured on what the small reader escalates (from
    `escalated_threshold`) is stored. The row the cascade delivers, as the reprocessing flow decides it,
    and what the escalation run states it holds values to."""
    small, large = _key(schema, "small", "one-pass"), _key(schema, "large", "two-pass")
    with session_factory(db_url)() as session:
        first = _store(session, small, 0.9)
        _store(session, large, 0.5)  # measured on all records
        if escalated_threshold is not None:
            _store(session, large, escalated_threshold, escalated_from=first_identity(first))
        session.commit()
        applied = {"calibration": first.id, "key": small.as_dict()}
        row = _verdict(schema, who=0.5)
        _run(session, schema, "in.jsonl", applied, {"r": row}, flow="batch_extract")
        records = list(session.scalars(select(Record.id)))
        (reader,) = first_readers(session, records, schema.name, schema.version).values()
        own = policy_for(session, large).applied | {"key": large.as_dict()}  # as run_policy stores it
        escalation = start_run(session, schema, flow="reprocess_failed", source=schema.source, engine="local",
                               reasoning_model="m", formatting_model="m", setup=SETUP,
                               confidence=own)  # fmt: skip
        found = escalated_run_policy(session, escalation, reader)
        session.commit()
        stated = session.get(Run, escalation).confidence
    policy = found.policy if found is not None else Policy("calibrated", ALONE, claims(0.5))
    found_large = read(schema, TEXT, who=("Maria", 0.97), amount=(42.8, 0.6), category=("meals", 0.99))
    second = decide(schema, {"one-pass": found_large}, policy, {}, False)
    first_row = {"data": row.data, "trust": row.trust, "evidence": row.evidence}
    return combine(
        schema, first_row, "small", second, "large", measured_on_escalated=found is not None
    ), stated


def test_a_cascade_certifies_the_stronger_readers_value_by_its_calibration_on_escalated_records(
    db_url: str, schema: Schema
) -> None:
    """With a calibration measured on what the small reader escalates (from 0.9), the large reader's who
    (0.97) is certified by it; its amount (0.6) is below that threshold, so the small reader's certified
    amount stays. The run states the calibration and the joint level."""
    row, stated = _cascade(db_url, schema, 0.9)
    assert stated["escalated_from"].startswith("small@one-pass:") and stated["joint_level"] == pytest.approx(
        0.8
    )
    assert "hold together at 80%" in stated["guarantee"]
    by_path = {t["path"]: t for t in row.trust}
    assert by_path["who"]["certified_by"] == "large" and row.data["who"] == "Maria"
    assert by_path["amount"]["certified_by"] == "small"
    assert row.status == "ok" and not any(MEASURED_ON_ALL in e for e in row.errors)


def test_without_a_calibration_on_escalated_records_the_stronger_readers_values_stay_unsure(
    db_url: str, schema: Schema
) -> None:
    row, stated = _cascade(db_url, schema, None)
    assert "escalated_from" not in stated  # the run states its own, all-records calibration
    by_path = {t["path"]: t for t in row.trust}
    assert by_path["who"]["certified_by"] is None and by_path["who"]["why"] == MEASURED_ON_ALL
    assert row.status != "ok"


def test_a_run_sends_every_unsure_row_where_the_stronger_reader_was_measured_on_its_escalations(
    db_url: str, schema: Schema
) -> None:
    """Without a calibration measured on the first reader's escalations, a run escalates rows unsure in
    the fields the stronger reader's own calibration certifies; with one, every row the first reader
    leaves unsure (reach None), the records it was measured on; a first reader under another calibration
    still goes by the stronger reader's own fields."""
    small, large = _key(schema, "small", "one-pass"), _key(schema, "large", "two-pass")
    with session_factory(db_url)() as session:
        first, stricter = _store(session, small, 0.9), _store(session, small, 0.95)
        session.commit()
        applied = {"calibration": first.id, "key": small.as_dict()}
        assert escalation_reach(session, large, applied, ("amount",)) == ("amount",)
        _store(session, large, 0.5, escalated_from=first_identity(first))
        session.commit()
        assert escalation_reach(session, large, applied, ("amount",)) is None
        other = {"calibration": stricter.id, "key": small.as_dict()}
        assert escalation_reach(session, large, other, ("amount",)) == ("amount",)
        assert escalation_reach(session, large, None, ()) == ()  # the run applied no calibration


def test_the_escalated_records_are_those_the_first_reader_leaves_not_ok(schema: Schema) -> None:
    rows = [GoldRow(key, _verdict(schema, who).trust or [], GOLD) for key, who in (("a", 0.99), ("b", 0.5))]
    assert escalated(schema, rows, ALONE, claims(0.9)) == ["b"]
    assert escalated(schema, rows, ALONE, claims(None)) == ["a", "b"]  # it certifies nothing: all go


def _gold(tmp_path: Path, keys: list[str]) -> Path:
    path = tmp_path / "gold.jsonl"
    path.write_text("".join(json.dumps({"id": k, "text": TEXT, "gold": GOLD}) + "\n" for k in keys))
    return path


def _eval_runs(db_url: str, schema: Schema, first_keys: list[str]) -> tuple[int, int, Calibration]:
    """The small reader's eval run (one-pass, over `first_keys`: g1 sure, g2 unsure of who) under its
    calibration from 0.9, and the large reader's measured eval run (two-pass) over g1 and g2."""
    small, large = _key(schema, "small", "one-pass"), _key(schema, "large", "two-pass")
    rows = {"g1": _verdict(schema, 0.99), "g2": _verdict(schema, 0.5)}
    with session_factory(db_url)() as session:
        first = _store(session, small, 0.9)
        session.commit()
        applied = {"calibration": first.id, "key": small.as_dict()}
        a = _run(session, schema, "eval:gold.jsonl#one-pass", applied, {k: rows[k] for k in first_keys})
        measuring = {"calibration": None, "key": large.as_dict()}
        b = _run(session, schema, "eval:gold.jsonl#two-pass", measuring, rows)
        session.commit()
        session.expunge(first)
    return a, b, first


def _eval(tmp_path: Path, schema: Schema, db_url: str, b: int, a: int) -> Any:
    gold = str(_gold(tmp_path, ["g1", "g2"]))
    return runner.invoke(app, ["eval", gold, "--schema", schema.source, "--mode", "two-pass", "--calibrate",
                               "--from-run", str(b), "--escalated-from", str(a), "--db", db_url])  # fmt: skip


def test_eval_calibrates_the_stronger_reader_on_the_records_the_first_one_escalates(
    tmp_path: Path, db_url: str, schema: Schema
) -> None:
    a, b, first = _eval_runs(db_url, schema, ["g1", "g2"])
    done = _eval(tmp_path, schema, db_url, b, a)
    assert done.exit_code == 0, done.output
    assert "measured on 1 of 2 gold records" in done.output and "together at 80%" in done.output
    with session_factory(db_url)() as session:
        stored = session.scalars(select(Calibration).where(Calibration.escalated_from.is_not(None))).one()
        assert stored.escalated_from == first_identity(first) and stored.gold_size == 1  # g2 alone
        assert (stored.model, stored.mode, stored.run_id) == ("large", "two-pass", b)


def test_eval_refuses_runs_that_read_other_gold_records(tmp_path: Path, db_url: str, schema: Schema) -> None:
    a, b, _ = _eval_runs(db_url, schema, ["g1"])
    done = _eval(tmp_path, schema, db_url, b, a)
    assert done.exit_code == 2, done.output
    assert f"run {a} (the first reader's) did not read 1 of these gold records (g2)" in done.output
    assert "Traceback" not in done.output and len(done.output.strip().splitlines()) == 1


def test_eval_refuses_a_first_reader_run_that_is_not_there(
    tmp_path: Path, db_url: str, schema: Schema
) -> None:
    _, b, _ = _eval_runs(db_url, schema, ["g1", "g2"])
    done = _eval(tmp_path, schema, db_url, b, 99)
    assert done.exit_code == 2, done.output
    assert "run 99 (the first reader's) is no `formwork eval` run in this database" in done.output
    with session_factory(db_url)() as session:
        assert session.scalars(select(Calibration).where(Calibration.escalated_from.is_not(None))).all() == []


@pytest.mark.slow
def test_the_reprocessing_flow_holds_the_stronger_reader_to_its_calibration_on_escalated_records(
    prefect_harness, local_engine, monkeypatch, write_jsonl, tmp_path
) -> None:
    """The bundled model reads a receipt in one-pass under a calibration certifying none of its fields, so
    the row escalates to the same model in two-readings (as tests/test_cascade_level.py, where its values
    came back unsure); a calibration of that reader measured on what the one-pass reader under that
    calibration escalates certifies every value (score ~1, from 0.5). Read before the run ends
    (`--escalate now`, the reprocessing flow's own path), the stronger reader's values are certified by
    it, none left `unsure` for having been measured on all records, and the escalation run states which
    calibration and the joint level."""
    from formwork.db.models import Result, RetryEntry
    from formwork.schemas.registry import load_schema
    from formwork.tasks.confidence.certify import FieldClaim, field_level, lower_bound
    from formwork.tasks.evaluation.calibration import schema_fields
    from formwork.tasks.evaluation.key import calibration_key
    from formwork.tasks.settings import Settings
    from tests.run_exit import expected_exit

    expense = load_schema("expense")
    db = f"sqlite:///{tmp_path}/cascade.db"
    for name, value in {"MODE": "one-pass", "MAX_ATTEMPTS": "1", "DB_URL": db}.items():
        monkeypatch.setenv(f"FORMWORK_{name}", value)
    engines = (local_engine, local_engine)
    small = calibration_key(Settings(), expense, engines)
    large = calibration_key(Settings(mode="two-readings"), expense, engines)
    fields = schema_fields(expense.checked_body)
    share = field_level(0.9, len(fields))

    def certifying(key: CalibrationKey, threshold: float | None, escalated_from: str | None = None
                   ) -> Calibration:  # fmt: skip
        kept = 90 if threshold is not None else 0
        found = {f: FieldClaim(f, 0.95, share, 100, threshold, kept, kept, lower_bound(kept, kept, share))
                 for f in fields}  # fmt: skip
        return store_calibration(session, key, Calibrated(ScoreModel({}, 20.0), found, 0, 0, 0.9), 0.95,
                                 gold_hash="0" * 64, gold_size=100, run_id=None,
                                 escalated_from=escalated_from)  # fmt: skip

    with session_factory(db)() as session:
        identity = first_identity(certifying(small, None))
        certifying(large, 0.5)  # measured on all records: what the queue asks of the stronger reader
        certifying(large, 0.5, escalated_from=identity)
        session.commit()
    text = [{"id": "a", "text": "Taxi 35 EUR, 2024-03-03, Tom"}]
    done = runner.invoke(app, ["run", str(write_jsonl(text)), "--schema", "expense", "--escalate-to",
                               "@two-readings", "--escalate", "now"])  # fmt: skip
    assert done.exit_code == expected_exit(done.output), done.output
    assert "read again by the stronger reader" in " ".join(done.output.split())
    with session_factory(db)() as session:
        assert session.scalars(select(RetryEntry).where(RetryEntry.kind == "escalation")).all() == []
        (row,) = session.scalars(select(Result)).all()
        escalation = session.scalars(select(Run).where(Run.flow == "reprocess_failed")).one()
    assert escalation.confidence["escalated_from"] == identity, escalation.confidence
    assert "hold together at 80%" in escalation.confidence["guarantee"]
    assert not any(t["why"] == MEASURED_ON_ALL for t in row.trust), json.dumps(row.trust)[:500]
    assert any(t.get("certified_by") == local_engine.model for t in row.trust), json.dumps(row.trust)[:500]


def test_the_calibrations_listing_says_an_escalated_calibration_applies_to_those_escalations_only(
    db_url: str, schema: Schema
) -> None:
    with session_factory(db_url)() as session:
        first = _store(session, _key(schema, "small", "one-pass"), 0.9)
        _store(session, _key(schema, "large", "two-pass"), 0.5, escalated_from=first_identity(first))
        session.commit()
    listed = runner.invoke(app, ["calibrations", "--schema", schema.source, "--db", db_url],
                           env={"COLUMNS": "300"})  # fmt: skip
    assert listed.exit_code == 0, listed.output
    assert "only to escalations from small@one-pass:" in listed.output


def test_a_record_the_first_reader_read_nothing_from_is_no_escalation(schema: Schema) -> None:
    """A run retries a failed row (no JSON: no reading at all) with the same reader and never sends it on,
    so the records a stronger reader's escalated calibration is measured on leave it out too."""
    rows = [GoldRow("a", _verdict(schema, 0.5).trust or [], GOLD), GoldRow("failed", [], GOLD)]
    assert escalated(schema, rows, ALONE, claims(0.9)) == ["a"]
