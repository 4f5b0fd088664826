"""Solved examples from rows a person settled: the schema again, carrying them (`formwork examples`).

A small model reads a field's convention better from a solved case than from a sentence (schemas.
examples), and the cases that teach it most are the user's own: records of their data where a person
settled what the model was unsure of (`formwork review --unsure`, then `formwork settle`). A row is
an example when every field is settled (certified, confirmed by a person, or none without doubt) and
a person confirmed at least one of them, so someone has looked at it. Rows where the person corrected
the model come first (they show what it got wrong), then the shortest texts (each example is in every
prompt). An answer the schema's own check refuses (a copied value its text does not hold) is skipped.

Where examples may come from, and where not:
- decisions are never an audit's answers (db.models.Decision: a person saw the rows the run was
  unsure of), so no example is taken from the blind sample a calibration was certified on;
- an audit of a later run leaves out records whose text is one of its schema's examples
  (flows.audit): a model shown a record's answer reads that record right, and would certify itself;
- examples change every prompt, and a calibration is keyed by the schema's body (tasks.evaluation.
  key), so none measured without them applies to runs with them: the command says so.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from formwork.db.decisions import run_decisions
from formwork.db.models import Record, Run, RunResult
from formwork.db.queries import result_rows
from formwork.flows.delivered import every_value, top_fields
from formwork.schemas.examples import EXAMPLES, MAX_EXAMPLES, Example, schema_examples
from formwork.schemas.problems import SchemaProblem
from formwork.schemas.registry import schema_from_body


@dataclass(frozen=True)
class Found:
    """A settled row as an example, and what ranks it: whether a person corrected the model in it."""

    example: Example
    corrected: bool
    record: str


def settled_rows(session: Session, run_id: int) -> list[Found]:
    """Every row of run `run_id` whose fields are all settled and one confirmed by a person, as the
    example it makes (certified and confirmed values, null where the text has none)."""
    run = session.get(Run, run_id)
    if run is None:
        return []
    fields = top_fields(run.schema_body)
    decided = run_decisions(session, run_id)
    query = select(Record.source, Record.key, Record.text).join(RunResult, RunResult.record_id == Record.id)
    held = session.execute(query.where(RunResult.run_id == run_id)).all()
    texts = {(source, key): text for source, key, text in held}
    found = []
    for row in result_rows(session, run_id):
        decisions = decided.get((row["source"], row["record"]), {})
        values = every_value(fields, row | {"decisions": decisions})
        if not values or not all(d.settled for d in values.values()):
            continue
        if not any(d.state == "confirmed" for d in values.values()):
            continue
        answer = {name: d.value if d.state != "none" else None for name, d in values.items()}
        corrected = any(decision["action"] != "accept" for decision in decisions.values())
        found.append(Found(Example(texts[row["source"], row["record"]], answer), corrected, row["record"]))
    return found


def chosen(found: list[Found], count: int, max_chars: int) -> list[Found]:
    """At most `count` examples of texts up to `max_chars`, corrected rows first, then the shortest, one
    per distinct text."""
    fitting = [f for f in found if len(f.example.text) <= max_chars]
    ranked = sorted(fitting, key=lambda f: (not f.corrected, len(f.example.text), f.record))
    unique = {f.example.text: f for f in reversed(ranked)}  # the best-ranked row of each text
    return [f for f in ranked if unique[f.example.text] is f][:count]


def with_examples(body: dict[str, Any], found: list[Found], source: str) -> tuple[dict[str, Any], list[str]]:
    """`body` with `found` added to its examples (after those it has, up to MAX_EXAMPLES) and its
    `x-version` one higher where it states one (a body that changes under the same version is refused
    beside the rows of the old one, db.store), and why each one left out was: an example the schema's
    own check refuses is skipped, not written."""
    before = [{"text": e.text, "answer": e.answer} for e in schema_examples(body)]
    kept, skipped = before, []
    for candidate in found:
        if len(kept) >= MAX_EXAMPLES:
            skipped.append(f"{candidate.record}: the schema holds {MAX_EXAMPLES} examples already")
            continue
        tried = [*kept, {"text": candidate.example.text, "answer": candidate.example.answer}]
        try:
            schema_from_body(copy.deepcopy(body) | {EXAMPLES: tried}, source)
        except SchemaProblem as exc:
            skipped.append(f"{candidate.record}: {exc}")
            continue
        kept = tried
    written = copy.deepcopy(body) | ({EXAMPLES: kept} if kept else {})
    if isinstance(body.get("x-version"), int) and kept != before:
        written["x-version"] = body["x-version"] + 1
    return written, skipped
