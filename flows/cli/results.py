"""`formwork results [--run N | --model NAME[@MODE]] [--status S] [--format table|jsonl|csv]
[--certified-only]`: stored results for a person or for the next program.

It shows one run's rows: the latest run's, run N's, or the latest run of one reader (`--model`: each
model and mode keeps its own rows, db.store). A row a person settled after the run (`formwork settle`)
shows its status now, marked `(settled by a person)`; with `--run N` it shows the status run N gave it,
marked `(settled later: ok now)`, as JSONL's `settled_later` and `status_now` and CSV's `settled_later`
(the status now, empty where none) say too.

Every value the model read is given with its state (flows.delivered): `certified`, `unsure` (read,
nothing vouches for it), `refused` (the judge refused it), `none`, or `confirmed` (a person settled it:
`formwork review --unsure`, then `formwork settle`; the model's value beside it as `read`). The table
gives each record one or two lines at 80 columns: its key and status, then each field in the schema's
order, a certified or confirmed value plain (`who=Maria`), an unsure one marked (`who=Maria?`), a
refused one in a word (`project:refused`); a failed row keeps nothing, so it shows why it failed
instead. CSV has two columns per schema field, always, whatever the rows hold: the value (empty when null) and
`FIELD_state`; JSONL has `values` (field -> value, state, score, why) beside `data`, the kept values.
`--certified-only` gives the safe reading: only certified and confirmed values, every other one empty
(its state still says why). The reasons in full are in `--format jsonl` (`verdicts`,
beside the judge's `errors`) and on the review page. A failed row's answer was never checked, so no
format gives it as `data`: JSONL carries it as `unchecked`, CSV not at all. The table shows an id's or
value's control characters escaped (ESC as `\\x1b`: a record's text never retitles or clears the
terminal, nor writes its clipboard); JSONL and CSV carry the data as stored.
"""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from typing import Annotated, Any

import typer
from rich.cells import cell_len
from rich.text import Text

from formwork.flows.cli.common import DbOption, Status, chosen_run, opened, out, printable
from formwork.flows.delivered import every_value, top, top_fields

COLOURS = {"ok": "green", "partial": "yellow", "failed": "red"}
SHORTER = (28, 16, 10)  # a kept value's most characters, tried in turn until the record fits two lines


class Format(StrEnum):
    table = "table"
    jsonl = "jsonl"
    csv = "csv"


def results(
    run: Annotated[int | None, typer.Option("--run", help="a run id (default: the latest run)")] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="NAME[@MODE]: the latest run of this reader that stored rows (as `formwork run --model` "
            "names it; NAME alone: of any mode)",
        ),
    ] = None,
    status: Annotated[Status | None, typer.Option(help="ok, partial or failed")] = None,
    format: Annotated[Format, typer.Option("--format", "-f", help="table, jsonl or csv")] = Format.table,
    certified_only: Annotated[
        bool, typer.Option("--certified-only", help="only certified and confirmed values; the rest empty")
    ] = False,
    db: DbOption = None,
) -> None:
    """Show stored results: a table to read, or JSONL/CSV for the next program."""
    from formwork.db.decisions import run_decisions
    from formwork.db.models import Run
    from formwork.db.queries import result_rows
    from formwork.flows.verdicts import verdict_rows

    with opened(db) as session:
        run_id = chosen_run(session, run, model)
        rows = result_rows(session, run_id, status.value if status else None)
        stored = session.get(Run, run_id)
        fields = top_fields(stored.schema_body if stored else None) or _seen(rows)
        which = (stored.confidence or {}).get("calibration") if stored else None
        decided = run_decisions(session, run_id)  # a person's, beside the model's reading (flows.settle)
    for row in rows:
        if run is None:  # not filtered by run: the latest state, a person's settling included
            row["status"] = row["status_now"]
        settled = {"decisions": decided.get((row["source"], row["record"]), {})}
        found = every_value(fields, row | settled, f"calibration {which}" if which else None)
        vouched = ("certified", "confirmed")  # --certified-only: by a calibration or a person
        row["values"] = {name: d.as_dict() | ({"value": None} if certified_only and d.state not in vouched
                                              else {}) for name, d in found.items()}  # fmt: skip
    if format is Format.jsonl:
        for row in rows:
            sys.stdout.write(json.dumps(row | {"verdicts": verdict_rows(row)}, ensure_ascii=False) + "\n")
    elif format is Format.csv:
        _write_csv(rows, fields)
    else:
        _print_results(rows, run_id, stored.setup if stored else None)


def _seen(rows: list[dict[str, Any]]) -> list[str]:
    """The fields a run that stored no schema body (one from before 0002_integrity) shows: those its rows
    hold, in the order first seen."""
    held = [
        [
            *(row.get("data") or row.get("unchecked") or {}),
            *(top(e["path"]) for e in row.get("evidence") or []),
        ]
        for row in rows
    ]
    return list(dict.fromkeys(key for keys in held for key in keys))


ROW_COLUMNS = ("record", "status", "reasoning_finish", "formatting_finish", "attempts", "errors", "verdicts",
               "settled_later")  # fmt: skip


def field_columns(fields: list[str]) -> list[str]:
    """`FIELD` and `FIELD_state` per field, unless a name would clash with the row's own columns or with
    another field's (a field named `status`, or `who` beside `who_state`): then `field.FIELD` and
    `state.FIELD`, names no field can have (property names never hold a dot), so every column is one
    field's and the header depends on the schema alone."""
    plain = {name: (name, f"{name}_state") for name in fields}
    taken = [*ROW_COLUMNS, *(column for pair in plain.values() for column in pair)]
    clashes = {name for name, pair in plain.items() if any(taken.count(column) > 1 for column in pair)}
    return [
        column
        for name in fields
        for column in ((f"field.{name}", f"state.{name}") if name in clashes else plain[name])
    ]


