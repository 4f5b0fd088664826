"""The audit page: a person marks a random sample of a run's own records right or wrong, field by field.

One self-contained HTML file (inline CSS and JavaScript from audit.css and audit.js beside this
module, nothing fetched): one record at a time, its text with each value's evidence highlighted as on
the review page, and per field of the schema the value the run read (nulls included) and the
person's answer. Keys: r right, w wrong (type the right value), n none in the text, arrows to move.
Export writes `audit-run-N.jsonl`: one gold row per finished record, every field named, with the run,
the record and the seed in `meta` (db.audits reads it back; `formwork eval` can read it as gold too).

The audit is blind: what the run did with a value (certified, kept, dropped) and the row's status are
not on the page, so a ✓ cannot lean a person toward "right"; `formwork audit check` sets the answers
beside them. The value shown is what the run read, before any drop (tasks.evaluation.audit.read_value).

Answers live in the browser's storage, so a reload loses nothing, under a key made of this database's
identity (db.audits.database_identity) and everything the page shows: answers come back only to the
very same page, never to another database's run that happens to share its number, seed and records.
Every text is escaped; the records' data travel as JSON with `<`, `>` and `&` escaped.

A record whose text is one of the run's schema's solved examples (`x-examples`, flows.examples) is never
sampled: the model was shown its answer, so it reads that record right and would certify itself.
"""

from __future__ import annotations

import hashlib
import html
import json
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from formwork.db.audits import (
    AuditProblem,
    StoredRow,
    database_identity,
    looks_taken,
    run_key,
    run_rows,
    run_schema,
)
from formwork.db.calibrations import statement
from formwork.db.models import Record, Run, RunResult
from formwork.flows.review import colours, field_name, highlighted
from formwork.schemas.examples import schema_examples
from formwork.schemas.registry import Schema
from formwork.tasks.confidence.certify import TARGET
from formwork.tasks.evaluation.audit import BUDGET, applied_pool, look_level, needed, read_value, sample

HERE = Path(__file__).parent


def _kind(node: dict[str, Any]) -> dict[str, Any]:
    """How the page reads a typed answer for a field: its kind, and an enum's choices."""
    if "enum" in node:
        return {"kind": "enum", "options": [o for o in node["enum"] if o is not None]}
    types = node.get("type", [])
    types = {types} if isinstance(types, str) else set(types)
    for kind, among in (("number", {"number"}), ("integer", {"integer"}), ("boolean", {"boolean"}),
                        ("json", {"array", "object"})):  # fmt: skip
        if types & among:
            return {"kind": kind}
    return {"kind": "string"}


def _record(index: int, total: int, row: StoredRow, values: dict[str, Any], colour_of: dict[str, int]) -> str:
    rows = "".join(
        f'<tr class="frow" data-f="{html.escape(name)}"><th><span class="f{colour_of[name]}">'
        f"{html.escape(name)}</span></th><td class=val>"
        f"{html.escape(json.dumps(value, ensure_ascii=False))}</td><td class=ans></td></tr>"
        for name, value in values.items()
    )
    text = highlighted(row.text, row.evidence, colour_of)
    return (
        f'<section class="rec" data-i="{index}" hidden><header>record {index + 1} of {total} · '
        f"<b>{html.escape(row.key)}</b></header>"
        f'<div class="cols"><div class="text">{text}</div><table class="fields"><tr><th>field</th>'
        "<th>the run read</th><th>your answer</th></tr>"
        f"{rows}</table></div></section>"
    )


def _ids(rows: list[StoredRow]) -> list[str]:
    """Each record's gold id: its key, with its record number where two sampled records share a key."""
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.key] = counts.get(row.key, 0) + 1
    return [row.key if counts[row.key] == 1 else f"{row.key}#{row.record_id}" for row in rows]


def _embedded(value: Any) -> str:
    """JSON that stays inside its <script> element, whatever the texts hold."""
    text = json.dumps(value, ensure_ascii=False)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def _note(run_id: int, schema: Schema, audited: int, applied: dict[str, Any] | None, look: int) -> str:
    """What this many audited records can and cannot establish, and the commands that follow. `look`: the
    look the next `audit calibrate` of runs like this one takes (each spends less level: db.audits)."""
    target = (applied or {}).get("target", TARGET)
    spent = look_level(look)
    pool = applied_pool(applied or {})  # a pooled claim is one test: fewer tests share the level
    least = needed(schema, target, 1.0 - spent, pool)
    pooled = (
        f" ({html.escape(', '.join(pool))} pooled as one claim, their values counted together)"
        if pool
        else ""
    )
    fields = f"the {len(schema.properties)} fields of {html.escape(schema.label)}{pooled}"
    return (
        f'<p class="note">{audited} audited records check a guarantee (confirmed, broken, or not '
        f"contradicted) but can rarely certify one. Each <code>formwork audit calibrate</code> of runs like "
        f"this one is a look that spends level from one budget of {BUDGET:g}; the next is look {look}, at "
        f"level {spent:.4g}: with {fields} together, a field needs {least} of its values kept and right to "
        f"be certified at {target:.0%}. Export, then <code>formwork audit check audit-run-{run_id}.jsonl"
        f"</code>; to calibrate on your own records, audit at least {least} records (pass several files of "
        "runs like this one together) and run <code>formwork audit calibrate FILE...</code> once they are "
        "marked: each calibrate on more records later spends again, at half the level.</p>"
    )


