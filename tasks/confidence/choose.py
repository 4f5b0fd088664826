"""Which reading a row keeps for a field, and what is decided about each of its values.

Each top-level field is taken whole from one reading (an item list from one reading, never items
mixed from two), the reading whose least sure value is surest: by score under a calibration, by
probability otherwise. Every value of the field is then held to its own decision (tasks.confidence.
policy), so a field of several values may keep some and drop others. A run and a calibration choose
the same way: runs through `Policy.judge`, calibrations through the same call with a model fitted
without the record (tasks.evaluation.calibration), so the threshold is measured on the values a run
would keep.
"""

from __future__ import annotations

from collections.abc import Callable

from formwork.tasks.confidence.policy import Judged
from formwork.tasks.confidence.readings import PathReading

# (field path, reading name, its value there, the other reading's there) -> the decision
Decide = Callable[[str, str, PathReading, PathReading | None], Judged]


def top_key(path: str) -> str:
    """The top-level field a value path is under (`items[2].amount` -> `items`)."""
    return path.split(".", 1)[0].split("[", 1)[0]


def under(path: str, key: str) -> bool:
    return path == key or path.startswith((f"{key}.", f"{key}["))


def choose(key: str, readings: dict[str, dict[str, PathReading]], decide: Decide
           ) -> tuple[str | None, dict[str, Judged]]:  # fmt: skip
    """(the reading kept for top-level field `key`, the decision for each of its usable value paths);
    None when no reading holds a usable value there (a value the judge refused is not a reading of the
    text; it stays null where the kept reading's judge put null). `readings` maps each reading's name
    (in order of preference, which breaks ties) to its values by path."""
    best: tuple[float, int] | None = None
    chosen: tuple[str | None, dict[str, Judged]] = (None, {})
    for rank, (name, paths) in enumerate(readings.items()):
        mine = {path: reading for path, reading in paths.items() if under(path, key) and reading.usable}
        if not mine:
            continue  # refused there (or absent): this reading holds nothing of the field
        others = [other for other in readings if other != name]
        decisions = {
            path: decide(path, name, reading, readings[others[0]].get(path) if others else None)
            for path, reading in mine.items()
        }
        least = min(_weight(decision, reading) for decision, reading in
                    zip(decisions.values(), mine.values(), strict=True))  # fmt: skip
        if best is None or (least, -rank) > best:
            best, chosen = (least, -rank), (name, decisions)
    return chosen


def _weight(decision: Judged, reading: PathReading) -> float:
    """How sure a value is, to compare readings: its score, else its probability, else nothing."""
    if decision.score is not None:
        return decision.score
    return reading.probability if reading.probability is not None else -1.0
