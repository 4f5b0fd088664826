"""Where each value of a JSON text stands: a small position-tracking parse.

Two readers need it: the judge, to find the tokens that wrote each value (tasks.confidence.probability),
and the engines, to know where each value is decided when they credit other spellings of what was
written (tasks.engines.spelling). It lives with the engines, below both.
"""

from __future__ import annotations

import json

_DECODER = json.JSONDecoder()
_WHITESPACE = " \t\n\r"


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in _WHITESPACE:
        at += 1
    return at


def value_spans(text: str) -> dict[str, tuple[int, int]]:
    """The character span of every scalar value (null included) in a JSON text, keyed by path
    (`items[2].name`); {} when the text is not one whole JSON value."""
    spans: dict[str, tuple[int, int]] = {}

    def parse(at: int, path: str) -> int:
        at = _skip(text, at)
        if text.startswith("{", at):
            at = _skip(text, at + 1)
            while not text.startswith("}", at):
                key, at = _DECODER.raw_decode(text, at)
                at = _skip(text, at)
                at = parse(at + 1, f"{path}.{key}" if path else str(key))  # past the ':'
                at = _skip(text, at)
                if text.startswith(",", at):
                    at = _skip(text, at + 1)
            return at + 1
        if text.startswith("[", at):
            at, index = _skip(text, at + 1), 0
            while not text.startswith("]", at):
                at = _skip(text, parse(at, f"{path}[{index}]"))
                index += 1
                if text.startswith(",", at):
                    at = _skip(text, at + 1)
            return at + 1
        _, end = _DECODER.raw_decode(text, at)
        spans[path] = (at, end)
        return end

    try:
        parse(0, "")
    except (ValueError, IndexError):
        return {}
    return spans


def decided_at(text: str, span: tuple[int, int]) -> int:
    """Where the value at `span` is decided: its end, or one character more for a number, whose end
    is the choice to stop there (`12` rather than `12.5`)."""
    start, end = span
    return end + 1 if type(_DECODER.decode(text[start:end])) in (int, float) else end