def _page_key(database: str, data: dict[str, Any]) -> str:
    """The key the page's answers are saved under: the database, and every text and value it shows."""
    shown = json.dumps([database, data], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(shown.encode()).hexdigest()


def render_audit(run_id: int, schema: Schema, rows: list[StoredRow], seed: int, of: int,
                 applied: dict[str, Any] | None, database: str, look: int = 1) -> str:  # fmt: skip
    """The whole page: `rows` are the sample (of `of` records), `applied` what the run stored of its
    calibration (`runs.confidence`), `database` the database's identity (db.audits.database_identity),
    `look` the look the next `audit calibrate` of runs like this one takes."""
    names = list(schema.properties)
    colour_of, palette = colours(names)
    colour_of |= {field_name(e["path"]): colour_of.get(e["path"].split(".")[0].split("[")[0], 0)
                  for row in rows for e in row.evidence}  # fmt: skip
    shown = [{name: read_value(row.data, row.trust, name) for name in names} for row in rows]
    records = "".join(_record(i, len(rows), row, shown[i], colour_of) for i, row in enumerate(rows))
    data: dict[str, Any] = {
        "run": run_id, "seed": seed,
        "fields": [{"name": n, **_kind(schema.properties[n])} for n in names],
        "records": [{"id": gid, "key": row.key, "record_id": row.record_id, "text": row.text,
                     "values": values} for gid, row, values in zip(_ids(rows), rows, shown, strict=True)],
    }  # fmt: skip
    data["page"] = _page_key(database, data)
    title = f"Audit of run {run_id}"
    said = statement(applied) if applied else "no calibration (it ran with `calibration = false`)"
    note = _note(run_id, schema, len(rows), applied, look)
    footer = f"<footer><p>The run's calibration: {html.escape(said)}.</p>{note}</footer>"
    strip = "".join(f'<button class="box" tabindex="-1">{i + 1}</button>' for i in range(len(rows)))
    bar = (
        f'<div id="bar"><div><b>{html.escape(title)}</b> · {html.escape(schema.label)} · {len(rows)} of {of} '
        f'records, a uniform random sample (seed <b id="seed">{seed}</b>) · <span id="progress"></span> '
        '<button id="export">Export (e)</button></div>'
        '<div class="keys"><kbd>r</kbd> right · <kbd>w</kbd> wrong: type the right value, <kbd>Enter</kbd> '
        "· <kbd>n</kbd> none in the text · <kbd>↑</kbd><kbd>↓</kbd> field · <kbd>←</kbd><kbd>→</kbd> record "
        f'· <kbd>e</kbd> export</div><div id="strip">{strip}</div><div id="msg" role="status"></div></div>'
    )
    css = (HERE / "audit.css").read_text(encoding="utf-8")
    script = (HERE / "audit.js").read_text(encoding="utf-8")
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{css}{palette}</style></head><body>{bar}<main>{records}</main>{footer}"
        f'<script type="application/json" id="audit-data">{_embedded(data)}</script>'
        f"<script>{script}</script></body></html>"
    )


def audit_page(session: Session, run_id: int, size: int, seed: int) -> tuple[str, int]:
    """The page for a sample of `size` of run `run_id`'s records drawn with `seed`, and its size."""
    run = session.get(Run, run_id)
    if run is None:
        raise AuditProblem(f"no run {run_id} in this database")
    ids = list(session.scalars(select(RunResult.record_id).where(RunResult.run_id == run_id).distinct()))
    if not ids:
        raise AuditProblem(f"run {run_id} stored no result yet: nothing to audit")
    shown = {example.text.strip() for example in schema_examples(run.schema_body or {})}
    if shown:  # records whose answer the prompt shows the model
        texts = session.execute(select(Record.id, Record.text).where(Record.id.in_(ids))).all()
        ids = [record_id for record_id, text in texts if text.strip() not in shown]
    rows = run_rows(session, run_id, sample(ids, size, seed))
    database = database_identity(session, run)
    try:
        look = looks_taken(session, run_key(run)) + 1
    except AuditProblem:  # a run that recorded no key: `audit calibrate` refuses it, its note says look 1
        look = 1
    page = render_audit(run_id, run_schema(run), rows, seed, len(ids), run.confidence, database, look)
    return page, len(rows)
