"""Calibrations that ship with the package: measured by the project on its gold sets, as data.

A fresh database holds no calibration, so without these a new user's first run can certify nothing
(no enum passes the conservative default). Each file in `shipped/` is one calibration with its full
key (tasks.evaluation.key), the gold set's hash and size, the threshold, its bounds, target, level and
the day it was measured; `formwork eval GOLD --schema S --calibrate --export FILE` writes one from
the calibration it stores. A run uses a shipped calibration only when its whole key matches and its
database has none of its own: one made on the user's own gold overrides it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from formwork.tasks.evaluation.key import CalibrationKey

SHIPPED = Path(__file__).parent / "shipped"
FIELDS = ("method", "threshold", "target", "level", "bound", "kept", "correct", "values_bound",
          "values_kept", "values_correct", "gold_hash", "gold_size", "measured")  # fmt: skip


class ShippedProblem(ValueError):
    """A shipped calibration file cannot be read: a packaging bug, never skipped silently."""


def read_shipped(path: Path) -> dict[str, Any]:
    """One shipped file, checked: its key and every field a run's sentence needs."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ShippedProblem(f"{path}: not a readable calibration ({exc})") from exc
    missing = [name for name in ("key", *FIELDS) if name not in data]
    if missing:
        raise ShippedProblem(f"{path}: a shipped calibration needs {', '.join(missing)}")
    try:
        CalibrationKey(**data["key"])
    except TypeError as exc:
        raise ShippedProblem(f"{path}: its key does not name a calibration key ({exc})") from exc
    return data | {"file": path.name}


def find_shipped(key: CalibrationKey, folder: Path | None = None) -> dict[str, Any] | None:
    """The newest shipped calibration whose whole key is `key`, if any."""
    found = [read_shipped(path) for path in sorted((folder or SHIPPED).glob("*.json"))]
    matching = [data for data in found if data["key"] == key.as_dict()]
    return max(matching, key=lambda data: (data["measured"], data["file"]), default=None)
