"""Enum and boolean confidence from the formatting pass's token logprobs, on hand-made Completions."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from formwork.schemas.registry import load_schema, schema_from_body
from formwork.tasks.confidence.probability import field_confidences, min_confidence, value_spans
from formwork.tasks.engines.base import Completion
from formwork.tasks.validate import judge, only_guesses

BUILTIN_CHAT = load_schema("chat_tag")
# the built-in's own x-min-confidence (0.95) set aside, so the run's threshold is what is tested
CHAT = schema_from_body(
    {**BUILTIN_CHAT.body, "properties": {**BUILTIN_CHAT.properties, "emotion": {
        k: v for k, v in BUILTIN_CHAT.properties["emotion"].items() if k != "x-min-confidence"}}},
    "chat_tag.json",
)  # fmt: skip
TEXT = "Tom: I lost my keys again, great."


def tokens(*pieces: tuple[str, float]) -> Completion:
    text = "".join(p for p, _ in pieces)
    return Completion(text, "stop", 10, len(pieces), 0.1, "test", tuple(pieces))


# The pieces a tokenizer might cut: the value "sad" written by two tokens, each with its masked logprob.
CHAT_TOKENS = (
    ('{"speaker": "', 0.0), ("Tom", -0.1), ('", "emotion": "', 0.0), ("s", math.log(0.5)),
    ("ad", math.log(0.8)), ('", "reply": ', 0.0), ("null", -0.05), ("}", 0.0),
)  # fmt: skip


def test_value_spans_locate_every_value_by_path() -> None:
    text = '{"a": 1, "b": [{"c": "x"}, {"c": null}], "d": {"e": true}}'
    spans = value_spans(text)
    assert {path: text[s:e] for path, (s, e) in spans.items()} == {
        "a": "1", "b[0].c": '"x"', "b[1].c": "null", "d.e": "true",
    }  # fmt: skip
    assert value_spans('{"a": ') == {}


def test_the_probability_of_a_value_is_the_product_over_its_tokens() -> None:
    completion = tokens(*CHAT_TOKENS)
    data = json.loads(completion.text)
    confidences = field_confidences(CHAT.body, data, completion)
    # The span '"sad"' overlaps the token ending in its opening quote (logprob 0), "s" and "ad",
    # and the token that starts with its closing quote (logprob 0).
    # A free string has one too ("Tom" at e^-0.1); reply is null: nothing asserted, nothing weighed.
    assert confidences == {"emotion": pytest.approx(0.4), "speaker": pytest.approx(math.exp(-0.1))}


def test_booleans_and_nested_enums_get_a_confidence() -> None:
    body = {
        "type": "object",
        "properties": {
            "paid": {"type": "boolean"},
            "lines": {
                "type": "array",
                "items": {"type": "object", "properties": {"kind": {"enum": ["a", "b"]}}},
            },
        },
    }
    completion = tokens(('{"paid":', 0.0), ("true", math.log(0.9)), (',"lines":[{"kind":"', 0.0),
                        ("b", math.log(0.3)), ('"}]}', 0.0))  # fmt: skip
    confidences = field_confidences(body, json.loads(completion.text), completion)
    assert confidences == {"paid": pytest.approx(0.9), "lines[0].kind": pytest.approx(0.3)}


def test_a_number_pays_for_the_token_that_stops_it() -> None:
    """`12` rather than `12.5` is decided by the token after the digits: it counts, a forced key does not."""
    body = {"type": "object", "properties": {"amount": {"type": "number"}, "n": {"type": "integer"}}}
    completion = tokens(('{"amount":', 0.0), ("1", math.log(0.8)), ("2", math.log(0.5)),
                        (',', math.log(0.6)), ('"n":', 0.0), ("3", math.log(0.9)), ("}", 0.0))  # fmt: skip
    confidences = field_confidences(body, json.loads(completion.text), completion)
    assert confidences == {"amount": pytest.approx(0.8 * 0.5 * 0.6), "n": pytest.approx(0.9)}


def test_no_confidence_is_claimed_without_logprobs_or_when_tokens_do_not_spell_the_text() -> None:
    plain = Completion('{"emotion": "sad"}', "stop", 1, 1, 0.1, "test")
    assert field_confidences(CHAT.body, {"emotion": "sad"}, plain) == {}
    mismatched = dataclasses.replace(tokens(*CHAT_TOKENS), text='{"speaker": "Tom", "emotion": "sad"}')
    assert field_confidences(CHAT.body, {"emotion": "sad"}, mismatched) == {}


def notes() -> Completion:
    return Completion("notes", "stop", 1, 1, 0.1, "test")


def test_the_built_in_chat_tag_holds_its_emotion_to_the_bound_calibrated_for_its_model() -> None:
    """0.95 was calibrated on the bundled model; any other model is held to 0.99 until calibrated."""
    guessed = judge(BUILTIN_CHAT, TEXT, notes(), tokens(*CHAT_TOKENS))  # "sad" at 0.40
    assert guessed.status == "failed" and "below 0.99" in " ".join(guessed.errors)
    sure = [(p, math.log(0.97) if p == "s" else 0.0 if p == "ad" else lp) for p, lp in CHAT_TOKENS]
    bundled = dataclasses.replace(tokens(*sure), model="SmolLM2-135M-Instruct.Q4_1")
    assert judge(BUILTIN_CHAT, TEXT, notes(), bundled).status == "ok"  # 0.97 >= 0.95
    other = judge(BUILTIN_CHAT, TEXT, notes(), tokens(*sure))
    assert other.status == "failed" and "probability 0.97, below 0.99" in " ".join(other.errors)


def test_a_bound_per_model_falls_back_to_star_then_to_the_run_setting() -> None:
    node = {"enum": ["a"], "x-min-confidence": {"m1": 0.5, "*": 0.9}}
    assert min_confidence(node, 0.1, "m1") == 0.5 and min_confidence(node, 0.1, "m2") == 0.9
    assert min_confidence({"enum": ["a"], "x-min-confidence": {"m1": 0.5}}, 0.1, "m2") == 0.1


def test_a_value_below_the_run_threshold_is_a_field_failure() -> None:
    completion = tokens(*CHAT_TOKENS)
    assert judge(CHAT, TEXT, notes(), completion).status == "ok"  # threshold 0: off
    assert judge(CHAT, TEXT, notes(), completion, min_confidence=0.3).status == "ok"
    guessed = judge(CHAT, TEXT, notes(), completion, min_confidence=0.6)
    assert guessed.status == "failed"  # emotion is critical in chat_tag
    assert guessed.errors == [
        'emotion "sad" is below its bound (probability 0.40, below 0.60); held to its bound, not retried'
    ]
    assert guessed.feedback == []  # a bound is never a reason to retry (issue 26)
    row = next(e for e in guessed.evidence if e["path"] == "emotion")
    assert row["confidence"] == pytest.approx(0.4) and row["kind"] == "none"


def test_every_value_is_held_to_the_bound_and_an_uncalibrated_choice_never_passes() -> None:
    completion = tokens(*CHAT_TOKENS)  # speaker "Tom" at 0.90, emotion "sad" at 0.40
    unsure = judge(CHAT, TEXT, notes(), completion, min_confidence=0.95, choice_confidence=0.3)
    assert unsure.status == "partial" and unsure.nulled == ["speaker"]  # the string, not the enum
    closed = judge(CHAT, TEXT, notes(), completion, min_confidence=0.5, choice_confidence=1.01)
    assert closed.status == "failed" and "no calibration covers" in closed.errors[0]
    assert only_guesses(closed.errors)  # calibration still counts it ok at bound 0


def test_the_schema_annotation_overrides_the_setting() -> None:
    body = json.loads(json.dumps(CHAT.body))
    body["properties"]["emotion"]["x-min-confidence"] = 0.5
    body["properties"]["emotion"].pop("x-critical")
    body["properties"]["emotion"]["enum"].append(None)  # nullable, so a failure can be nulled (partial)
    strict = dataclasses.replace(CHAT, body=body)
    verdict = judge(strict, TEXT, notes(), tokens(*CHAT_TOKENS), min_confidence=0.0)
    assert verdict.status == "partial" and verdict.nulled == ["emotion"]
    assert verdict.data == {"speaker": "Tom", "emotion": None, "reply": None}


def test_a_bound_the_engine_gives_no_probability_for_is_not_met() -> None:
    """An engine without grammar-masked logprobs cannot show a choice was sure: fail closed, say why."""
    plain = Completion('{"speaker": "Tom", "emotion": "sad", "reply": null}', "stop", 1, 1, 0.1, "test")
    verdict = judge(BUILTIN_CHAT, TEXT, notes(), plain)
    assert verdict.status == "failed"
    assert any("has no probability to hold to 0.99" in e for e in verdict.errors), verdict.errors
    assert judge(CHAT, TEXT, notes(), plain).status == "ok"  # no bound, nothing to hold it to


def test_a_row_that_failed_only_its_bound_counts_as_ok_at_bound_zero_for_calibration() -> None:
    guessed = judge(BUILTIN_CHAT, TEXT, notes(), tokens(*CHAT_TOKENS))  # only the 0.99 bound fails
    assert guessed.status == "failed" and only_guesses(guessed.errors)
    elsewhere = judge(BUILTIN_CHAT, "Anna: I miss him.", notes(), tokens(*CHAT_TOKENS))  # no "Tom" here
    assert elsewhere.status == "failed" and not only_guesses(elsewhere.errors)
    assert not only_guesses([])


def test_the_runner_up_is_bounded_where_another_value_could_begin() -> None:
    """At each step that wrote "sad", the likeliest token writing something else: at "s" a rival at 0.3
    ("h" of "happy"), at "ad" one at 0.1 after the chosen 0.5; the bound is the larger of 0.3 and
    0.5 * 0.1, and the top-2 margin is 0.5 * 0.8 - 0.3."""
    from formwork.tasks.confidence.probability import field_rivals

    rivals = (-math.inf, -math.inf, -math.inf, math.log(0.3), math.log(0.1), -math.inf, -math.inf, -math.inf)
    done = dataclasses.replace(tokens(*CHAT_TOKENS), token_rivals=rivals)
    data = json.loads(done.text)
    found = field_rivals(CHAT.checked_body, data, done)
    assert found["emotion"] == pytest.approx(0.3) and found["speaker"] == 0.0  # no rival for Tom
    assert field_confidences(CHAT.checked_body, data, done)["emotion"] - found["emotion"] == pytest.approx(
        0.1
    )
    assert field_rivals(CHAT.checked_body, data, tokens(*CHAT_TOKENS)) == {}  # an engine that gave none


def test_spelled_logprobs_tell_a_rival_from_another_spelling_of_the_same_value() -> None:
    from formwork.tasks.engines.spelling import spelled_logprobs

    written = [(b'{"a": ', 0.0, []), (b'"Blackwood"', math.log(0.5),
               [(b'"Blackwood"', math.log(0.2)), (b'"Brown"', math.log(0.25)), (b'"B', math.log(0.05))]),
               (b"}", 0.0, [])]  # fmt: skip
    spelled, rivals, _ = spelled_logprobs([(raw, lp, [o for o in others if o[0] != raw or lp != o[1]])
                                        for raw, lp, others in written])  # fmt: skip
    assert spelled[1] == pytest.approx(math.log(0.7))  # the same bytes another way count
    assert rivals[1] == pytest.approx(math.log(0.25))  # "Brown" is the rival; `"B` may lead either way
    assert rivals[0] == rivals[2] == -math.inf


def test_the_tokens_that_write_null_where_a_value_begins_are_the_value_or_null_decision() -> None:
    """`"Tom"` at 0.6 with `null` at 0.3 and `"Ann"` at 0.1 beside it: p_null is 0.3, so Tom's share
    among the values is 0.6 / 0.7; a spacing the grammar allows (` null`, a bare ` n`) counts too,
    through the step before the value, and a rival value never does."""
    from formwork.tasks.confidence.probability import field_null_mass
    from formwork.tasks.confidence.readings import PathReading
    from formwork.tasks.engines.spelling import spelled_logprobs

    body = {"type": "object", "properties": {"a": {"type": ["string", "null"]}, "n": {"type": "number"}}}
    steps = [(b'{"a":', 0.0, [(b'{"a": null', math.log(0.02))]),
             (b' "Tom"', math.log(0.6), [(b" null", math.log(0.2)), (b" n", math.log(0.08)),
                                         (b' "Ann"', math.log(0.1))]),
             (b', "n": 2', 0.0, []), (b"}", 0.0, [])]  # fmt: skip
    spelled = spelled_logprobs(steps)
    assert math.exp(spelled.nulls[1]) == pytest.approx(0.28)
    assert spelled.nulls[2] == spelled.nulls[3] == -math.inf  # the number is forced; `}` opens no value
    text = "".join(raw.decode() for raw, _, _ in steps)
    done = dataclasses.replace(
        tokens(*[(raw.decode(), lp) for raw, lp, _ in steps]), text=text, token_nulls=tuple(spelled.nulls)
    )
    mass = field_null_mass(body, json.loads(text), done)
    assert mass["a"] == pytest.approx(0.02 + 0.28) and mass["n"] == 0.0
    reading = PathReading("Tom", 0.6, "passed", "exact", null=mass["a"])
    assert reading.among_values == pytest.approx(0.6 / 0.7)
    assert PathReading(None, 0.7, "null", "null", null=0.0).among_values is None  # a null has no share
    assert field_null_mass(body, json.loads(text), dataclasses.replace(done, token_nulls=())) == {}
