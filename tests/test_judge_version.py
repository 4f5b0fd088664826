"""The readers' version follows the judge: verdicts on the gold that change without a bump fail here.

The judge is run for real on every gold set (not the held-out files), no model: each record's perfect
answer and the same answer with one value made wrong (tasks.evaluation.judge_verdicts). Review 5 saw
"MILK 2PT £1.15" as a quantity accepted, then refused, under one calibration key.
"""

from __future__ import annotations

import json
from pathlib import Path

from formwork.tasks.evaluation.judge_verdicts import fingerprints
from formwork.tasks.evaluation.key import JUDGE_VERDICTS, pipeline_version
from formwork.tasks.evaluation.shipped import SHIPPED
from formwork.tasks.grounding.candidates import READERS_VERSION

GOLD = Path(__file__).resolve().parents[1] / "examples" / "gold"


def test_the_judges_verdicts_on_the_gold_are_the_ones_recorded_for_this_readers_version() -> None:
    now = fingerprints(GOLD)
    recorded = JUDGE_VERDICTS.get(READERS_VERSION)
    changed = sorted(name for name in now if (recorded or {}).get(name) != now[name])
    assert not changed, (
        f"the judge's verdicts on {', '.join(changed)} are not those recorded for readers' version "
        f"{READERS_VERSION}: bump READERS_VERSION (tasks/grounding/candidates.py) and record {now} in "
        "tasks.evaluation.key.JUDGE_VERDICTS; a shipped calibration of a changed gold set no longer applies"
    )


def test_a_shipped_calibration_applies_only_where_the_judge_gives_its_gold_the_verdicts_it_was_measured_with(
) -> None:  # fmt: skip
    files = sorted(SHIPPED.glob("*.json"))
    assert files
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        schema, measured = data["key"]["schema_name"], data["measured_with"]
        readers = int(measured["pipeline"].split(".")[0].removeprefix("r"))
        assert data["key"]["pipeline"] == pipeline_version(), f"{path.name} no longer applies to this build"
        assert measured["judge"] == JUDGE_VERDICTS[readers][schema], path.name
        assert measured["judge"] == JUDGE_VERDICTS[READERS_VERSION][schema], (
            f"{path.name} was measured under verdicts this build no longer gives its gold: measure it again"
        )
