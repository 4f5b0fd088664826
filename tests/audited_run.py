"""A stored run to audit: expense records read twice, judged by the real judge, decided by the real
`tasks.decide` under a calibration the real lookup finds, and stored by the real store functions.

No model writes a chosen value at a chosen probability on cue, so each reading's answer is written at
stated probabilities (one token per value, every other token forced), as tests/test_decide.py does.
Every fifth record names a second person whom the notes-free reading takes, unsure; every seventh
is read wrong by both readings, sure (a certified value a person will find wrong), unless `wrong` is
off; every ninth has no project; the first record's text holds markup that must stay text.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from formwork.db.calibrations import policy_for
from formwork.db.models import Calibration
from formwork.db.session import session_factory
from formwork.db.store import QueuePolicy, finish_run, save_outcomes, start_run, store_records
from formwork.schemas.registry import load_schema
from formwork.tasks.calls import Outcome
from formwork.tasks.confidence.certify import FieldClaim, field_level, lower_bound
from formwork.tasks.confidence.score import ScoreModel
from formwork.tasks.decide import decide
from formwork.tasks.engines.base import Completion
from formwork.tasks.evaluation.calibration import schema_fields
from formwork.tasks.evaluation.key import CalibrationKey
from formwork.tasks.sources import InputRecord
from formwork.tasks.validate import Verdict, judge

EXPENSE = load_schema("expense")
KEY = CalibrationKey("expense", EXPENSE.version, EXPENSE.digest, "test-model", None, "local", "two-readings",
                     True, "test-model", "test-sampling", "test-pipeline")  # fmt: skip
NOTES = Completion("notes", "stop", 1, 1, 0.0, "scripted")
PEOPLE = ["Maria", "Tom", "Aiko", "Jonas", "Lena", "Kwame", "Sofia", "Ravi", "Ines", "Piotr", "Chen"]
CATEGORIES = [("lunch", "meals"), ("a taxi", "transport"), ("the hotel", "lodging"),
              ("printer paper", "office")]  # fmt: skip
CURRENCIES = ["USD", "EUR", "GBP"]


@dataclass(frozen=True)
class Stored:
    """A stored run: its id, and each record's key and true answer (what a careful person would mark)."""

    run_id: int
    truth: dict[str, dict[str, Any]]


def read(text: str, values: dict[str, Any], sure: dict[str, float]) -> Verdict:
    """The judged verdict of an answer writing each value at its probability (0.99 unless `sure` says)."""
    pieces: list[tuple[str, float]] = [("{", 0.0)]
    for i, (key, value) in enumerate(values.items()):
        pieces.append((("" if i == 0 else ", ") + f'"{key}": ', 0.0))
        pieces.append((json.dumps(value), math.log(sure.get(key, 0.99))))
    pieces.append(("}", 0.0))
    written = Completion("".join(p for p, _ in pieces), "stop", 1, 1, 0.0, "scripted", tuple(pieces))
    return judge(EXPENSE, text, NOTES, written)


def record(i: int) -> tuple[str, dict[str, Any]]:
    """Record i's text and its true answer."""
    who, other = PEOPLE[i % len(PEOPLE)], PEOPLE[(i + 3) % len(PEOPLE)]
    what, category = CATEGORIES[i % len(CATEGORIES)]
    amount, currency = round(5 + (i * 7.3) % 180, 2), CURRENCIES[i % len(CURRENCIES)]
    date, project = f"2024-{1 + i % 12:02d}-{1 + i % 27:02d}", None if i % 9 == 4 else f"Apollo-{i % 4}"
    company = f" with {other}" if i % 5 == 2 else ""
    text = f"{who} paid {amount:.2f} {currency} for {what}{company} on {date}" + (
        f", billed to project {project}." if project else ".")  # fmt: skip
    if i == 0:
        text += " <script>alert(1)</script> & <b>bold</b>"
    truth = {"who": who, "date": date, "amount": amount, "currency": currency, "category": category,
             "project": project}  # fmt: skip
    return text, truth


def calibration(key: CalibrationKey = KEY) -> Calibration:
    """A calibration that certifies each field above a score of 0.9: agreement of sure readings."""
    fields = schema_fields(EXPENSE.checked_body)
    share = field_level(0.9, len(fields))
    claims = {f: FieldClaim(f, 0.95, share, 100, 0.9, 90, 90, lower_bound(90, 90, share)).as_dict()
              for f in fields}  # fmt: skip
    score = ScoreModel({"own": 1.0, "agree": 4.0}, -4.0).as_dict()
    return Calibration(**key.as_dict(), method="per-value", threshold=None, target=0.95, level=0.9, bound=0.0,
                       kept=0, correct=0, fields=claims, score_model=score, gold_hash="0" * 64,
                       gold_size=100)  # fmt: skip


def store_run(db_url: str, records: int, key: CalibrationKey = KEY, first: int = 0, wrong: bool = True,
              calibrated: bool = True) -> Stored:  # fmt: skip
    """Store a finished run of `records` records (numbered from `first`) under `key`, calibrated unless
    `calibrated` is off (then under the conservative default, as a run no calibration covers)."""
    sessions = session_factory(db_url)
    with sessions() as session:
        if calibrated and policy_for(session, key).applied["calibration"] is None:
            session.add(calibration(key))
            session.commit()
        applied = policy_for(session, key)
        texts = {f"r-{i:03d}": record(i) for i in range(first, first + records)}
        ids = store_records(session, "audit-test", [InputRecord(k, t) for k, (t, _) in texts.items()])
        run_id = start_run(session, EXPENSE, flow="test", source="audit-test", engine="local",
                           reasoning_model="test-model", formatting_model="test-model",
                           confidence=applied.applied | {"key": key.as_dict()})  # fmt: skip
        outcomes = [
            Outcome(record_id, _decided(number, text, truth, applied.policy, wrong), 1, "stop", "stop")
            for number, (record_id, (text, truth)) in enumerate(zip(ids, texts.values(), strict=True), first)
        ]
        save_outcomes(session, run_id, EXPENSE, outcomes, QueuePolicy())
        finish_run(session, run_id)
    return Stored(run_id, {k: truth for k, (_, truth) in texts.items()})


def export(db_url: str, stored: Stored, seed: int = 0, record_ids: list[int] | None = None) -> list[dict]:
    """The rows the page exports for a careful person: every record of the run (of `record_ids`), each
    with its true answer; the page's own export is pinned by tests/test_audit_browser.py."""
    from formwork.db.audits import run_rows

    with session_factory(db_url)() as session:
        rows = run_rows(session, stored.run_id, record_ids)
    return [{"id": row.key, "text": row.text, "gold": stored.truth[row.key],
             "meta": {"run": stored.run_id, "record": row.key, "record_id": row.record_id, "seed": seed}}
            for row in rows]  # fmt: skip


def _decided(i: int, text: str, truth: dict[str, Any], policy: Any, wrong: bool) -> Verdict:
    two_pass = dict(truth)
    notes_free, unsure = dict(truth), {}
    if i % 5 == 2:  # the notes-free reading takes the other person, unsure
        notes_free["who"], unsure = PEOPLE[(i + 3) % len(PEOPLE)], {"who": 0.55}
    if wrong and i % 7 == 3:  # both readings take a wrong category, sure: certified, and wrong
        wrong = "other" if truth["category"] != "other" else "meals"
        two_pass["category"] = notes_free["category"] = wrong
    readings = {"two-pass": read(text, two_pass, {}), "notes-free": read(text, notes_free, unsure)}
    return decide(EXPENSE, readings, policy, {}, False)
