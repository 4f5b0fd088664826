"""A measured run's rows decided again, offline: what a run applying a calibration would have stored.

The readings of a record do not depend on the calibration a run applies: both readings are judged,
and retried, on their refusals alone, never on a score (tasks.extract). So a run that measured the
gold records (`formwork eval --measure`) holds, per value, everything a calibrated run decides from
(`trust`), and deciding it again with a calibration's score and thresholds gives exactly what that run
would have stored, value for value (tasks.evaluation.calibration.kept_values chooses each field's
reading as tasks.decide does). That lets one pass of the model over a gold set serve the calibration
of one half and the verification of the other, and lets a new score be fitted without the model.
It is only sound while the readings would be the same: `same_readings` compares the pipeline version
the rows were read by with this build's (the readers and prompts; the score's features may differ).

A `two-readings` run holds a `one-pass` run too: its notes-free reading is the one-pass call, made by
the same function with the same options (tasks.extract.read_twice), and a reading's score features do
not depend on its name but for `after_notes` (tasks.confidence.features). `reading_alone` keeps that
reading, so one measuring run calibrates both modes, and the cascade between them is measured on
records both read (benchmarks/cascade.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from formwork.schemas.registry import Schema
from formwork.tasks.confidence.certify import FieldClaim
from formwork.tasks.confidence.score import ScoreModel
from formwork.tasks.evaluation.calibration import GoldRow, kept_values
from formwork.tasks.evaluation.certified import FieldCount, tally


def same_readings(read_by: str, this_build: str) -> bool:
    """Whether rows read by pipeline `read_by` are what this build reads (readers and prompts alike)."""
    parts = lambda version: {p[0]: p for p in version.split(".")}  # noqa: E731
    then, now = parts(read_by), parts(this_build)
    return then.get("r") == now.get("r") and then.get("p") == now.get("p")


def reading_alone(row: GoldRow, readings: set[str]) -> GoldRow:
    """The row as a run making only `readings` would have stored it: the others' values left out."""
    trust = []
    for entry in row.trust:
        kept = {name: found for name, found in entry["readings"].items() if name in readings}
        if kept:
            trust.append({**entry, "readings": kept})
    return GoldRow(row.record, trust, row.gold)


def replayed(schema: Schema, rows: Sequence[GoldRow], model: ScoreModel, claims: dict[str, FieldClaim]
             ) -> tuple[dict[str, FieldCount], int, int]:  # fmt: skip
    """Per field (values, certified, certified right; a list field by record, as tasks.evaluation.
    certified.tally counts), and the rows that would be `ok` (every value certified) with how many of
    those are entirely right, under `model` and `claims`."""
    seen: list[tuple[str, str, bool, bool]] = []
    ok = ok_right = 0
    for row in rows:
        kept = kept_values(schema, row, model, claims)
        every = True
        for field, score, right in kept:
            threshold = claims[field].threshold if field in claims else None
            certified = score is not None and threshold is not None and score >= threshold
            seen.append((field, row.record, certified, certified and right))
            every = every and certified
        if kept and every:
            ok += 1
            ok_right += all(right for *_, right in kept)
    return tally(list(claims), seen), ok, ok_right
