"""The guarantee per value, certified per field: the bound, the split across fields, the score fitted on
two readings, the policy a run applies, shipped files and what makes them refused. Hand-made gold rows
and real SQLite/PostgreSQL; no model (the pipeline's runs are tested in test_calibrated_run.py)."""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction

import pytest

from formwork.schemas.registry import load_schema
from formwork.tasks.confidence.certify import (
    FieldClaim,
    Scored,
    certify,
    certify_field,
    field_level,
    lower_bound,
    values_needed,
)
from formwork.tasks.confidence.features import features
from formwork.tasks.confidence.policy import Policy, _compared
from formwork.tasks.confidence.readings import PathReading
from formwork.tasks.confidence.score import ScoreModel, fit
from formwork.tasks.evaluation.calibration import GoldRow, calibrate, schema_fields
from formwork.tasks.evaluation.key import JUDGE_VERDICTS, CalibrationKey
from formwork.tasks.evaluation.replay import reading_alone
from formwork.tasks.grounding.candidates import READERS_VERSION

EXPENSE = load_schema("expense")


def test_the_lower_bound_is_the_clopper_pearson_quantile_computed_by_hand() -> None:
    assert lower_bound(45, 45) == pytest.approx(0.1 ** (1 / 45)) and lower_bound(45, 45) > 0.95
    assert lower_bound(44, 44) < 0.95  # 44 all right are one too few for 95% at 90%
    # 9 of 10 right: P(X >= 9 | p) = 0.1 at the bound, by the binomial sum
    p = lower_bound(9, 10)
    assert 10 * p**9 * (1 - p) + p**10 == pytest.approx(0.1, abs=1e-9)
    assert lower_bound(0, 10) == 0.0 and lower_bound(0, 0) == 0.0


def test_the_lower_bound_holds_at_the_small_levels_and_large_counts_later_audit_looks_reach() -> None:
    """findroot (illinois) raised for 189 of 200 at 0.9979 and mpmath's betainc for large counts; the
    bound must exist there and sit where the binomial tail equals the level."""
    for correct, kept, level in [
        (189, 200, 0.9979),
        (999, 1000, 0.999999),
        (1666, 1988, 0.99),
        (254, 484, 0.999999),
    ]:
        p = lower_bound(correct, kept, level)
        exact = Fraction(p)  # the binomial tail summed exactly, no float on the way
        tail = sum(
            math.comb(kept, i) * exact**i * (1 - exact) ** (kept - i) for i in range(correct, kept + 1)
        )
        assert 0 < p < correct / kept and float(tail) == pytest.approx(1 - level, rel=1e-6)


def test_the_level_is_split_across_the_schemas_fields_so_a_field_needs_more_values() -> None:
    assert values_needed(0.95, 0.9) == 45  # one claim alone
    assert field_level(0.9, 6) == pytest.approx(1 - 0.1 / 6)
    assert values_needed(0.95, field_level(0.9, 6)) == 80  # six claims that hold together
    assert schema_fields(EXPENSE.checked_body) == ["who", "date", "amount", "currency", "category", "project"]
    receipt = load_schema("receipt")
    assert any("[]." in name for name in schema_fields(receipt.checked_body))  # items[].name and the like


def _scored(field: str, right: int, wrong: int, score: float = 0.999) -> list[Scored]:
    return [Scored(field, score, True)] * right + [Scored(field, score, False)] * wrong


def test_a_field_is_certified_at_the_lowest_threshold_that_still_reaches_its_target() -> None:
    values = _scored("amount", 90, 0, 0.999) + _scored("amount", 30, 0, 0.95) + _scored("amount", 10, 10, 0.6)
    claim = certify_field("amount", values, 0.95, 0.9)
    # 0.7 keeps the same 120 right values as 0.95 (none scored between); 0.6 would add 10 wrong ones
    assert claim.threshold == 0.7 and (claim.kept, claim.correct, claim.values) == (120, 120, 140)
    assert claim.bound == pytest.approx(lower_bound(120, 120)) and claim.consistent()
    assert "values kept at score >= 0.7 are right" in claim.sentence()


