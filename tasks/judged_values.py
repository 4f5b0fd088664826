"""What the judge made of every value and null of one attempt, as stored with its call (`judged`).

A reader of the calls can then see why one attempt was kept over another: each value with its
confidence and its verdict (passed, refused, below bound, nulled with a parent, a certified null,
an unsure null), where the row shows only the attempt that won.
"""

from __future__ import annotations

from typing import Any

from formwork.schemas.paths import Path, path_text
from formwork.tasks.confidence.bounds import Held
from formwork.tasks.grounding.evidence import Evidence


def _rounded(confidence: float | None) -> float | None:
    return None if confidence is None else round(confidence, 4)


def judged_values(
    evidence: list[Evidence], nulls: dict[str, float], held: list[Held],
    refused: list[tuple[Path, str]], nulled: list[str], rivals: dict[str, float] | None = None,
    null_mass: dict[str, float] | None = None,
) -> list[dict[str, Any]]:  # fmt: skip
    """Every value and null of one attempt with its confidence, its runner-up's bound (`rival`, where
    the engine reported one), the probability that null was written in a value's place (`p_null`,
    likewise) and what the judge made of it: passed, refused (validation or grounding), below bound,
    nulled (with a parent), null (certified), unsure null."""
    rivals, null_mass = rivals or {}, null_mass or {}
    below = {h.path for h in held if not h.null}
    unsure = {h.path for h in held if h.null}
    refused_paths = {path_text(path) for path, _ in refused}

    def verdict(path: str) -> str:
        if path in below:
            return "below bound"
        if path in refused_paths:
            return "refused"
        if any(path == n or path.startswith((f"{n}.", f"{n}[")) for n in nulled):
            return "nulled"
        return "passed"

    found = [
        {"path": e.path, "value": e.value, "confidence": _rounded(e.confidence), "verdict": verdict(e.path)}
        for e in evidence
    ]
    found += [
        {"path": path, "value": None, "confidence": _rounded(nulls.get(path)),
         "verdict": "unsure null" if path in unsure else "null"}
        for path in sorted(set(nulls) | unsure)  # weighed, or held though no engine weighed it
    ]  # fmt: skip
    for entry in found:
        if entry["path"] in rivals:
            entry["rival"] = _rounded(rivals[entry["path"]])
        if entry["path"] in null_mass:  # values only (probability.field_null_mass)
            entry["p_null"] = _rounded(null_mass[entry["path"]])
    return found
