"""Calibrate `min_confidence` on gold data: how share ok trades against precision of ok.

A span cannot back an enum value, so its evidence is the probability the formatting pass gave it
(tasks.grounding). Which probability is enough depends on the schema and the model, so it is measured:
for each threshold, the records still `ok` if every enum or boolean value chosen with less probability
had failed, and how many of those are all correct. The recommended threshold is the lowest one whose
precision of ok reaches the target; None when no threshold reaches it (the model must not be trusted
on its own, or it gave no probabilities, as a server without logprobs does).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

THRESHOLDS = (0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99)
TARGET = 0.95


@dataclass(frozen=True)
class Point:
    """One scored record: its status, whether every scored field is right, its least confident choice."""

    ok: bool
    correct: bool
    least: float | None  # None: no enum or boolean value with a probability


def least_confidence(evidence: Iterable[dict[str, Any]] | None) -> float | None:
    found = [e["confidence"] for e in evidence or [] if e.get("confidence") is not None]
    return min(found) if found else None


def curve(points: Sequence[Point], thresholds: Sequence[float] = THRESHOLDS) -> list[dict[str, Any]]:
    """Share ok and precision of ok at each threshold (None precision: no record left ok)."""
    rows = []
    for threshold in thresholds:
        kept = [p for p in points if p.ok and (p.least is None or p.least >= threshold)]
        precision = sum(p.correct for p in kept) / len(kept) if kept else None
        rows.append(
            {"threshold": threshold, "share_ok": len(kept) / max(len(points), 1), "precision_ok": precision}
        )
    return rows


def recommended(rows: Sequence[dict[str, Any]], target: float = TARGET) -> float | None:
    """The lowest threshold whose precision of ok reaches `target`, if any does."""
    reaching = (r["threshold"] for r in rows if r["precision_ok"] is not None and r["precision_ok"] >= target)
    return next(reaching, None)