@pytest.mark.parametrize(
    "values",
    [
        _scored("date", 44, 0),  # every value right, but too few to tell at 95%
        _scored("date", 200, 20),  # plenty, but 91% right at every threshold
        [Scored("date", None, True)] * 100,  # no probability: never scored, never kept
    ],
)
def test_a_field_that_cannot_reach_its_target_is_never_certified(values: list[Scored]) -> None:
    claim = certify_field("date", values, 0.95, 0.9)
    assert claim.threshold is None and not claim.certified and claim.kept == 0
    assert claim.sentence().startswith("date: not certifiable at 95%")
    policy = Policy("calibrated", ScoreModel({}, 20.0), {"date": claim})  # a score of ~1 for every value
    judged = policy.judge("date", "two-pass", PathReading("2024-03-03", 1.0, "passed", "exact", True), None,
                          1, False, False)  # fmt: skip
    assert not judged.certified and judged.why == "its field is not certified"


def test_the_claims_of_all_fields_hold_together_so_each_is_tested_at_its_share() -> None:
    values = _scored("a", 76, 1) + _scored("b", 100, 0) + _scored("c", 0, 100)  # c could pass: charged
    claims = certify(values, ["a", "b", "c"])
    assert claims["a"].level == pytest.approx(1 - 0.1 / 3)  # 76 of 77 right: enough for one claim alone
    assert not claims["a"].certified and claims["b"].certified and not claims["c"].certified


def _two(two_pass: tuple, notes_free: tuple) -> dict[str, dict]:
    """A trust entry's readings: (value, probability) for each reading."""
    return {name: PathReading(value, p, "passed" if value is not None else "null", "exact", True).as_dict()
            for name, (value, p) in (("two-pass", two_pass), ("notes-free", notes_free))}  # fmt: skip


def _gold_rows(count: int, seed: int = 7) -> list[GoldRow]:
    """Records whose readings agree and are right, and records where the two-pass reading is sure and
    wrong while the notes-free one is right: the case the second reading is for."""
    rng = random.Random(seed)
    rows = []
    for i in range(count):
        gold = {"who": f"Person {i}"}
        if i % 3 == 0:  # the notes dropped the person: two-pass null at 0.97, notes-free reads the name
            readings = _two((None, 0.97), (f"Person {i}", 0.6 + 0.3 * rng.random()))
        else:
            p = 0.9 + 0.1 * rng.random()
            readings = _two((f"Person {i}", p), (f"Person {i}", p))
        trust = [{"path": "who", "field": "who", "readings": readings, "offered": 10, "competes": False}]
        rows.append(GoldRow(f"r{i}", trust, gold))
    return rows


def test_two_pass_sure_and_wrong_with_notes_free_right_scores_lower_than_agreement() -> None:
    found = calibrate(EXPENSE, _gold_rows(150))
    model = found.model
    sure_wrong = PathReading(None, 0.97, "null", "null")
    right = PathReading("Tom", 0.8, "passed", "exact", True)
    disagree = model.score(features("who", "two-pass", sure_wrong, right, 10, False))
    agree = model.score(features("who", "two-pass", PathReading("Tom", 0.97, "passed", "exact", True),
                                 PathReading("Tom", 0.97, "passed", "exact", True), 10, False))  # fmt: skip
    assert disagree < 0.5 < agree
    assert model.weights.get("agree", 0.0) > 0  # agreement is what tells them apart


def test_one_reading_of_two_readings_rows_is_what_that_reading_alone_would_have_stored() -> None:
    """A two-readings run calibrates one-pass from its notes-free reading: the other reading's values
    leave every row, and with them agreement, so the fitted score learns nothing from it."""
    rows = _gold_rows(150)
    alone = [reading_alone(row, {"notes-free"}) for row in rows]
    assert all(set(entry["readings"]) == {"notes-free"} for row in alone for entry in row.trust)
    assert [e["readings"]["notes-free"] for r in alone for e in r.trust] == [
        e["readings"]["notes-free"] for r in rows for e in r.trust]  # fmt: skip
    assert calibrate(EXPENSE, alone).model.weights.get("agree", 0.0) == 0.0
    assert reading_alone(rows[0], {"one-pass"}).trust == []  # a reading the run never made: no values


