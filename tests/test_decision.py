"""The decision a run applies to one record (issue 26: defects 2 and 7; issue 27.1; issue 30.1).

What calibration's bound counts must be what a run decides: a value below its bound is held (nulled or
failing the row), never retried; attempts are ranked by status, then by their least confidence, and
each one's judged values are stored; a null is held to its field's bound; a row with no value at all,
a refused value and a cut text are never passed off as `ok` answers.

Answers with stated probabilities come from a scripted formatter (no real model can be made to
write a chosen value at a chosen probability), and the notes from a scripted reasoner that stops
cleanly (a real one may stop at `length`, which fails the row for another reason); the judge, the
retry loops, the fitting, the storage and both databases are the real ones.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from pydantic import BaseModel

from formwork.db.models import ModelCall
from formwork.db.queries import run_summary
from formwork.db.session import session_factory
from formwork.db.store import QueuePolicy, save_outcomes, start_run, store_records
from formwork.schemas.annotations import grounding_problems
from formwork.schemas.lint import lint_schema
from formwork.schemas.pydantic_source import class_body
from formwork.schemas.registry import schema_from_body
from formwork.tasks.calls import ExtractOptions, Outcome
from formwork.tasks.engines.base import Completion, Sampling
from formwork.tasks.extract import extract_record
from formwork.tasks.fit import CUT, cut_verdict
from formwork.tasks.modes import extract_single_pass
from formwork.tasks.sources import InputRecord
from formwork.tasks.validate import EMPTY_ROW, Verdict, judge, only_guesses

BODY: dict[str, Any] = {
    "title": "decision_test",
    "type": "object",
    "properties": {
        "who": {"type": ["string", "null"], "maxLength": 40, "description": "Who paid."},
        "amount": {"type": ["number", "null"], "description": "How much."},
        "category": {"enum": ["meals", "travel", "entertainment", None], "description": "What for."},
    },
    "required": ["who", "amount", "category"],
    "additionalProperties": False,
}
SCHEMA = schema_from_body(BODY, "decision_test.json")
TEXT = "Maria paid 42.80 EUR for lunch with the client."
BOUNDS = {"min_confidence": 0.9, "choice_confidence": 0.9}
RUN = {"flow": "test", "source": "decision.jsonl", "engine": "local", "reasoning_model": "m",
       "formatting_model": "m"}  # fmt: skip


def answer(**values: tuple[Any, float]) -> Completion:
    """The JSON of `values` (field -> (value, probability)), one token per value at that probability,
    every other token forced: the completion an engine with masked logprobs would return."""
    pieces: list[tuple[str, float]] = [("{", 0.0)]
    for i, (key, (value, probability)) in enumerate(values.items()):
        pieces.append((("" if i == 0 else ", ") + f'"{key}": ', 0.0))
        pieces.append((json.dumps(value), math.log(probability) if probability > 0 else math.nan))
    pieces.append(("}", 0.0))
    return Completion("".join(p for p, _ in pieces), "stop", 10, len(pieces), 0.01, "scripted", tuple(pieces))


class Scripted:
    """A formatter that returns the given answers in turn, and keeps every prompt it was sent."""

    model, max_concurrency = "scripted", 1

    def __init__(self, *answers: Completion) -> None:
        self.answers, self.prompts = list(answers), []

    def complete(self, messages, sampling, schema=None) -> Completion:
        self.prompts.append(messages[-1]["content"])
        return self.answers[min(len(self.prompts), len(self.answers)) - 1]


def notes() -> Completion:
    return Completion("Maria paid 42.80 EUR for lunch.", "stop", 1, 1, 0.01, "scripted")


class Notes:
    """A reasoner whose notes always stop cleanly."""

    model, max_concurrency = "scripted-notes", 1

    def complete(self, messages, sampling, schema=None) -> Completion:
        return notes()


NOTES = Notes()


# --- 26, defect 2: a value below its bound is held, never retried ------------------------------------


def test_a_value_below_its_bound_is_nulled_and_never_retried() -> None:
    """Issue 26's stub case: "meals" below the bound, then "entertainment" sure, would store the second
    draw as ok. Now the first answer is the decision: the category is nulled, nothing is asked again."""
    formatter = Scripted(
        answer(who=("Maria", 0.99), amount=(42.8, 0.99), category=("meals", 0.55)),
        answer(who=("Maria", 0.99), amount=(42.8, 0.99), category=("entertainment", 0.95)),
    )
    outcome = extract_record(1, TEXT, SCHEMA, NOTES, formatter, ExtractOptions(**BOUNDS))
    assert len(formatter.prompts) == 1 and outcome.attempts == 1
    assert outcome.verdict.status == "partial" and outcome.verdict.nulled == ["category"]
    assert outcome.verdict.data == {"who": "Maria", "amount": 42.8, "category": None}
    assert outcome.verdict.feedback == [] and only_guesses(outcome.verdict.errors)
    assert 'category "meals" is below its bound (probability 0.55, below 0.90)' in outcome.verdict.errors[0]


def test_a_critical_value_below_its_bound_fails_the_row_without_a_retry() -> None:
    body = json.loads(json.dumps(BODY))
    body["properties"]["category"] |= {"x-critical": True, "enum": ["meals", "travel", "entertainment"]}
    critical = schema_from_body(body, "decision_critical.json")
    formatter = Scripted(
        answer(who=("Maria", 0.99), amount=(42.8, 0.99), category=("meals", 0.55)),
        answer(who=("Maria", 0.99), amount=(42.8, 0.99), category=("meals", 0.99)),
    )
    outcome = extract_record(1, TEXT, critical, NOTES, formatter, ExtractOptions(**BOUNDS))
    assert len(formatter.prompts) == 1 and outcome.verdict.status == "failed"


def test_a_below_bound_value_is_not_in_the_feedback_of_a_retry_another_error_asked_for() -> None:
    formatter = Scripted(
        answer(who=("Zed", 0.99), amount=(42.8, 0.99), category=("meals", 0.55)),
        answer(who=("Maria", 0.99), amount=(42.8, 0.99), category=("meals", 0.55)),
    )
    extract_record(1, TEXT, SCHEMA, NOTES, formatter, ExtractOptions(**BOUNDS))
    assert len(formatter.prompts) == 2  # "Zed" is not in the text: a retry can fix that
    assert '"Zed" does not appear in the text' in formatter.prompts[1]
    assert "category" not in formatter.prompts[1].split("Zed")[-1] and "0.55" not in formatter.prompts[1]


def test_a_retry_another_error_asked_for_cannot_pass_a_value_held_before() -> None:
    """The issue's case: "meals" below its bound and "Zed" not in the text; the retry fixes the name and
    writes "entertainment" sure. A second answer tested again is a selection after a failed test: the
    category stays held, whatever its new probability, and the stored row never says "entertainment"."""
    formatter = Scripted(
        answer(who=("Zed", 0.99), amount=(42.8, 0.99), category=("meals", 0.55)),
        answer(who=("Maria", 0.99), amount=(42.8, 0.99), category=("entertainment", 0.99)),
    )
    outcome = extract_record(1, TEXT, SCHEMA, NOTES, formatter, ExtractOptions(**BOUNDS))
    assert len(formatter.prompts) == 2
    assert outcome.verdict.status == "partial" and outcome.verdict.data["category"] is None
    assert outcome.verdict.data["who"] == "Maria"
    assert any("stands where an earlier attempt was below its bound" in e for e in outcome.verdict.errors)
    second = outcome.calls[-1].judged
    assert {v["path"]: v["verdict"] for v in second["values"]}["category"] == "below bound"


def test_sampling_in_a_single_pass_mode_never_redraws_a_value_below_its_bound() -> None:
    formatter = Scripted(
        answer(who=("Maria", 0.99), amount=(42.8, 0.99), category=("meals", 0.55)),
        answer(who=("Maria", 0.99), amount=(42.8, 0.99), category=("entertainment", 0.95)),
    )
    options = ExtractOptions(mode="one-pass", grounded_decoding=False, **BOUNDS)
    sampling = Sampling(128, temperature=0.8, seed=1)
    outcome = extract_single_pass(1, TEXT, SCHEMA, formatter, options, sampling=sampling)
    assert len(formatter.prompts) == 1 and outcome.verdict.status == "partial"
    assert outcome.verdict.data["category"] is None


# --- 26, defect 2: attempts ranked by least confidence, their evidence stored -------------------------


def ranked_outcome(record_id: int) -> tuple[Outcome, Scripted]:
    """Three partial attempts ("Zed" is never in the text); the first is the surest."""
    formatter = Scripted(
        answer(who=("Zed", 0.99), amount=(42.8, 0.97), category=("meals", 0.95)),
        answer(who=("Zed", 0.99), amount=(42.8, 0.97), category=("travel", 0.91)),
        answer(who=("Zed", 0.99), amount=(42.8, 0.97), category=("entertainment", 0.93)),
    )
    options = ExtractOptions(max_attempts=3, **BOUNDS)
    return extract_record(record_id, TEXT, SCHEMA, NOTES, formatter, options), formatter


def test_equal_statuses_are_ranked_by_least_confidence_and_each_attempt_is_judged() -> None:
    outcome, formatter = ranked_outcome(1)
    assert len(formatter.prompts) == 3 and outcome.verdict.status == "partial"
    assert outcome.verdict.data["category"] == "meals"  # 0.95 beats 0.91 and 0.93; the last kept before
    formatting = [c for c in outcome.calls if c.pass_name == "formatting"]
    assert [c.judged["least_confidence"] for c in formatting] == [0.95, 0.91, 0.93]
    assert [c.judged["status"] for c in formatting] == ["partial"] * 3
    first = {v["path"]: v for v in formatting[0].judged["values"]}
    assert first["who"] == {"path": "who", "value": "Zed", "confidence": 0.99, "verdict": "refused"}
    assert first["amount"]["verdict"] == "passed" and first["category"]["confidence"] == 0.95


def test_no_confidence_ranks_below_any_probability() -> None:
    from formwork.tasks.calls import better

    sure = Verdict("partial", {}, values=[{"path": "a", "value": 1, "confidence": 0.2, "verdict": "passed"}])
    unknown = Verdict(
        "partial", {}, values=[{"path": "a", "value": 1, "confidence": None, "verdict": "passed"}]
    )
    assert unknown.least_confidence() is None
    assert better(sure, unknown) and not better(unknown, sure)
    assert better(Verdict("ok", {}), sure)  # status first


def test_each_attempts_judged_values_reach_the_database(any_db_url: str) -> None:
    with session_factory(any_db_url)() as session:
        (record_id,) = store_records(session, "decision.jsonl", [InputRecord("r1", TEXT, {})])
        outcome, _ = ranked_outcome(record_id)
        run_id = start_run(session, SCHEMA, **RUN)
        save_outcomes(session, run_id, SCHEMA, [outcome], QueuePolicy())
        stored = session.query(ModelCall).filter_by(pass_name="formatting").order_by(ModelCall.attempt).all()
        assert [c.judged for c in stored] == [c.judged for c in outcome.calls if c.pass_name == "formatting"]
        assert stored[0].judged["values"][0]["verdict"] == "refused"
        reasoning = session.query(ModelCall).filter_by(pass_name="reasoning").all()
        assert reasoning and all(c.judged is None for c in reasoning)


# --- 26, defect 7: a null is a claim, held to the same bound ------------------------------------------


def test_a_null_below_its_fields_bound_leaves_the_field_unsure() -> None:
    weak_null = answer(who=(None, 0.5), amount=(42.8, 0.99), category=("meals", 0.99))
    unsure = judge(SCHEMA, TEXT, notes(), weak_null, **BOUNDS)
    assert unsure.status == "partial" and unsure.data["who"] is None and unsure.nulled == []
    assert unsure.errors == ["who null is unsure (probability 0.50, below 0.90): the text may hold a value; "
                             "held to its bound, not retried"]  # fmt: skip
    assert unsure.feedback == [] and only_guesses(unsure.errors)
    assert {"path": "who", "value": None, "confidence": 0.5, "verdict": "unsure null"} in unsure.values
    sure_null = answer(who=(None, 0.95), amount=(42.8, 0.99), category=("meals", 0.99))
    sure = judge(SCHEMA, TEXT, notes(), sure_null, **BOUNDS)
    assert sure.status == "ok" and sure.least_confidence() == 0.95
    off = judge(SCHEMA, TEXT, notes(), weak_null)
    assert off.status == "ok"  # no bound in force: nothing to hold the null to


def test_a_null_with_no_probability_is_not_certified_where_a_bound_is_in_force() -> None:
    unweighed = answer(who=(None, math.nan), amount=(42.8, 0.99), category=("meals", 0.99))
    verdict = judge(SCHEMA, TEXT, notes(), unweighed, **BOUNDS)
    assert verdict.status == "partial" and verdict.data["who"] is None
    assert verdict.errors == [
        "who null has no probability to hold to 0.90, so it does not show the text has none"
    ]


def test_an_uncalibrated_choice_null_is_not_certified() -> None:
    no_category = answer(who=("Maria", 0.99), amount=(42.8, 0.99), category=(None, 0.99))
    verdict = judge(SCHEMA, TEXT, notes(), no_category, min_confidence=0.9, choice_confidence=1.01)
    assert (
        verdict.status == "partial" and "category null is a choice no calibration covers" in verdict.errors[0]
    )


ALL_NULL = {"who": (None, 0.99), "amount": (None, 0.99), "category": (None, 0.99)}


def test_a_row_with_no_value_at_all_is_never_ok_unless_the_schema_says_so() -> None:
    empty = judge(SCHEMA, TEXT, notes(), answer(**ALL_NULL))
    assert empty.status == "partial" and empty.errors[0].startswith(EMPTY_ROW)
    allowed = schema_from_body({**BODY, "x-empty-ok": True}, "decision_empty.json")
    assert judge(allowed, TEXT, notes(), answer(**ALL_NULL)).status == "ok"


def test_the_empty_row_annotation_is_linted_at_the_root_only() -> None:
    assert grounding_problems({**BODY, "x-empty-ok": True}) == []
    assert not any("x-empty-ok" in p for p in lint_schema({**BODY, "x-empty-ok": True}))
    assert grounding_problems({**BODY, "x-empty-ok": "yes"}) == [
        "(root): x-empty-ok is true or false, at the schema's root only"
    ]
    nested = json.loads(json.dumps(BODY))
    nested["properties"]["who"]["x-empty-ok"] = True
    assert grounding_problems(nested) == ["who: x-empty-ok is true or false, at the schema's root only"]


# --- 27.1: refused is not absent ----------------------------------------------------------------------


class Order(BaseModel):
    """Issue 27's case: the user's model gives quantity a default."""

    item: str
    quantity: int = 1


ORDER = schema_from_body(class_body(Order, "Order"), "Order")
ORDER_TEXT = "Please send 3 boxes of pens"


def order(quantity: int | None, probability: float) -> Completion:
    return answer(item=("pens", 0.99), quantity=(quantity, probability))


def test_a_refused_value_is_never_replaced_by_the_default() -> None:
    wrong = judge(ORDER, ORDER_TEXT, notes(), order(5, 0.99))  # 5 is not in the text
    assert wrong.status == "partial" and wrong.data == {"item": "pens"}  # left out: quantity cannot be null
    kinds = {
        row["path"]: row["kind"] for row in wrong.evidence if row["rule"] == "none" and row["value"] is None
    }
    assert kinds == {"quantity": "refused"}
    assert not any(row["kind"] == "default" for row in wrong.evidence)


def test_a_value_below_its_bound_is_refused_not_defaulted() -> None:
    unsure = judge(ORDER, ORDER_TEXT, notes(), order(3, 0.90), min_confidence=0.99)
    assert unsure.status == "partial" and "quantity" not in unsure.data and unsure.nulled == ["quantity"]
    assert [row["kind"] for row in unsure.evidence if row["path"] == "quantity" and row["value"] is None] == [
        "refused"
    ]


def test_a_grammar_null_still_takes_the_default() -> None:
    absent = judge(ORDER, "Please send boxes of pens", notes(), order(None, 0.99))
    assert absent.status == "ok" and absent.data == {"item": "pens", "quantity": 1}
    assert Order.model_validate(absent.data) == Order(item="pens")


# --- 30.1: a cut text is never ok ---------------------------------------------------------------------


LONG = TEXT + " And then the meeting went on." * 300  # past the prompts' 6,000 characters
SURE = answer(who=("Maria", 0.99), amount=(42.8, 0.99), category=("meals", 0.99))


def test_an_ok_row_can_no_longer_come_from_a_cut_text() -> None:
    whole = extract_record(1, TEXT, SCHEMA, NOTES, Scripted(SURE), ExtractOptions(**BOUNDS))
    assert whole.verdict.status == "ok", whole.verdict.errors  # the same answer, on the whole text
    cut = extract_record(2, LONG, SCHEMA, NOTES, Scripted(SURE), ExtractOptions(**BOUNDS))
    assert cut.verdict.status == "partial" and cut.verdict.data == whole.verdict.data
    assert cut.verdict.errors[-1].startswith(CUT)


def test_a_single_pass_mode_says_its_text_was_cut_too() -> None:
    options = ExtractOptions(mode="one-pass", grounded_decoding=False, **BOUNDS)
    outcome = extract_single_pass(1, LONG, SCHEMA, Scripted(SURE), options)
    assert outcome.verdict.status == "partial" and outcome.verdict.errors[-1].startswith(CUT)
    assert "6000 characters" in outcome.verdict.errors[-1]


def test_the_summary_counts_cut_texts_and_empty_rows(any_db_url: str) -> None:
    with session_factory(any_db_url)() as session:
        ids = store_records(
            session, "decision.jsonl", [InputRecord(f"r{i}", f"{TEXT} {i}", {}) for i in range(3)]
        )
        ok = judge(SCHEMA, TEXT, notes(), SURE, **BOUNDS)
        verdicts = [cut_verdict(ok, 6000), judge(SCHEMA, TEXT, notes(), answer(**ALL_NULL)), ok]
        run_id = start_run(session, SCHEMA, **RUN)
        outcomes = [Outcome(i, v, 1, "stop", "stop") for i, v in zip(ids, verdicts, strict=True)]
        save_outcomes(session, run_id, SCHEMA, outcomes, QueuePolicy())
        summary = run_summary(session, run_id)
    assert summary.statuses == {"partial": 2, "ok": 1}
    assert (summary.cut, summary.empty) == (1, 1)
    assert ("texts cut to fit the context", "1") in summary.rows()
    assert ("rows with no value at all", "1") in summary.rows()


# --- 26, the default: no calibration, no `ok` (tasks.decide; the policy's rules: tests/test_decide.py) --
# Measured with Qwen2.5-Coder-1.5B on the contact gold (BENCHMARKS section 28): with every value at
# p >= 0.99 and no calibration, 59% of the rows the default let be `ok` had a wrong field.


def test_the_uncalibrated_default_holds_every_entry_point_to_partial() -> None:
    from formwork.db.calibrations import policy_for
    from formwork.tasks.evaluation.key import CalibrationKey

    key = CalibrationKey(
        "decision_test", 1, SCHEMA.digest, "m", "0" * 64, "local", "two-pass", True, "m", "s", "p"
    )
    options = policy_for(None, key).applied_to(ExtractOptions())
    assert options.policy is not None and options.policy.kind == "uncalibrated" and not options.policy.vouched


def test_the_summary_counts_rows_held_for_want_of_a_calibration(any_db_url: str) -> None:
    from formwork.tasks.confidence.policy import Policy
    from formwork.tasks.extract import extract_safely

    plain = schema_from_body({**BODY, "properties": {k: v for k, v in BODY["properties"].items()
                                                     if k != "category"}, "required": ["who", "amount"]},
                             "plain.json")  # fmt: skip
    sure = answer(who=("Maria", 0.999), amount=(42.8, 0.999))
    with session_factory(any_db_url)() as session:
        ids = store_records(
            session, "decision.jsonl", [InputRecord(f"v{i}", f"{TEXT} v{i}", {}) for i in range(2)]
        )
        options = ExtractOptions(grounded_decoding=False, policy=Policy("uncalibrated"))
        outcomes = [extract_safely(i, TEXT, plain, (NOTES, Scripted(sure)), options) for i in ids]
        run_id = start_run(session, plain, **RUN)
        save_outcomes(session, run_id, plain, outcomes, QueuePolicy())
        summary = run_summary(session, run_id)
    assert summary.statuses == {"partial": 2} and summary.unvouched == 2
    assert ("partial only for want of a calibration", "2") in summary.rows()
    assert ("values certified", "0 of 4") in summary.rows()  # kept unchecked: a calibration certifies


@pytest.mark.parametrize("status", ["partial", "failed"])
def test_a_cut_verdict_keeps_a_worse_status(status: str) -> None:
    verdict = cut_verdict(Verdict(status, None, ["x"]), 10)  # type: ignore[arg-type]
    assert verdict.status == status and verdict.errors[-1].startswith(CUT)
