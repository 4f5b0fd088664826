"""What the run already knows about one value that says whether it is right: the score's inputs.

For the value one reading gave at one path:
- `own`: the logit of that reading's probability of it;
- `other`: the logit of the other reading's probability of the same value where the two agree, and of
  what the other reading left for every value but its own where they disagree (an upper bound on its
  probability of this one); 0 where there is no other reading;
- `agree`: the other reading gave the same value (null agrees only with null);
- `agreed`: where they agree, how sure the less sure of the two is, in nines (0.999 is 3, capped at 5),
  else 0: two readings that agree are the strongest signal, and their weaker probability ranks it;
- `margin`: the top-2 margin among the candidates, the value's probability less its runner-up's bound
  (0 where the engine reports no runner-up);
- `share`: the logit of the value's share among the values, its probability with the model's doubt
  whether to write any value set apart (p / (1 - p_null)); a null's, or where the engine reported no
  p_null, its own probability. On the expense gold it ranks dates where `own` does not (AUROC 0.95
  against 0.75: a right date the model nearly left null, BENCHMARKS 46); a score model fitted before
  it has no weight for it and scores as it did;
- `null`: the value is the reading's null ("the text has none" is a claim like any other);
- `exact`, `normalised`, `fuzzy`, `derived`: how the text backs it (a relative date is derived, and a
  "Sent on" date beside a "yesterday" is the mistake both readings share);
- `offered`: log of 1 + the number of candidates grounded decoding offered the field (one of two
  dates is an easier choice than one of forty spans);
- `competes`: a date field in a text that states a date and also a relative one;
- `after_notes`: the value was written after the reasoning notes (two-pass), not from the text alone;
- `field=NAME`: the field itself (a per-field offset).

The score is monotone in `own`, `other`, `agree`, `agreed`, `margin` and `share` (tasks.confidence.score):
more probability, agreement or margin never lowers it.
"""

from __future__ import annotations

import math
from typing import Any

from formwork.tasks.confidence.readings import PathReading, logit, same

FEATURES_VERSION = 2  # bump when a feature changes: a stored score model reads features by name
MONOTONE = ("own", "other", "agree", "agreed", "margin", "share")  # weights held >= 0
NINES_CAP = 5.0  # 0.99999: past it, a probability on this scale says nothing more
KINDS = ("exact", "normalised", "fuzzy", "derived")
NOTES_READING = "two-pass"  # the reading written after the reasoning notes


def features(field: str, name: str, mine: PathReading, other: PathReading | None, offered: int,
             competes: bool) -> dict[str, float]:  # fmt: skip
    """The inputs of the score for the value reading `name` gave at a path of `field`."""
    agree = other is not None and other.usable and same(mine.value, other.value)
    if other is None or not other.usable or other.probability is None:
        rival = 0.0
    elif agree:
        rival = logit(other.probability)
    else:
        rival = logit(1.0 - other.probability)
    found = {
        "own": logit(mine.probability),
        "other": rival,
        "agree": float(agree),
        "agreed": nines(min(mine.probability or 0.0, other.probability or 0.0)) if agree and other else 0.0,
        "margin": mine.margin or 0.0,
        "share": logit(mine.probability if (share := mine.among_values) is None else share),
        "null": float(mine.value is None),
        "offered": math.log1p(max(offered, 0)),
        "competes": float(competes),
        "after_notes": float(name == NOTES_READING),
        f"field={field}": 1.0,
    }
    if mine.kind in KINDS:
        found[mine.kind] = 1.0
    return found


def nines(p: float) -> float:
    """How many nines a probability has: -log10(1 - p), capped (0.9 is 1, 0.999 is 3)."""
    return min(-math.log10(max(1.0 - p, 10.0**-NINES_CAP)), NINES_CAP)


def candidate_counts(body: Any, path: str = "") -> dict[str, int]:
    """Per field (path without indices), how many values the grounded grammar offered it: the size of
    the enum grounded decoding put there, or of a schema enum; fields it left free are absent."""
    found: dict[str, int] = {}
    if not isinstance(body, dict):
        return found
    if isinstance(body.get("enum"), list) and path:
        found[path] = sum(1 for v in body["enum"] if v is not None)
    for key, node in (body.get("properties") or {}).items():
        found |= candidate_counts(node, f"{path}.{key}" if path else key)
    if isinstance(body.get("items"), dict):
        found |= candidate_counts(body["items"], f"{path}[]")
    for branch in body.get("anyOf") or []:
        found |= candidate_counts(branch, path)
    return found