def test_the_score_never_falls_as_a_probability_or_agreement_rises() -> None:
    """Monotone: data that would ask for a negative weight on a probability gets none."""
    rows = [{"own": v, "agree": 1.0} for v in (4.0, 5.0, 6.0)] * 20 + [{"own": -2.0, "agree": 0.0}] * 20
    right = [False] * 60 + [True] * 20  # higher probability wrong, lower right: a perverse gold
    model = fit(rows, right)
    assert model.weights.get("own", 0.0) >= 0 and model.weights.get("agree", 0.0) >= 0
    assert ScoreModel.from_dict(json.loads(json.dumps(model.as_dict()))) == model


def test_a_bound_and_a_probability_never_print_as_equal() -> None:
    assert _compared(0.98996, 0.99) == "score 0.98996 < 0.99"
    assert _compared(0.9899, 0.99, "p") == "p 0.9899 < 0.99"
    assert _compared(0.5, 0.99) == "score 0.50 < 0.99"


def _key(**changes: object) -> CalibrationKey:
    fields = dict(schema_name="expense", schema_version=3, schema_hash="a" * 64, model="m",
                  model_hash="f" * 64, engine="local", mode="two-readings", grounded=True,
                  reasoning_model="m", sampling="s1", pipeline="r1.f1.p0")  # fmt: skip
    return CalibrationKey(**(fields | changes))  # type: ignore[arg-type]


def _row(key: CalibrationKey, **values: object):
    from formwork.db.models import Calibration

    share = field_level(0.9, 1)
    claim = FieldClaim("who", 0.95, share, 100, 0.9, 90, 90, lower_bound(90, 90, share))
    fields = dict(method="per-value", threshold=None, target=0.95, level=0.9, bound=lower_bound(40, 40),
                  kept=40, correct=40, values_bound=None, values_kept=90, values_correct=90,
                  fields={"who": claim.as_dict()}, score_model=ScoreModel({"own": 1.0}).as_dict(),
                  gold_hash="0" * 64, gold_size=100)  # fmt: skip
    return Calibration(**(key.as_dict() | fields | values))


ELSEWHERE = [{"mode": "one-pass"}, {"grounded": False}, {"model_hash": "b" * 64}, {"reasoning_model": "big"},
             {"engine": "vllm"}, {"schema_hash": "c" * 64}, {"sampling": "s2"},
             {"pipeline": "r2.f1.p0"}]  # fmt: skip


@pytest.mark.parametrize("other", ELSEWHERE)
def test_a_calibration_applies_to_its_own_key_only(any_db_url: str, other: dict) -> None:
    """Made in one mode (or grounding, model file, reasoning model, sampling, pipeline), it applies to no
    other: chat sampling or a longer reasoning budget, or a newer build, would change every probability."""
    from formwork.db.calibrations import policy_for
    from formwork.db.session import session_factory

    with session_factory(any_db_url)() as session:
        session.add(mine := _row(_key()))
        session.commit()
        found = policy_for(session, _key())
        assert found.applied["calibration"] == mine.id and found.vouched
        assert found.applied["fields"]["who"].startswith("who: values kept at score >= 0.9")
        elsewhere = policy_for(session, _key(**other))
    assert elsewhere.applied["calibration"] is None and not elsewhere.vouched
    assert "so no row is ok" in elsewhere.applied["guarantee"]


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"pipeline": "r0.f1.p0"}, "was measured by pipeline r0.f1.p0 and this build is r1.f1.p0"),
        ({"sampling": "s0"}, "was measured with other sampling or budgets"),
        ({"method": "least-confidence", "pipeline": None, "sampling": None}, "certifies rows, not values"),
    ],
)
def test_a_stale_calibration_no_longer_applies_and_the_summary_says_why(
    any_db_url: str, changes: dict, said: str
) -> None:
    from formwork.db.calibrations import policy_for
    from formwork.db.session import session_factory

    with session_factory(any_db_url)() as session:
        session.add(old := _row(_key(), **changes))
        session.commit()
        found = policy_for(session, _key())
    assert found.applied["calibration"] is None
    assert f"calibration {old.id} " in found.applied["guarantee"] and said in found.applied["guarantee"]


