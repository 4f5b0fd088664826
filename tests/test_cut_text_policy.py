"""A text cut after `max_parts` parts is merged and held to the run's policy over the parts read, not its
whole length (issue 54, point 12: a 2 MB line took 80 s and 882 MB to build a grounded grammar over
text no part had read)."""

from __future__ import annotations

from typing import Any

from formwork.schemas.registry import load_schema
from formwork.tasks.calls import ExtractOptions, Outcome
from formwork.tasks.long.read import read_long
from formwork.tasks.prompts import MAX_SOURCE_CHARS
from formwork.tasks.validate import Verdict


def test_a_text_cut_after_max_parts_is_read_and_judged_over_the_parts_read_only() -> None:
    text = "Coffee 12.50 EUR with a friend. " * MAX_SOURCE_CHARS  # one line of ~190 KB, as pasted by mistake
    schema = load_schema("expense")
    seen: list[str] = []

    def per_record(record_id: int, part: str, *args: Any, **kwargs: Any) -> Outcome:
        seen.append(part)
        return Outcome(record_id, Verdict("partial", {}, ["nothing read"]), attempts=1)

    options = ExtractOptions(max_parts=2)
    outcome = Outcome(1, Verdict("failed", None, ["not processed"]), attempts=0)
    read = read_long(1, text, schema, (None, None), options, per_record, None, outcome)  # type: ignore[arg-type]
    assert read is not None and len(seen) == 2
    done, judged_over = read
    assert len(judged_over) < 2 * MAX_SOURCE_CHARS < len(text) and text.startswith(judged_over)
    assert all(judged_over.endswith(part) or part in judged_over for part in seen)
    errors = done.verdict.errors
    assert any(f"cut to {len(judged_over)} characters" in error for error in errors), errors
