"""`formwork eval --verify` prints each checked claim in the claim's own words (verification.Claim.describe):
written out again in the CLI, a list field's line lost "records" and a pooled claim's "together, not per
field" (issue 52 points 2 and 6). No model: the claims are checked here from counts."""

from __future__ import annotations

from formwork.flows.cli.eval_reports import _claim
from formwork.tasks.confidence.certify import LEVEL
from formwork.tasks.evaluation.verification import check


def test_evals_verification_lines_say_records_and_pooled_as_the_claim_describes_itself() -> None:
    pooled = check("pooled over who, date", 90, 90, 0.95, LEVEL, 100, ("who", "date"))
    listed = check("items[].name", 78, 80, 0.95, LEVEL, 80, (), "record")
    for claim in (pooled, listed):
        said = _claim({**claim.__dict__, "pool": list(claim.pool)})  # as a JSON report holds it
        assert said == claim.describe()
    assert "together, not per field" in _claim(pooled.__dict__)
    assert "78/80 records right" in _claim(listed.__dict__)
