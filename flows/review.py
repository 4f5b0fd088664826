"""The review page: one self-contained HTML file to check a run at a glance.

Each record's text is shown with every value's evidence span highlighted in its field's colour, the JSON
beside it, the status, each field's verdict in a few words (flows/verdicts.py; the judge's own
sentences folded away), what to do next about the run, both finish reasons, each value's evidence (kind,
score, confidence) and the reasoning notes folded away; a value the model left absent, or that took the
schema's default, is marked so. Filters by status and by field work by rewriting one <style> element, so
the page costs no per-record JavaScript and stays usable with thousands of records. All text is escaped;
nothing is fetched from the network (cf. langextract's visualization.py).
"""

from __future__ import annotations

import html
import itertools
import json
import re
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from formwork.db.models import ModelCall, Record, Result
from formwork.flows.verdicts import field_verdicts, next_step, summary_line

STATUSES = ("ok", "partial", "failed")
INDEX = re.compile(r"\[\d+\]")


@dataclass
class ReviewItem:
    """One result with what the page shows about it."""

    key: str
    text: str
    status: str
    data: dict[str, Any] | None
    errors: list[str]
    nulled: list[str]
    reasoning_finish: str | None
    formatting_finish: str | None
    evidence: list[dict[str, Any]] = field(default_factory=list)
    notes: str = ""
    parts: list[list[int]] = field(default_factory=list)  # a long text's parts: where each stood

    def row(self) -> dict[str, Any]:
        """The fields flows.verdicts reads, as `db.queries.result_rows` gives them."""
        return {"status": self.status, "errors": self.errors, "nulled": self.nulled,
                "evidence": self.evidence}  # fmt: skip


Key = tuple[int, int]  # (run id, record id)


def _notes_and_parts(rows: Any) -> tuple[dict[Key, str], dict[Key, list[list[int]]]]:
    """Each record's last reasoning notes (a long text's: each part's, in order) and where each part it
    was read in stood (`judged["part"]`, tasks/long/partwise.py), from its reasoning calls in call order."""
    outputs: dict[Key, dict[int, str]] = {}
    spans: dict[Key, dict[int, list[int]]] = {}
    for run, record, output, judged in rows:
        part = (judged or {}).get("part") or {}
        outputs.setdefault((run, record), {})[part.get("index", 0)] = output
        if part.get("span"):
            spans.setdefault((run, record), {})[part["index"]] = part["span"]
    notes = {
        key: "\n\n".join(f"[part {i}]\n{out}" if key in spans else out for i, out in sorted(found.items()))
        for key, found in outputs.items()
    }
    return notes, {key: [found[i] for i in sorted(found)] for key, found in spans.items()}


def load_review(session: Session, run_id: int | None, statuses: list[str] | None = None) -> list[ReviewItem]:
    """The results of a run (all runs if None), with each record's text and last reasoning notes."""
    query = select(Result, Record.key, Record.text).join(Record, Record.id == Result.record_id)
    calls = select(ModelCall.run_id, ModelCall.record_id, ModelCall.output, ModelCall.judged).where(
        ModelCall.pass_name == "reasoning"
    )
    if run_id is not None:
        query, calls = query.where(Result.run_id == run_id), calls.where(ModelCall.run_id == run_id)
    if statuses:
        query = query.where(Result.status.in_(statuses))
    notes, parts = _notes_and_parts(session.execute(calls.order_by(ModelCall.id)))
    return [
        ReviewItem(
            key,
            text,
            r.status,
            r.data,
            r.errors,
            r.nulled,
            r.reasoning_finish,
            r.formatting_finish,
            r.evidence or [],
            notes.get((r.run_id, r.record_id), ""),
            parts.get((r.run_id, r.record_id), []),
        )
        for r, key, text in session.execute(query.order_by(Result.id))
    ]


def field_name(path: str) -> str:
    """The field a value path belongs to, for colours and filters: items[2].name -> items[].name."""
    return INDEX.sub("[]", path)


