"""A person settles the values a run was unsure of: the page (`formwork review --unsure`) and its import
(`formwork settle FILE`).

The page is one self-contained HTML file, as the audit page is (flows.audit): the run's rows that hold
an unsure or refused value (or a null the run doubted), one at a time, the text with the evidence of
the field in focus highlighted, and per field what the model read and its state. Keys: a accept the
model's value, f fix (type the value, Enter), n none in the text; once a row's last open value is
answered the next row shows at once (Enter or j next, k back, e export). Answers live in the browser's
storage under the page's own key; the export, `settle-run-N.jsonl`, is one line per decision with the
value the model read and its state then.

`settle` checks every line against what the run stored (the record is the run's, the field the
schema's, the model's value the run's reading), stores the decisions (db.decisions) with who and when,
and marks `ok` each current row whose every value is then certified, confirmed or a sure none. The
model's reading stays as it was. Failed rows are not offered: their answer was never checked (a retry
reads them again). Decisions never feed a calibration (db.decisions).
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from formwork.db.audits import AuditProblem, StoredRow, database_identity, run_rows, run_schema
from formwork.db.decisions import NewDecision, current_result, mark_ok, row_decisions, store_decisions
from formwork.db.models import Run
from formwork.flows.audit import _embedded, _kind, _page_key
from formwork.flows.delivered import Delivered, every_value, same, top_fields
from formwork.flows.review import colours, field_name, highlighted

HERE = Path(__file__).parent
ACTIONS = ("accept", "fix", "none")


class SettleProblem(ValueError):
    """A page or an export that does not fit what the run stored: one line to fix it."""


@dataclass(frozen=True)
class Open:
    """A run's row with values a person should settle: the row, and each field as delivered."""

    row: StoredRow
    values: dict[str, Delivered]

    @property
    def open(self) -> list[str]:
        return [name for name, d in self.values.items() if not d.settled]


def _delivered(session: Session, run: Run, rows: list[StoredRow]) -> list[Open]:
    """Each row's fields as delivered, with the decisions already stored on them."""
    fields = top_fields(run.schema_body)
    decided = row_decisions(session, [r.record_id for r in rows], run.schema_name, run.schema_version)
    return [Open(r, every_value(fields, vars(r) | {"decisions": decided.get(r.record_id, {})})) for r in rows]


def open_rows(session: Session, run_id: int) -> list[Open]:
    """The run's rows (not failed) that hold a value no calibration vouches for and no person settled."""
    run = session.get(Run, run_id)
    if run is None:
        raise SettleProblem(f"no run {run_id} in this database")
    rows = [r for r in run_rows(session, run_id) if r.status != "failed"]
    return [found for found in _delivered(session, run, rows) if found.open]


def _section(index: int, total: int, found: Open, colour_of: dict[str, int]) -> str:
    def line(name: str, d: Delivered) -> str:
        cls = "frow" if name in found.open else "done"
        shown = html.escape(json.dumps(d.value, ensure_ascii=False))
        why = f'<div class="why">{html.escape(d.why)}</div>' if d.why else ""
        return (f'<tr class="{cls}" data-f="{html.escape(name)}"><th><span class="f{colour_of[name]}">'
                f'{html.escape(name)}</span></th><td class=val>{shown}</td><td class="st {d.state}">{d.state}'
                f"{why}</td><td class=ans></td></tr>")  # fmt: skip

    rows = "".join(line(name, d) for name, d in found.values.items())
    text = highlighted(found.row.text, found.row.evidence, colour_of)
    return (
        f'<section class="rec" data-i="{index}" hidden><header>row {index + 1} of {total} · '
        f"<b>{html.escape(found.row.key)}</b> · {html.escape(found.row.status)}</header>"
        f'<div class="cols"><div class="text">{text}</div>'
        '<table class="fields"><tr><th>field</th><th>the model read</th><th>state</th><th>your decision</th>'
        f"</tr>{rows}</table></div></section>"
    )


CSS = """
.fields tr.done{color:#777}.st{font-size:12px}.st.unsure{color:#b26a00}.st.refused{color:#c62828}
.st.certified,.st.confirmed{color:#2e7d32}.why{color:#666;font-size:11px}
.ans .accept{color:#2e7d32;font-weight:600}.ans .fix{color:#1565c0;font-weight:600}
"""


