"""Renormalising logprobs reported before the grammar mask, on replies written out by hand.

The cases a real server shows only by chance are pinned here: a rival value missing from the top list,
a top list whose entries collided (llama-cpp-python keys it by token text), a free string. The real
server's renormalised confidences are compared with the embedded engine's in tests/test_openai_engine.py.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from formwork.tasks.confidence.probability import field_confidences
from formwork.tasks.confidence.renormalise import allowed_values, logprob_mode, renormalised
from formwork.tasks.engines.base import Completion, PreMask

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"a": {"enum": ["yes", "no"]}, "note": {"type": "string"}, "paid": {"type": "boolean"}},
}
JUNK = ("junk", -30.0)  # the least listed token: what bounds every unlisted one


def _confidences(steps: list[tuple[str, float, list[tuple[str, float]]]]) -> dict[str, float]:
    text = "".join(token for token, _, _ in steps)
    pre = PreMask(tuple((t, lp, (*map(tuple, tops), JUNK)) for t, lp, tops in steps), SCHEMA)  # type: ignore[arg-type]
    completion = Completion(text, "stop", 1, len(steps), 0.1, "m", pre_mask=pre)
    data = json.loads(text)
    done = renormalised(completion, data)
    assert logprob_mode(done) == "renormalised" and done.pre_mask is pre
    return field_confidences(SCHEMA, data, done)


def _answer(decisive: list[tuple[str, float]]) -> list[tuple[str, float, list[tuple[str, float]]]]:
    """`{"a":"yes"}` where the step that writes `yes` lists `decisive`."""
    return [('{"', -0.1, [('{"', -0.1)]), ("a", -0.1, [("a", -0.1)]), ('":"', -0.3, [('":"', -0.3)]),
            ("yes", -1.0, decisive), ('"}', -0.2, [('"}', -0.2), ('"', -1.5)])]  # fmt: skip


def test_the_chosen_value_is_renormalised_among_the_allowed_ones() -> None:
    # "The" is the raw favourite, which the grammar forbids: it counts on neither side
    found = _confidences(_answer([("The", -0.5), ("yes", -1.0), ("no", -2.0), ("n", -4.0)]))
    expected = math.exp(-1.0) / (math.exp(-1.0) + math.exp(-2.0) + math.exp(-4.0))
    assert found == {"a": pytest.approx(expected, abs=1e-6)}


def test_a_rival_value_missing_from_the_list_leaves_no_confidence() -> None:
    # neither "no" nor "n" is listed, and the least listed token is not small enough to bound them
    steps = _answer([("The", -0.5), ("yes", -1.0)])
    steps[3] = ("yes", -1.0, [("The", -0.5), ("yes", -1.0), ("x", -3.0)])
    text = "".join(t for t, _, _ in steps)
    pre = PreMask(tuple((t, lp, tuple(tops)) for t, lp, tops in steps), SCHEMA)
    done = renormalised(Completion(text, "stop", 1, 5, 0.1, "m", pre_mask=pre), json.loads(text))
    assert field_confidences(SCHEMA, json.loads(text), done) == {}


def test_a_collided_rival_counts_at_the_value_before_it() -> None:
    # "no" shows -5.0 but stands where only values of -1.0 or more can stand: it weighs up to e^-1
    found = _confidences(_answer([("yes", -1.0), ("no", -5.0), ("A", -2.0)]))
    assert found == {"a": pytest.approx(0.5, abs=1e-6)}


def test_a_free_string_gets_none_and_a_boolean_gets_one() -> None:
    steps = [('{"', -0.1, [('{"', -0.1)]), ("note", -0.1, [("note", -0.1)]), ('":"', -0.1, [('":"', -0.1)]),
             ("hi", -2.0, [("hi", -2.0)]), ('","', -0.1, [('","', -0.1)]), ("paid", -0.1, [("paid", -0.1)]),
             ('":', -0.1, [('":', -0.1)]), ("true", -1.0, [("true", -1.0), ("false", -1.0), ("t", -3.0)]),
             ("}", -0.1, [("}", -0.1)])]  # fmt: skip
    spelled = math.exp(-1.0) + math.exp(-3.0)  # "t" writes what "true" begins with: the same characters
    assert _confidences(steps) == {"paid": pytest.approx(spelled / (spelled + math.exp(-1.0)), abs=1e-6)}


def test_pieces_that_do_not_spell_the_text_give_nothing() -> None:
    pre = PreMask((('{"a":"yes"}', -0.1, (('{"a":"yes"}', -0.1),)),), SCHEMA)
    completion = Completion('{"a":"no"}', "stop", 1, 1, 0.1, "m", pre_mask=pre)
    assert renormalised(completion, {"a": "no"}).token_logprobs == ()


def test_the_values_a_grammar_may_write_are_listed_only_for_lists() -> None:
    assert allowed_values({"enum": ["café", None]}) == sorted(['"café"', '"caf\\u00e9"', "null"])
    assert allowed_values({"anyOf": [{"enum": [12, 12.5]}, {"type": "null"}]}) == ["12", "12.5", "null"]
    assert allowed_values({"type": ["boolean", "null"]}) == ["false", "null", "true"]
    assert allowed_values({"type": "string"}) is None
    assert allowed_values({"anyOf": [{"enum": ["a"]}, {"type": "string"}]}) is None
