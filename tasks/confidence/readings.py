"""One record read more than once: what each reading said at every path, and whether they agree.

A reasoning pass can drop or bend what the text states, and a formatting pass follows its notes, so
the two-pass probability measures how faithfully the JSON copies the notes, not whether the notes
read the text right (the 1.5B wrote `who: null` at p 0.71 for "(Tom)" where the notes left him out).
A second, notes-free reading of the same candidates (the text and the field guide alone) measures the
reading itself; two differently framed readings that agree are the strongest signal of a right value,
and their disagreement the strongest of a wrong one.

Each reading is judged as any row is (grounding, copies, validation), and at every path of the
schema this module keeps what that reading holds: the value (None: the reading's null), its
probability among the values the grammar allowed, the judge's verdict (a refused value is not a
reading of the text), and how the text backs it. A path's field is the path without item indices
(`items[2].amount` is field `items[].amount`): a guarantee is per field.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

USABLE = ("passed", "null")  # verdicts whose value (or null) a row may keep
INDEX = re.compile(r"\[\d+\]")


def field_key(path: str) -> str:
    """The field a value path belongs to: its path without item indices."""
    return INDEX.sub("[]", path)


@dataclass(frozen=True)
class PathReading:
    """What one reading holds at one path."""

    value: Any  # None: the reading's null ("the text has none")
    probability: float | None  # among the values the grammar allowed; None: the engine gave none
    verdict: str  # the judge's: passed, null, refused, nulled, below bound, unsure null
    kind: str  # how the text backs it: exact, normalised, fuzzy, derived, none; null for a null
    written: bool = False  # the text writes it (a span backs it; an aliased enum's label is read)
    rival: float | None = None  # a bound on the runner-up's probability (None: the engine gave none)
    null: float | None = None  # a value's: the probability null was written in its place (None: unknown)

    @property
    def margin(self) -> float | None:
        """The top-2 margin among the candidates: this value's probability less the runner-up's bound."""
        if self.probability is None or self.rival is None:
            return None
        return self.probability - self.rival

    @property
    def among_values(self) -> float | None:
        """A value's probability among the values, the value-or-null decision set apart: p / (1 - p_null)."""
        if self.probability is None or self.null is None or self.value is None or self.null >= 1.0:
            return None
        return min(1.0, self.probability / (1.0 - self.null))

    @property
    def usable(self) -> bool:
        return self.verdict in USABLE

    def as_dict(self) -> dict[str, Any]:
        return {"value": self.value, "p": self.probability, "verdict": self.verdict, "kind": self.kind,
                "written": self.written, "rival": self.rival, "p_null": self.null}  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PathReading:
        return cls(data["value"], data["p"], data["verdict"], data["kind"], bool(data.get("written")),
                   data.get("rival"), data.get("p_null"))  # fmt: skip


def readings_of(values: list[dict[str, Any]], evidence: list[dict[str, Any]]) -> dict[str, PathReading]:
    """Every judged value and null of one reading (a verdict's `values` and `evidence`), by path."""
    backed = {row["path"]: row for row in evidence}
    found = {}
    for judged in values:
        value, row = judged["value"], backed.get(judged["path"], {})
        kind = "null" if value is None else row.get("kind", "none")
        found[judged["path"]] = PathReading(value, judged["confidence"], judged["verdict"], kind,
                                            bool(row.get("spans")), judged.get("rival"),
                                            judged.get("p_null"))  # fmt: skip
    return found


def _plain(value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return round(float(value), 9)
    if isinstance(value, str):
        return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", value)).strip().casefold()
    return value


def same(a: Any, b: Any) -> bool:
    """Whether two readings gave the same value: numbers by value, strings after NFKC, case folding
    and collapsing spaces (one reading's "Acme GmbH" is the other's "ACME GmbH"), null only as null."""
    return _plain(a) == _plain(b)


def logit(p: float | None, floor: float = 1e-6) -> float:
    """log(p / (1 - p)), with p kept inside [floor, 1 - floor] (a forced value has p exactly 1)."""
    q = min(max(p if p is not None else floor, floor), 1.0 - floor)
    return math.log(q / (1.0 - q))