def test_a_shipped_calibration_applies_without_a_database_and_one_of_the_users_overrides_it(
    any_db_url: str, tmp_path, monkeypatch
) -> None:
    from formwork.db.calibration_store import export_calibration
    from formwork.db.calibrations import policy_for, statement
    from formwork.db.session import session_factory
    from formwork.tasks.evaluation import shipped

    monkeypatch.setattr(shipped, "SHIPPED", tmp_path)
    with session_factory(any_db_url)() as session:
        session.add(made := _row(_key()))
        session.commit()
        export_calibration(made, tmp_path / "expense.json")
        session.delete(made)
        session.commit()
        written = shipped.read_shipped(tmp_path / "expense.json")
        assert written["gold_size"] == 100
        # what it was measured with, which tests/test_judge_version.py holds every shipped file to
        assert written["measured_with"] == {
            "pipeline": _key().pipeline,
            "judge": JUDGE_VERDICTS[READERS_VERSION]["expense"],
        }
        (tmp_path / "expense.json").write_text(json.dumps(written | {"gold": "100 real receipts (SROIE)"}))
        assert shipped.shipped_for(_key().model, tmp_path) == [
            "expense@v3 two-readings: 1 of 1 fields certified (who) on 100 real receipts (SROIE)"
        ]
        applied = policy_for(session, _key()).applied  # a database without one of its own: the shipped one
        assert applied["calibration"] == "shipped in expense.json"
        assert statement(applied).startswith("calibration shipped in expense.json: 1 of 1 fields certified")
        assert policy_for(None, _key()).applied["calibration"] == "shipped in expense.json"
        assert policy_for(None, _key(mode="one-pass")).applied["calibration"] is None  # the full key only
        session.add(own := _row(_key()))
        session.commit()
        assert policy_for(session, _key()).applied["calibration"] == own.id  # the user's own gold wins


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: d["fields"]["who"].update(kept=30, correct=30),  # too few values behind the threshold
        lambda d: d["fields"]["who"].update(correct=80),  # 80/90 right cannot certify 95%
        lambda d: d["fields"]["who"].update(bound=0.99),  # a bound its counts do not reach
        lambda d: d["fields"]["who"].update(level=0.5),  # a level that is not the field's share
        lambda d: d.update(bound=0.99),  # the rows' bound edited
        lambda d: d.update(score_model={"weights": "none"}),
        lambda d: d["fields"]["who"].update(correct=91),  # more right than kept: the bound never returned
    ],
)
def test_a_shipped_file_whose_numbers_do_not_certify_is_refused(tmp_path, damage, caplog) -> None:
    from datetime import datetime

    from formwork.db.calibration_store import shipped_data
    from formwork.tasks.evaluation.shipped import find_shipped, read_shipped

    row = _row(_key())
    row.id, row.created_at = 1, datetime(2026, 12, 4)
    data = shipped_data(row)
    (tmp_path / "good.json").write_text(json.dumps(data))
    assert find_shipped(_key(), tmp_path)["fields"]["who"]["threshold"] == 0.9
    damage(data)
    (tmp_path / "good.json").unlink()
    (tmp_path / "bad.json").write_text(json.dumps(data))
    assert find_shipped(_key(), tmp_path) is None  # refused, never applied
    with pytest.raises(ValueError, match=r"refused|cannot be read"):
        read_shipped(tmp_path / "bad.json")
    assert any("bad.json" in r.getMessage() for r in caplog.records)  # and said


def test_a_shipped_file_without_its_key_is_refused(tmp_path) -> None:
    from formwork.tasks.evaluation.shipped import ShippedProblem, find_shipped, read_shipped

    (tmp_path / "bad.json").write_text('{"threshold": 0.9}')
    assert find_shipped(_key(), tmp_path) is None
    with pytest.raises(ShippedProblem, match="needs key"):
        read_shipped(tmp_path / "bad.json")


def test_the_model_file_hash_tells_two_files_of_one_name_apart_and_is_computed_once(tmp_path) -> None:
    import hashlib

    from formwork.tasks.engines import fingerprint

    first, second = tmp_path / "a" / "model.gguf", tmp_path / "b" / "model.gguf"
    for path, body in ((first, b"weights one"), (second, b"weights two")):
        path.parent.mkdir()
        path.write_bytes(body)
    assert fingerprint.file_hash(first) == hashlib.sha256(b"weights one").hexdigest()
    assert fingerprint.file_hash(first) != fingerprint.file_hash(second)
    misses = fingerprint._digest.cache_info().misses
    fingerprint.file_hash(first)
    assert fingerprint._digest.cache_info().misses == misses  # cached by path, inode, size and times
    second.write_bytes(b"weights three")  # a changed file is hashed again
    assert fingerprint.file_hash(second) == hashlib.sha256(b"weights three").hexdigest()