def _write_csv(rows: list[dict], fields: list[str]) -> None:
    """One line per record, a value and a state column per schema field (the shape never depends on
    the rows); a cell that begins like a spreadsheet formula is text (tasks.spreadsheet)."""
    from formwork.flows.verdicts import summary_line
    from formwork.tasks.spreadsheet import Writer

    writer = Writer(sys.stdout)
    writer.writerow([*ROW_COLUMNS, *field_columns(fields)])
    for row in rows:
        cells = []
        for name in fields:
            value, state = row["values"][name]["value"], row["values"][name]["state"]
            cells += [
                json.dumps(value, ensure_ascii=False) if isinstance(value, list | dict) else value,
                state,
            ]
        writer.writerow([row["record"], row["status"], row["reasoning_finish"], row["formatting_finish"],
                         row["attempts"], "; ".join(row["errors"]), summary_line(row).replace("\n", "; "),
                         row["status_now"] if row.get("settled_later") else "", *cells])  # fmt: skip


def _shown(value: Any, most: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = printable(" ".join(text.split()))  # escaped first, so the cells counted are the cells shown
    return text if len(text) <= most else text[: most - 1] + "…"


def _field_word(name: str, found: dict[str, Any], most: int) -> str:
    """`who=Maria` certified, `who=Maria?` unsure, `who=null` none, `who:refused` (or `who:unsure`
    where --certified-only left the value out)."""
    if found["state"] == "refused" or (found["state"] == "unsure" and found["value"] is None):
        return printable(f"{name}:{found['state']}")
    return printable(f"{name}=") + _shown(found["value"], most) + ("?" if found["state"] == "unsure" else "")


def _words(row: dict[str, Any], most: int) -> list[str]:
    """Each field's word in the schema's order (`_field_word`), or, for a failed row, a word for each
    field the judge refused; then the row's own problem."""
    from formwork.flows.verdicts import field_verdicts

    verdicts, problems = field_verdicts(row)
    if row["status"] == "failed":
        words = [printable(f"{v.path}:{v.kind}") for v in verdicts if v.kind != "kept"]
    else:
        values = row.get("values") or {f: d.as_dict() for f, d in every_value(_seen([row]), row).items()}
        words = [_field_word(name, found, most) for name, found in values.items()]
    return _settled(row) + words + [printable(word) for said, _ in problems for word in said.split()]


def _settled(row: dict[str, Any]) -> list[str]:
    """The mark of a row a person settled after its run: its status now where the line shows the run's."""
    if not row.get("settled_later"):
        return []
    now = row["status_now"]
    return ["(settled by a person)" if row["status"] == now else f"(settled later: {now} now)"]


def _lines(words: list[str], width: int, indent: int) -> list[str]:
    """`words` filled into lines of `width` cells, each after `indent` cells."""
    lines: list[str] = [""]
    for word in words:
        line = lines[-1]
        if line and indent + cell_len(line) + 1 + cell_len(word) > width:
            lines.append(word)
        else:
            lines[-1] = f"{line} {word}" if line else word
    return lines


def record_lines(row: dict[str, Any], key_width: int, width: int = 80) -> list[Text]:
    """One record on one or two lines of `width` cells: key, status, kept values, one word per other
    field; values are shortened, then the last words folded into `+N more`, until it fits."""
    key = _shown(row["record"], key_width).ljust(key_width)
    indent = key_width + 1 + len("partial") + 1
    for most in SHORTER:
        lines = _lines(_words(row, most), width, indent)
        if len(lines) <= 2:
            break
    words = _words(row, SHORTER[-1])
    for keep in range(len(words) - 1, -1, -1):
        if len(lines) <= 2:
            break
        lines = _lines([*words[:keep], f"+{len(words) - keep} more"], width, indent)
    first = Text.assemble(f"{key} ", (row["status"].ljust(len("partial")), COLOURS[row["status"]]), " ",
                          lines[0])  # fmt: skip
    return [first, *(Text(" " * indent + line) for line in lines[1:])]


def _print_results(rows: list[dict], run_id: int | None, setup: str | None = None) -> None:
    """Each record in one or two lines (see the module docstring); then what to do next."""
    from formwork.flows.verdicts import next_step

    counts = ", ".join(f"{sum(r['status'] == s for r in rows)} {s}" for s in COLOURS)
    reader = f" ({setup})" if setup else ""
    said = f"results of run {run_id}{reader}: {counts}" if run_id else f"results: {counts}"
    out.print(printable(said), highlight=False, markup=False)
    key_width = min(max((len(r["record"]) for r in rows), default=6), 16)
    for row in rows:
        for line in record_lines(row, key_width, max(out.width, 60)):
            out.print(line, soft_wrap=True, highlight=False)
    out.print(printable(next_step(rows)), highlight=False, markup=False)
    unsure = sum(found.state == "unsure" for row in rows if row["status"] != "failed"
                 for found in every_value(_seen([row]), row).values())  # fmt: skip
    if unsure:
        run = f" --run {run_id}" if run_id else ""
        said = (f"a person settles the {unsure} unsure value(s) (marked ?): `formwork review --unsure{run} "
                "--out settle.html`, then `formwork settle FILE`")  # fmt: skip
        out.print(said, highlight=False, markup=False, soft_wrap=True)
    out.print("each field's reason in full: --format jsonl, or `formwork review`", highlight=False)
