"""Confidence for every value: the probability the formatting pass gave it among the values allowed.

A span cannot back an enum value ("angry" is rarely written in an angry message), and a span can back
the wrong number (the subtotal for the total). What the model can tell us is how sure it was: both
engines record each output token's log-probability under the grammar-masked distribution
(`Completion.token_logprobs`; vLLM's are checked in `engines.vllm_logprobs`), so the probability of a
value among the values the grammar allowed is the product over the tokens that wrote it. A token the
grammar forced has probability 1 and costs nothing, so the decisive steps are where the allowed values
diverge. The value's characters are located in the output JSON (a small position-tracking parse), the
tokens that overlap them are summed in log space, and a number also pays for the token after it: that
token is the choice to stop (`12` rather than `12.5`), which a string's closing quote already holds.
The result is one probability per non-null value path; `field_confidences(..., nulls=True)` gives
the same for each null, the probability of the tokens that wrote `null` (under grounded decoding null
is one of the choices, so it is a claim like any other: "the text has none").
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from formwork.schemas.annotations import value_types
from formwork.tasks.engines.base import Completion
from formwork.tasks.engines.json_spans import decided_at, value_spans

__all__ = ["chosen", "field_confidences", "field_null_mass", "field_rivals", "min_confidence", "null_paths",
           "value_paths", "value_spans"]  # fmt: skip
OPENERS = ":[,"  # what stands before a value in JSON: where the choice of a value (or null) begins


def _token_spans(pieces: tuple[tuple[str, float], ...]) -> Iterator[tuple[int, int, float]]:
    at = 0
    for piece, logprob in pieces:
        yield at, at + len(piece), logprob
        at += len(piece)


def chosen(node: dict[str, Any]) -> bool:
    """An enum or boolean: a value the model picks from a list, which no span of the text can back."""
    return "enum" in node or value_types(node) == {"boolean"}


def value_paths(body: dict[str, Any], data: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """(path, schema node) of every non-null scalar value in `data`: each one carries a confidence."""
    if isinstance(data, dict):
        for key, node in (body.get("properties") or {}).items():
            yield from value_paths(node, data.get(key), f"{path}.{key}" if path else key)
    elif isinstance(data, list) and isinstance(body.get("items"), dict):
        for i, element in enumerate(data):
            yield from value_paths(body["items"], element, f"{path}[{i}]")
    elif data is not None and not isinstance(data, dict | list):
        yield path, body


def null_paths(body: dict[str, Any], data: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """(path, schema node) of every property or item whose value is null: each one is a claim of absence."""
    if isinstance(data, dict):
        for key, node in (body.get("properties") or {}).items():
            where = f"{path}.{key}" if path else key
            if key in data and data[key] is None and isinstance(node, dict):
                yield where, node
            else:
                yield from null_paths(node, data.get(key), where)
    elif isinstance(data, list) and isinstance(body.get("items"), dict):
        for i, element in enumerate(data):
            if element is None:
                yield f"{path}[{i}]", body["items"]
            else:
                yield from null_paths(body["items"], element, f"{path}[{i}]")


def _value_tokens(
    body: dict[str, Any], data: Any, completion: Completion, nulls: bool
) -> Iterator[tuple[str, list[int]]]:
    """(path, the indices of the tokens that wrote and decided its value) for every value path (every
    null path with `nulls`); nothing when the tokens do not spell the output text exactly."""
    pieces = completion.token_logprobs
    if not pieces or "".join(p for p, _ in pieces) != completion.text:
        return
    spans = value_spans(completion.text)
    tokens = list(_token_spans(pieces))
    for path, _ in (null_paths if nulls else value_paths)(body, data):
        if path in spans:
            start, end = spans[path][0], decided_at(completion.text, spans[path])
            yield path, [i for i, (s, e, _) in enumerate(tokens) if s < end and e > start]


def field_confidences(
    body: dict[str, Any], data: Any, completion: Completion, nulls: bool = False
) -> dict[str, float]:
    """Per value path, the probability of the chosen value (per null path instead, with `nulls`);
    {} when the engine gave no logprobs.

    The tokens must spell the output text exactly; if they do not (an engine that post-processed its
    text), no confidence is claimed rather than a wrong one.
    """
    confidences = {}
    for path, steps in _value_tokens(body, data, completion, nulls):
        total = sum(completion.token_logprobs[i][1] for i in steps)
        if not math.isnan(total):  # NaN: a step whose masked probability is unknown (renormalise.py)
            confidences[path] = math.exp(total)
    return confidences


def field_rivals(
    body: dict[str, Any], data: Any, completion: Completion, nulls: bool = False
) -> dict[str, float]:
    """Per value path (null path, with `nulls`), a bound on the runner-up's probability: at each step
    that wrote the value, the chosen path so far times the likeliest token that writes something else
    there, the largest of those. The top-2 margin among the candidates is the value's probability less
    this. {} when the engine reported no rivals (a server whose logprobs come before its mask)."""
    rivals = completion.token_rivals
    if len(rivals) != len(completion.token_logprobs):
        return {}
    found = {}
    for path, steps in _value_tokens(body, data, completion, nulls):
        before, best = 0.0, 0.0
        for i in steps:
            best = max(best, math.exp(before + rivals[i]) if rivals[i] > -math.inf else 0.0)
            before += completion.token_logprobs[i][1]
        if not math.isnan(before):
            found[path] = best
    return found


def field_null_mass(body: dict[str, Any], data: Any, completion: Completion) -> dict[str, float]:
    """Per value path, a lower bound on the probability that `null` was written there instead: the
    value-or-null decision, apart from the choice among values (the value's probability over this is
    its share among the values). Each step from the one after the `:` (or `[`, `,`) before the value
    through the step that opens it counts its tokens that write null, times the chosen path before
    it. {} when the engine reported none (a server whose logprobs come before its mask)."""
    nulls, pieces, text = completion.token_nulls, completion.token_logprobs, completion.text
    if len(nulls) != len(pieces) or "".join(p for p, _ in pieces) != text:
        return {}
    spans, tokens = value_spans(text), list(_token_spans(pieces))
    found = {}
    for path, _ in value_paths(body, data):
        if path not in spans:
            continue
        start = spans[path][0]
        opened = max(text.rfind(c, 0, start) for c in OPENERS)
        before, mass = 0.0, 0.0
        for i, (s, e, logprob) in enumerate(tokens):
            if e > opened and s <= start:
                mass += math.exp(before + nulls[i]) if nulls[i] > -math.inf else 0.0
                before += logprob
        if not math.isnan(mass):
            found[path] = min(mass, 1.0)
    return found


def min_confidence(node: dict[str, Any], default: float = 0.0, model: str = "") -> float:
    """The field's `x-min-confidence` for `model`, else the run's setting; 0 means the check is off.

    A number holds for every model. An object maps model names (as the engine reports them) to bounds,
    with "*" for any other: a bound calibrated on one model says nothing about another (the bundled
    model in bf16 on vLLM is surer of its wrong labels than its Q4 copy on the embedded engine).
    """
    bound = node.get("x-min-confidence", default)
    if isinstance(bound, dict):
        bound = bound.get(model, bound.get("*", default))
    return float(bound) if isinstance(bound, int | float) and not isinstance(bound, bool) else default
