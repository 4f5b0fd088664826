"""Hold every value, and every null, to its confidence bound: what a run decides, never retried.

Calibration measures a bound on first answers (issue 26). So a value below its bound is not fed
back for another draw (a second answer, tested again, is a selection after a failed test that no
bound measured): it is nulled, or the row fails where the field cannot be null. The messages here are
therefore row errors, never retry feedback, and each ends with `HELD`, so that calibration can tell a
row that failed its bounds and nothing else ("ok at bound 0", `tasks.validate.only_guesses`).

A null is a claim too ("the text has none"). Under grounded decoding null is one of the choices, so
the tokens that wrote it carry its probability; a null below the bound its field's values are held to
leaves the field unsure (the row cannot be `ok`; the null stays null). Where a bound is in force and
no probability exists, a null is not certified either.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from formwork.tasks.confidence.policy import apart
from formwork.tasks.confidence.probability import chosen, min_confidence, null_paths, value_paths

HELD = "; held to its bound, not retried"  # ends every error of a value or null below its bound

Bounds = tuple[float, float | None]  # every value's bound; enum and boolean values' own (None: the same)


@dataclass(frozen=True)
class Held:
    """One value or null that did not meet its bound: where, and why, as the row's error says."""

    path: str
    message: str
    null: bool = False  # a null stays null; a value is nulled (or fails the row)


def _below(probability: float, bound: float) -> str:
    """The bound with two decimals or every digit it has ("0.995"), the probability with the digits that
    show it below: "probability 0.9899, below 0.99", never "probability 0.99, below 0.99"."""
    shown = f"{bound:.2f}" if float(f"{bound:.2f}") == bound else f"{bound:g}"
    return f"probability {apart(probability, bound)}, below {shown}"


def _bound(node: dict[str, Any], bounds: Bounds, written: bool, model: str) -> float:
    """The bound a field's value (or null) is held to: a choice's own unless the text writes its label."""
    default = bounds[1] if chosen(node) and not written and bounds[1] is not None else bounds[0]
    return min_confidence(node, default, model)


def held_values(
    body: dict[str, Any], data: Any, confidences: dict[str, float], bounds: Bounds, model: str,
    written: set[str], shown: Callable[[str], Any], fresh: Callable[[str], bool],
) -> Iterator[Held]:  # fmt: skip
    """The non-null values below their bound (`written`: paths whose label the text writes; `shown`:
    the value to quote at a path; `fresh`: a path not inside one that already failed)."""
    for text, node in value_paths(body, data):
        least = _bound(node, bounds, text in written, model)
        if least <= 0 or not fresh(text):
            continue
        value = json.dumps(shown(text), ensure_ascii=False)
        if least > 1:  # no calibration holds this chosen value: no probability is enough
            yield Held(text, f"{text} {value} is a choice no calibration covers for this schema and model "
                             "(run formwork eval --calibrate)" + HELD)  # fmt: skip
        elif text not in confidences:  # a bound that cannot be checked is not met (fail closed)
            yield Held(text, f"{text} {value} has no probability to hold to {least:.2f}: the engine gave "
                             "no grammar-masked logprobs (see docs/production.md)")  # fmt: skip
        elif confidences[text] < least:
            below = _below(confidences[text], least)
            yield Held(text, f"{text} {value} is below its bound ({below})" + HELD)


def held_nulls(
    body: dict[str, Any], data: Any, confidences: dict[str, float], bounds: Bounds, model: str,
    fresh: Callable[[str], bool],
) -> Iterator[Held]:  # fmt: skip
    """The nulls not certified at their field's bound: the field is unsure, though it stays null."""
    for text, node in null_paths(body, data):
        least = _bound(node, bounds, False, model)
        if least <= 0 or not fresh(text):
            continue
        if least > 1:
            yield Held(text, f"{text} null is a choice no calibration covers for this schema and model, so "
                             "it does not show the text has none" + HELD, null=True)  # fmt: skip
        elif text not in confidences:
            yield Held(text, f"{text} null has no probability to hold to {least:.2f}, so it does not show "
                             "the text has none", null=True)  # fmt: skip
        elif confidences[text] < least:
            below = _below(confidences[text], least)
            yield Held(text, f"{text} null is unsure ({below}): the text may hold a value" + HELD, null=True)


def held_again(
    body: dict[str, Any], data: Any, earlier: frozenset[str], held: set[str], shown: Callable[[str], Any],
    fresh: Callable[[str], bool],
) -> list[Held]:  # fmt: skip
    """What stands where an earlier attempt of the record was held to its bound: held again, whatever its
    probability now. A retry for another error draws these fields anew, and keeping a second answer that
    passes would be a selection after a failed test, which no calibration measured (issue 26)."""
    nulls = {path for path, _ in null_paths(body, data)}
    found = []
    for path in sorted(earlier - held):
        if not fresh(path):
            continue
        if path in nulls:
            found.append(Held(path, f"{path} null stands where an earlier attempt was below its bound, so it "
                                    "does not show the text has none" + HELD, null=True))  # fmt: skip
        elif (value := shown(path)) is not None:
            found.append(Held(path, f"{path} {json.dumps(value, ensure_ascii=False)} stands where an earlier "
                                    "attempt was below its bound" + HELD))  # fmt: skip
    return found
