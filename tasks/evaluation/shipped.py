"""Calibrations that ship with the package: measured by the project on its gold sets, as data.

A fresh database holds no calibration, so without these a new user's first run can certify nothing
(no enum passes the conservative default). Each file in `shipped/` is one calibration with its full
key (tasks.evaluation.key), the gold set's hash and size, the data it is (`gold`: which records, real
or written by the project; `formwork models` prints it), the score model, each field's claim
(threshold, values kept and right, bound, level), the rows' measured claim, and the day it was
measured; `formwork eval GOLD --schema S --calibrate --export FOLDER` writes one from the calibration
it stores. A run uses a shipped calibration only when its whole key matches and its database has none
of its own: one made on the user's own gold overrides it.

A file is checked before it is believed: every claim's bound is computed again from its own counts at
its level, and each field's level must be its share of the file's level (one per test that
could pass: tasks.confidence.certify.tests); a damaged or hand-edited file
(a threshold with too few values behind it, a bound its counts do not reach, counts that are none:
more right than kept) is refused, never applied. A refused file is said once, in one line, and left
out: the other files still serve, and no run or `formwork models` listing stops on it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import date
from functools import cache
from pathlib import Path
from typing import Any

from formwork.tasks.confidence.certify import FieldClaim, counts_problem, field_level, lower_bound, shares
from formwork.tasks.confidence.score import ScoreModel
from formwork.tasks.evaluation.key import CalibrationKey

SHIPPED = Path(__file__).parent / "shipped"
FIELDS = ("method", "threshold", "target", "level", "bound", "kept", "correct", "values_bound",
          "values_kept", "values_correct", "fields", "score_model", "gold_hash", "gold_size",
          "measured")  # fmt: skip
log = logging.getLogger(__name__)


class ShippedProblem(ValueError):
    """A shipped calibration file cannot be read or does not hold: a packaging bug, refused in one line
    (never applied, never skipped silently)."""


def read_shipped(path: Path) -> dict[str, Any]:
    """One shipped file, checked: its key and every field a run's sentence needs."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ShippedProblem(f"{path}: not a readable calibration ({exc})") from exc
    missing = [name for name in ("key", *FIELDS) if not isinstance(data, dict) or name not in data]
    if missing:
        raise ShippedProblem(f"{path}: a shipped calibration needs {', '.join(missing)}")
    try:
        CalibrationKey(**data["key"])
        date.fromisoformat(data["measured"][:10])
    except (TypeError, ValueError) as exc:
        raise ShippedProblem(f"{path}: its key or measuring day cannot be read ({exc})") from exc
    try:
        _check_claims(path, data)
    except ShippedProblem:
        raise
    except (TypeError, ValueError, ArithmeticError) as exc:  # a number written as text, say
        raise ShippedProblem(f"{path}: its numbers cannot be read ({exc!r})") from exc
    return data | {"file": path.name}


def _check_claims(path: Path, data: dict[str, Any]) -> None:
    """Refuse a file whose numbers do not certify what it states (see the module docstring). Its counts
    are checked before any bound is computed from them."""
    try:
        claims = [FieldClaim.from_dict(claim) for claim in data["fields"].values()]
        ScoreModel.from_dict(data["score_model"])
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise ShippedProblem(f"{path}: its fields or score model cannot be read ({exc!r})") from exc
    counts = [(f"field {c.field}", c.correct, c.kept, c.level) for c in claims]
    counts += [("rows", data["correct"], data["kept"], data["level"])]
    if data["values_kept"] is not None:
        counts += [("values", data["values_correct"], data["values_kept"], data["level"])]
    for name, correct, kept, level in counts:
        if (problem := counts_problem(correct, kept, level)) is not None:
            raise ShippedProblem(f"{path}: {name}: {problem}; it is refused, not applied")
    for claim in claims:
        if not isinstance(claim.values, int) or claim.kept > claim.values:
            raise ShippedProblem(f"{path}: field {claim.field} keeps {claim.kept!r} of {claim.values!r} "
                                 "values; it is refused, not applied")  # fmt: skip
    share = field_level(data["level"], shares(claims))  # a field too small to pass takes no share
    for claim in claims:
        if abs(claim.level - share) > 1e-9 or not claim.consistent():
            raise ShippedProblem(
                f"{path}: field {claim.field}'s claim does not hold by its own numbers ({claim.correct}/"
                f"{claim.kept} right at level {claim.level:g} give a bound of "
                f"{lower_bound(claim.correct, claim.kept, claim.level):.4f}, not {claim.bound:.4f} >= "
                f"{claim.target:g}); it is refused, not applied"
            )
    rows = lower_bound(data["correct"], data["kept"], data["level"])
    if abs(rows - data["bound"]) > 1e-6:
        raise ShippedProblem(f"{path}: its rows' bound {data['bound']:.4f} is not what {data['correct']}/"
                             f"{data['kept']} give ({rows:.4f}); it is refused, not applied")  # fmt: skip


def shipped_files(
    folder: Path | None = None, say: Callable[[str], None] | None = None
) -> list[dict[str, Any]]:
    """Every shipped calibration that passes its checks (`read_shipped`); each damaged one is refused in
    one line (to `say`, else the log) and left out, so one bad file neither stops a run nor takes the
    others with it."""
    found = []
    for path in sorted((folder or SHIPPED).glob("*.json")):
        try:
            found.append(read_shipped(path))
        except ShippedProblem as exc:
            (say or _refused)("shipped calibration refused: " + " ".join(str(exc).split()))
    return found


@cache
def _refused(problem: str) -> None:
    """Say a refused file once per process: a run looks its calibration up for every chunk."""
    log.warning("%s", problem)


def find_shipped(key: CalibrationKey, folder: Path | None = None) -> dict[str, Any] | None:
    """The newest shipped calibration whose whole key is `key`, if any."""
    matching = [data for data in shipped_files(folder) if data["key"] == key.as_dict()]
    return max(matching, key=lambda data: (data["measured"], data["file"]), default=None)


def shipped_for(
    model: str, folder: Path | None = None, say: Callable[[str], None] | None = None
) -> list[str]:
    """What each shipped calibration of `model` certifies, one line each: `formwork models` shows it, so
    a user choosing a model (or a stronger one to escalate to) sees which ones earn a guarantee here."""
    lines = []
    for data in shipped_files(folder, say):
        key = data["key"]
        if key["model"] != model:
            continue
        claims = [FieldClaim.from_dict(claim) for claim in data["fields"].values()]
        certified = [claim.field for claim in claims if claim.certified]
        lines.append(f"{key['schema_name']}@v{key['schema_version']} {key['mode']}: {len(certified)} of "
                     f"{len(claims)} fields certified ({', '.join(certified) or 'none'}) on "
                     f"{data.get('gold') or str(data['gold_size']) + ' gold records'}")  # fmt: skip
    return lines