def render_settle(run: Run, rows: list[Open], database: str) -> str:
    """The whole page for `rows` of `run`; `database` is the database's identity (the storage key)."""
    schema = run_schema(run)
    names = list(schema.properties)
    colour_of, palette = colours(names)
    colour_of |= {field_name(e["path"]): colour_of.get(e["path"].split(".")[0].split("[")[0], 0)
                  for found in rows for e in found.row.evidence}  # fmt: skip
    data: dict[str, Any] = {
        "run": run.id,
        "fields": {n: _kind(schema.properties[n]) | {"colour": colour_of[n]} for n in names},
        "rows": [{"record_id": f.row.record_id, "key": f.row.key, "open": f.open,
                  "values": {n: {"value": d.value, "state": d.state} for n, d in f.values.items()}}
                 for f in rows],
    }  # fmt: skip
    data["page"] = _page_key(database, data | {"texts": [f.row.text for f in rows]})
    title = f"Settle the unsure values of run {run.id}"
    sections = "".join(_section(i, len(rows), found, colour_of) for i, found in enumerate(rows))
    values = sum(len(f.open) for f in rows)
    bar = (
        f'<div id="bar"><div><b>{html.escape(title)}</b> · {html.escape(schema.label)} · {len(rows)} rows, '
        f'{values} values to settle · <span id="progress"></span> '
        '<button id="export">Export (e)</button></div>'
        '<div class="keys"><kbd>a</kbd> accept the model\'s value · <kbd>f</kbd> fix: type the value, '
        "<kbd>Enter</kbd> · <kbd>n</kbd> none in the text · <kbd>↑</kbd><kbd>↓</kbd> value · <kbd>Enter</kbd>"
        "<kbd>j</kbd> next row · <kbd>k</kbd> back · <kbd>e</kbd> export</div>"
        '<div id="msg" role="status"></div></div>'
    )
    empty = "" if rows else "<p>No unsure value left in this run.</p>"
    footer = (
        f"<footer><p>Export, then <code>formwork settle settle-run-{run.id}.jsonl</code>. Your decisions are "
        "stored beside the model's reading and never feed a calibration (they are not a random sample: "
        "audit with <code>formwork audit</code> for that).</p></footer>"
    )
    css = (HERE / "audit.css").read_text(encoding="utf-8") + CSS
    script = (HERE / "settle.js").read_text(encoding="utf-8")
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f'<style>{css}{palette}</style><style id="dyn"></style></head><body>{bar}<main>{sections}{empty}'
        f"</main>{footer}"
        f'<script type="application/json" id="settle-data">{_embedded(data)}</script>'
        f"<script>{script}</script></body></html>"
    )


def settle_page(session: Session, run_id: int) -> tuple[str, int, int]:
    """The page of run `run_id`'s open rows, how many rows and how many values to settle."""
    rows = open_rows(session, run_id)
    run = session.get(Run, run_id)
    assert run is not None  # open_rows refused a missing run
    page = render_settle(run, rows, database_identity(session, run))
    return page, len(rows), sum(len(f.open) for f in rows)


@dataclass(frozen=True)
class Settled:
    """What an import stored: decisions, the rows they touched and the rows now `ok`."""

    decisions: int
    rows: int
    ok: int


def _lines(path: Path) -> list[dict[str, Any]]:
    """The export's lines, each a JSON object."""
    try:
        lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except OSError as exc:
        raise SettleProblem(f"cannot read {path}: {exc.strerror or exc}") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SettleProblem(f"{path}: not a settle export ({exc})") from exc
    if not lines or not all(isinstance(line, dict) for line in lines):
        raise SettleProblem(f"{path}: no decision in it (export from the page of `formwork review --unsure`)")
    return lines


def _when(text: Any) -> datetime:
    try:
        at = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return datetime.now(UTC)
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def _checked(path: Path, number: int, line: dict[str, Any], run: Run, found: dict[int, Open]) -> NewDecision:
    """One export line as a decision, after checking it against what the run stored."""
    where = f"{path} line {number}"
    row = found.get(line.get("record_id"))  # type: ignore[arg-type]
    if row is None:
        raise SettleProblem(f"{where}: record {line.get('record')!r} is not one of run {run.id}'s rows")
    name, action = line.get("field"), line.get("action")
    if name not in row.values:
        raise SettleProblem(f"{where}: {name!r} is not a field of {run.schema_name}")
    if action not in ACTIONS:
        raise SettleProblem(f"{where}: action {action!r}: use one of {', '.join(ACTIONS)}")
    read = row.values[name]
    if read.state == "certified" or not same(read.value, line.get("model_value")):
        raise SettleProblem(f"{where}: {name} of {row.row.key!r} is not the value run {run.id} read "
                            "(the file was edited, or is from another database: use --db)")  # fmt: skip
    value = read.value if action == "accept" else None if action == "none" else line.get("value")
    return NewDecision(row.row.record_id, run.schema_name, run.schema_version, run.id, name, action, value,
                       read.value, read.state, _when(line.get("at")))  # fmt: skip


def settle(session: Session, path: Path, who: str) -> Settled:
    """Store the decisions of `path` (one run's export) as `who`'s and mark each row they settle `ok`;
    nothing is stored if any line does not fit (the caller commits)."""
    lines = _lines(path)
    run_id = lines[0].get("run")
    run = session.get(Run, run_id) if isinstance(run_id, int) else None
    if run is None or any(line.get("run") != run_id for line in lines):
        raise SettleProblem(f"{path}: names run {run_id!r}, which is not in this database (use --db), or "
                            "several runs (settle one page's export at a time)")  # fmt: skip
    try:
        stored = {r.record_id: r for r in run_rows(session, run.id) if r.status != "failed"}
    except AuditProblem as exc:
        raise SettleProblem(str(exc)) from exc
    found = {f.row.record_id: f for f in _delivered(session, run, list(stored.values()))}
    decisions = [_checked(path, i, line, run, found) for i, line in enumerate(lines, 1)]
    store_decisions(session, decisions, who)
    touched = sorted({d.record_id for d in decisions})
    ok = 0
    fields = top_fields(run.schema_body)
    decided = row_decisions(session, touched, run.schema_name, run.schema_version)
    for record_id in touched:
        result = current_result(session, record_id, run.schema_name, run.schema_version, run)
        if result is None or result.status in ("failed", "ok"):
            continue
        row = {"status": result.status, "data": result.data, "errors": result.errors,
               "nulled": result.nulled, "evidence": result.evidence, "trust": result.trust,
               "decisions": decided.get(record_id, {})}  # fmt: skip
        if all(d.settled for d in every_value(fields, row).values()):
            mark_ok(session, result)
            ok += 1
    return Settled(len(decisions), len(touched), ok)