@pytest.mark.parametrize("how", ["renamed over", "written in place"])
def test_a_file_replaced_with_the_same_size_and_mtime_is_hashed_again(tmp_path, how: str) -> None:
    """Issue 41 point 12: a model file replaced by another of the same size, its mtime kept (`cp -p`,
    rsync -t, an unpacked archive), reused the old hash in a long-lived worker, so a calibration of
    the old weights applied to the new ones. The cache key holds the inode and ctime too."""
    import hashlib
    import os
    import time

    from formwork.tasks.engines import fingerprint

    path, other = tmp_path / "model.gguf", tmp_path / "incoming.gguf"
    path.write_bytes(b"weights one")
    old = os.stat(path)
    assert fingerprint.file_hash(path) == hashlib.sha256(b"weights one").hexdigest()
    time.sleep(0.05)  # a copy takes time: past the kernel's coarse clock tick, which stamps ctime
    if how == "renamed over":
        other.write_bytes(b"weights two")
        os.utime(other, ns=(old.st_atime_ns, old.st_mtime_ns))
        os.replace(other, path)
    else:
        with path.open("r+b") as handle:
            handle.write(b"weights two")
        os.utime(path, ns=(old.st_atime_ns, old.st_mtime_ns))
    now = os.stat(path)
    assert (now.st_size, now.st_mtime_ns) == (old.st_size, old.st_mtime_ns)  # the old key would match
    assert fingerprint.file_hash(path) == hashlib.sha256(b"weights two").hexdigest()


def test_verification_says_confirmed_broken_or_not_contradicted_per_field() -> None:
    from formwork.tasks.evaluation.verification import check, verify

    share = field_level(0.9, 2)
    sure, few = check("amount", 80, 80, 0.95, share, 100), check("who", 30, 30, 0.95, share, 100)
    assert sure.verdict == "confirmed" and few.verdict == "not contradicted"
    broken = check("date", 40, 60, 0.95, share, 100)
    assert broken.verdict == "broken"  # 67% right: the upper bound is below 95%
    rows = check("rows ok", 10, 12, 0.95, 0.9)
    assert verify([sure, few], rows)["verdict"] == "not contradicted"
    said = verify([sure, broken], rows)
    assert said["verdict"] == "broken" and "date: 40/60 right, 60/100 kept" in said["statement"]


def test_a_served_model_is_keyed_by_what_its_server_says_of_the_weights() -> None:
    """Issue 41 point 16: two copies served under one name (a quantised one) must not share a
    calibration; where the server says nothing but the name, nothing tells them apart (README)."""
    from formwork.tasks.engines.http_base import served_identity

    bf16 = {"id": "qwen", "root": "/models/qwen-bf16", "max_model_len": 4096, "created": 1}
    awq = {"id": "qwen", "root": "/models/qwen-awq", "max_model_len": 4096, "created": 1}
    assert served_identity(bf16) != served_identity(awq) and served_identity(bf16).startswith("served:")
    assert served_identity(bf16 | {"created": 2}) == served_identity(bf16)  # a restart is no new weights
    llama = {"id": "m", "meta": {"n_params": 1_540_000_000, "size": 1_117_320_768, "n_vocab": 151_936}}
    assert served_identity(llama) is not None
    assert served_identity({"id": "qwen", "object": "model", "owned_by": "library"}) is None  # Ollama


def test_a_threshold_that_keeps_too_few_values_does_not_end_the_sequence() -> None:
    """Every value right, but the strictest threshold keeps five: tested, it would fail (5 cannot
    certify 95%) and stop the sequence before the thresholds that keep enough."""
    values = _scored("currency", 5, 0, 0.99999) + _scored("currency", 115, 0, 0.97)
    claim = certify_field("currency", values, 0.95, field_level(0.9, 6))
    assert claim.certified and claim.kept == 120 and claim.threshold <= 0.97