def highlighted(text: str, evidence: list[dict[str, Any]], colour_of: dict[str, int]) -> str:
    """The text, escaped, with each span in <mark>; overlapping spans split into pieces that name every
    span (the audit page shows a record's evidence the same way)."""
    spans = [
        (max(0, s), min(len(text), e), f"e{i}s{j}", colour_of[field_name(row["path"])])
        for i, row in enumerate(evidence)
        for j, (s, e) in enumerate(row.get("spans") or [])
        if 0 <= s < e
    ]
    cuts = sorted({0, len(text), *(s for s, _, _, _ in spans), *(e for _, e, _, _ in spans)})
    pieces = []
    for start, end in itertools.pairwise(cuts):
        covering = [(sid, colour) for s, e, sid, colour in spans if s <= start and end <= e]
        piece = html.escape(text[start:end])
        if covering:
            classes = " ".join(dict.fromkeys(f"f{c}" for _, c in covering))
            ids = " ".join(sid for sid, _ in covering)
            piece = f'<mark class="{classes}" data-s="{ids}">{piece}</mark>'
        pieces.append(piece)
    return "".join(pieces)


def _json_pane(item: ReviewItem, colour_of: dict[str, int]) -> str:
    kinds = {row["path"]: row.get("kind") for row in item.evidence}  # absent and default: schemas/conform.py
    absent = [
        path for path, kind in kinds.items() if kind == "absent" and "." not in path and "[" not in path
    ]
    lines = []
    for key, value in [*(item.data or {}).items(), *((path, None) for path in absent)]:
        colour = colour_of.get(key)
        cls = f' class="f{colour}"' if colour is not None else ""
        shown = html.escape(json.dumps(value, ensure_ascii=False, indent=1))
        if kinds.get(key) == "absent":
            shown = '<i class="def">absent</i>'
        nulled = ' <span class="bad">(nulled)</span>' if key in item.nulled else ""
        defaulted = ' <span class="def">(default)</span>' if kinds.get(key) == "default" else ""
        lines.append(f"<div><b{cls}>{html.escape(key)}</b>: {shown}{nulled}{defaulted}</div>")
    if item.status == "failed" and lines:  # a failed row keeps nothing: its answer was never checked
        lines.insert(0, '<div class="bad">unchecked answer of a failed row (not kept):</div>')
    return "".join(lines) or "<i>no JSON</i>"


def _evidence_list(item: ReviewItem) -> str:
    """Each value's evidence; ✓ only for a value the row keeps (a grounded value can still be dropped, or
    stand in a failed row, which keeps nothing), ✗ and its verdict for the rest."""
    fates = {v.path: v.kind for v in field_verdicts(item.row())[0]}
    rows = []
    for row in item.evidence:
        fate = fates.get(row["path"], "kept")  # an ungrounded value is dropped (flows.verdicts)
        kept = bool(row.get("grounded")) and fate == "kept" and item.status != "failed"
        shown = "" if kept else f" {fate if fate != 'kept' else 'in a failed row'}:"
        mark, cls = ("✓", "ok") if kept else ("–", "def") if fate == "kept" else ("✗", "bad")
        value = html.escape(json.dumps(row.get("value"), ensure_ascii=False))
        extra = f", p={row['confidence']:.2f}" if row.get("confidence") is not None else ""
        if row.get("engine"):  # what the probability is: masked, renormalised, or none at all
            extra += html.escape(f" ({row.get('logprob_mode')}, {row['engine']})")
        if row.get("part"):
            extra += f", part {row['part']}"
        rows.append(
            f'<li class="{cls}">{mark}{shown} '
            f"{html.escape(row['path'])} = {value}: {html.escape(str(row.get('kind')))} "
            f"{row.get('score', 0)}{extra}</li>"
        )
    return f'<ul class="ev">{"".join(rows)}</ul>' if rows else ""


def _record(item: ReviewItem, colour_of: dict[str, int]) -> str:
    present = {colour_of[field_name(r["path"])] for r in item.evidence}
    failing = {colour_of[field_name(r["path"])] for r in item.evidence if not r.get("grounded")}
    failing |= {colour_of[name] for name in item.nulled if name in colour_of}
    classes = " ".join(["rec", *(f"h{c}" for c in sorted(present)), *(f"b{c}" for c in sorted(failing))])
    verdicts = "".join(f"<li>{html.escape(line)}</li>" for line in summary_line(item.row()).splitlines())
    errors = "".join(f"<li>{html.escape(e)}</li>" for e in item.errors)
    parts = ", ".join(f"{i} at characters {s}-{e}" for i, (s, e) in enumerate(item.parts, 1))
    parts = f'<div class="parts">read in {len(item.parts)} parts: {parts}</div>' if item.parts else ""
    if errors:
        errors = f"<details class=errors><summary>the judge's sentences</summary><ul>{errors}</ul></details>"
    return (
        f'<section class="{classes}" data-status="{html.escape(item.status)}">'
        f'<header><span class="st {html.escape(item.status)}">{html.escape(item.status)}</span> '
        f"<b>{html.escape(item.key)}</b> <small>finish: reasoning {html.escape(str(item.reasoning_finish))}"
        f", formatting {html.escape(str(item.formatting_finish))}</small></header>"
        f'<div class="cols"><div class="text">{highlighted(item.text, item.evidence, colour_of)}</div>'
        f'<div class="json">{_json_pane(item, colour_of)}{_evidence_list(item)}</div></div>'
        f'{parts}<ul class="verdicts">{verdicts}</ul>{errors}'
        f"<details><summary>reasoning notes</summary><pre>{html.escape(item.notes)}</pre></details>"
        "</section>"
    )


CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;background:#fafafa;color:#222}
#bar{position:sticky;top:0;background:#fff;border-bottom:1px solid #ccc;padding:8px 12px;z-index:1}
.rec{background:#fff;margin:10px 12px;padding:8px 12px;border:1px solid #ddd;border-radius:6px;
 content-visibility:auto;contain-intrinsic-size:auto 240px}
.cols{display:grid;grid-template-columns:3fr 2fr;gap:12px}
.text{white-space:pre-wrap;word-break:break-word}
.json{font:12px/1.4 ui-monospace,monospace;white-space:pre-wrap;word-break:break-word}
mark{border-radius:2px;padding:0 1px}
.st{padding:1px 6px;border-radius:4px;color:#fff}.st.ok{background:#2e7d32}.st.partial{background:#ed8b00}
.st.failed{background:#c62828}.bad{color:#c62828}.ev{margin:6px 0;padding-left:16px}.ev .ok{color:#2e7d32}
.errors{color:#c62828;margin:4px 0}.verdicts{margin:4px 0}#next{margin-top:4px}
.def{color:#666}pre{white-space:pre-wrap;background:#f4f4f4;padding:6px}
"""

SCRIPT = """
const dyn=document.getElementById('dyn');
function update(){
  let css='';
  for(const box of document.querySelectorAll('.status')){
    if(!box.checked) css+=`.rec[data-status="${box.value}"]{display:none}`;
  }
  const f=document.getElementById('field').value, mode=document.getElementById('mode').value;
  if(f!==''){
    css+=`.rec:not(.${mode}${f}){display:none} mark:not(.f${f}){background:transparent!important}`;
  }
  dyn.textContent=css;
}
document.getElementById('bar').addEventListener('change',update);
"""


def colours(names: list[str]) -> tuple[dict[str, int], str]:
    """Each field's colour number (class `f<n>`) and the CSS that paints them."""
    hues = {i: (i * 137) % 360 for i in range(len(names))}  # golden-angle steps: neighbours differ
    css = "".join(f".f{i}{{background:hsl({hue},85%,82%)}}" for i, hue in hues.items())
    return {name: i for i, name in enumerate(names)}, css


def render_review(items: list[ReviewItem], title: str) -> str:
    """The whole page as one string: inline CSS and JS, every text escaped."""
    names = sorted({field_name(r["path"]) for item in items for r in item.evidence})
    names += sorted({k for item in items for k in (item.data or {})} - set(names))
    colour_of, palette = colours(names)
    counts = {s: sum(item.status == s for item in items) for s in STATUSES}
    boxes = "".join(
        f'<label><input type="checkbox" class="status" value="{s}" checked> {s} ({counts[s]})</label> '
        for s in STATUSES
    )
    options = "".join(f'<option value="{i}">{html.escape(n)}</option>' for n, i in colour_of.items())
    advice = f'<div id="next">{html.escape(next_step([item.row() for item in items]))}</div>'
    bar = (
        f'<div id="bar"><b>{html.escape(title)}</b> · {len(items)} records · {boxes} · field '
        f'<select id="field"><option value="">all</option>{options}</select> '
        '<select id="mode"><option value="h">has a value</option>'
        f'<option value="b">ungrounded or nulled</option></select>{advice}</div>'
    )
    body = "".join(_record(item, colour_of) for item in items)
    return (
        f'<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f'<style>{CSS}{palette}</style><style id="dyn"></style></head>'
        f"<body>{bar}<main>{body}</main><script>{SCRIPT}</script></body></html>"
    )
