"""One correctness score per value: a small monotone logistic model fitted on gold, cross-fitted.

The signals (tasks.confidence.features) disagree in scale and meaning: a two-pass probability of 0.99
behind notes that dropped the person is worth less than a notes-free 0.9 that another reading agrees
with. A logistic regression weighs them into one estimate of the chance the value is right, fitted on the
calibration half of a gold set (the value right or wrong, per the gold). It is kept monotone where the
direction is known: the weights of the two probabilities and of agreement are held at zero or above (a
feature whose free fit asks for a negative weight is left out and the rest fitted again), so more
probability or agreement never lowers a score. An L2 penalty keeps the few hundred values of a gold half
from over-fitting the field offsets.

Thresholds are chosen on scores no value gave itself: `fold_models` fits on all folds but one, for each
fold, and a record is scored by the model its fold was left out of (folds by record, so a record's values
share a fold); only the model fitted on the whole half is stored and applied by runs. Applying a stored
model needs no numpy; fitting it does (the `eval` extra).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from formwork.tasks.confidence.features import MONOTONE

FOLDS = 5
PENALTY = 1.0  # L2 on every weight but the intercept
NEWTON_STEPS = 50


@dataclass(frozen=True)
class ScoreModel:
    """weights per feature name and an intercept; a feature the model never saw weighs nothing."""

    weights: dict[str, float] = field(default_factory=dict)
    intercept: float = 0.0

    def score(self, found: dict[str, float]) -> float:
        z = self.intercept + sum(self.weights.get(name, 0.0) * value for name, value in found.items())
        return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"method": "monotone-logistic", "intercept": self.intercept, "weights": self.weights}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScoreModel:
        return cls({str(k): float(v) for k, v in data["weights"].items()}, float(data["intercept"]))


def fit(rows: Sequence[dict[str, float]], right: Sequence[bool], penalty: float = PENALTY) -> ScoreModel:
    """The monotone logistic model of `right` on the feature `rows` (Newton's method on the penalised
    log-likelihood; a monotone feature whose weight comes out negative is dropped and the rest refitted)."""
    import numpy as np

    names = sorted({name for row in rows for name in row})
    if not rows or len(set(right)) < 2:  # all right or all wrong: no slope to learn, only the rate
        rate = (sum(right) + 0.5) / (len(right) + 1.0)
        return ScoreModel({}, math.log(rate / (1.0 - rate)))
    x = np.array([[row.get(name, 0.0) for name in names] for row in rows], dtype=float)
    y = np.array(right, dtype=float)
    kept = list(range(len(names)))
    while True:
        weights, intercept = _newton(x[:, kept], y, penalty)
        negative = [i for i, w in zip(kept, weights, strict=True) if names[i] in MONOTONE and w < 0]
        if not negative:
            break
        kept = [i for i in kept if i not in negative]
    return ScoreModel({names[i]: float(w) for i, w in zip(kept, weights, strict=True)}, float(intercept))


def _newton(x: Any, y: Any, penalty: float) -> tuple[Any, float]:
    import numpy as np

    design = np.hstack([np.ones((len(y), 1)), x])
    beta = np.zeros(design.shape[1])
    ridge = np.full(design.shape[1], penalty)
    ridge[0] = 0.0
    for _ in range(NEWTON_STEPS):
        p = 1.0 / (1.0 + np.exp(-np.clip(design @ beta, -30, 30)))
        gradient = design.T @ (y - p) - ridge * beta
        hessian = (design * (p * (1 - p))[:, None]).T @ design + np.diag(ridge) + 1e-9 * np.eye(len(beta))
        step = np.linalg.solve(hessian, gradient)
        beta += step
        if np.max(np.abs(step)) < 1e-8:
            break
    return beta[1:], float(beta[0])


def fold_of(record: str, folds: int = FOLDS) -> int:
    """A record's fold, fixed by its id (a byte the calibration/verification halves do not use)."""
    return hashlib.sha256(record.encode("utf-8")).digest()[1] % folds


def fold_models(rows: Sequence[dict[str, float]], right: Sequence[bool], records: Sequence[str],
                folds: int = FOLDS) -> dict[int, ScoreModel]:  # fmt: skip
    """One model per fold, fitted without that fold's records: each record is scored by the model of its
    own fold (`fold_of`), so no value scores itself."""
    fold = [fold_of(r, folds) for r in records]
    return {
        k: fit([row for row, f in zip(rows, fold, strict=True) if f != k],
               [good for good, f in zip(right, fold, strict=True) if f != k])
        for k in range(folds)
    }  # fmt: skip
