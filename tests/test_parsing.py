"""The parsing ladder: each step on the output shape it exists for, and prose that must stay a failure."""

from __future__ import annotations

import pytest

from formwork.tasks.parsing import first_balanced, parse_ladder


@pytest.mark.parametrize(
    ("text", "step", "expected"),
    [
        ('{"amount": 42.8, "who": null}', "strict", {"amount": 42.8, "who": None}),
        ('Here you go:\n```json\n{"amount": 1}\n```\nHope it helps', "fences", {"amount": 1}),
        ('```\n{"amount": 2}\n```', "fences", {"amount": 2}),
        ('The answer is {"who": "Tom {the} driver", "n": {"a": 1}} and that is all.', "balanced",
         {"who": "Tom {the} driver", "n": {"a": 1}}),
        ("{who: 'Tom', ok: True, x: None, // a comment\n items: [1, 2,],}", "repair",
         {"who": "Tom", "ok": True, "x": None, "items": [1, 2]}),
        ('Sure! {"who": "Tom", "amount": 35', "repair", {"who": "Tom", "amount": 35}),  # unclosed
    ],
)  # fmt: skip
def test_each_step_finds_the_object_it_is_for(text: str, step: str, expected: dict) -> None:
    assert parse_ladder(text) == (expected, step)


@pytest.mark.parametrize(
    "text",
    [
        "I am sorry, I cannot answer in JSON.",
        "",
        "[1, 2, 3]",  # JSON, but not an object
        '"just a string"',
        "I think {who is Tom}",  # braces around prose
    ],
)
def test_prose_and_non_objects_are_no_json(text: str) -> None:
    assert parse_ladder(text) == (None, "none")


def test_balanced_skips_an_unclosed_brace_for_a_later_object() -> None:
    assert first_balanced('note { open, then {"a": "}"} end') == '{"a": "}"}'
    assert first_balanced("no braces here") is None
