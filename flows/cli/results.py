"""`formwork results [--run N] [--status S] [--format table|jsonl|csv]`: stored results for a person
or for the next program.

The table gives each record one or two lines at 80 columns: its key and status, the values the row
kept, then each other field in one word (`who:dropped`, `category:unsure`); a failed row keeps
nothing, so it shows why it failed instead. The reasons in full are in `--format jsonl` (`verdicts`,
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

COLOURS = {"ok": "green", "partial": "yellow", "failed": "red"}
SHORTER = (28, 16, 10)  # a kept value's most characters, tried in turn until the record fits two lines


class Format(StrEnum):
    table = "table"
    jsonl = "jsonl"
    csv = "csv"


def results(
    run: Annotated[int | None, typer.Option("--run", help="a run id (default: the latest run)")] = None,
    status: Annotated[Status | None, typer.Option(help="ok, partial or failed")] = None,
    format: Annotated[Format, typer.Option("--format", "-f", help="table, jsonl or csv")] = Format.table,
    db: DbOption = None,
) -> None:
    """Show stored results: a table to read, or JSONL/CSV for the next program."""
    from formwork.db.queries import result_rows
    from formwork.flows.verdicts import verdict_rows

    with opened(db) as session:
        run_id = chosen_run(session, run)
        rows = result_rows(session, run_id, status.value if status else None)
    if format is Format.jsonl:
        for row in rows:
            sys.stdout.write(json.dumps(row | {"verdicts": verdict_rows(row)}, ensure_ascii=False) + "\n")
    elif format is Format.csv:
        _write_csv(rows)
    else:
        _print_results(rows, run_id)


def _write_csv(rows: list[dict]) -> None:
    """One line per record; a cell that begins like a spreadsheet formula is text (tasks.spreadsheet)."""
    from formwork.flows.verdicts import summary_line
    from formwork.tasks.spreadsheet import Writer

    fields = sorted({key for row in rows for key in (row["data"] or {})})
    writer = Writer(sys.stdout)
    writer.writerow(
        ["record", "status", "reasoning_finish", "formatting_finish", "attempts", "errors", "verdicts",
         *fields]
    )  # fmt: skip
    for row in rows:
        data = row["data"] or {}
        values = [json.dumps(v, ensure_ascii=False) if isinstance(v, list | dict) else v for v in
                  (data.get(f) for f in fields)]  # fmt: skip
        writer.writerow([row["record"], row["status"], row["reasoning_finish"], row["formatting_finish"],
                         row["attempts"], "; ".join(row["errors"]), summary_line(row).replace("\n", "; "),
                         *values])  # fmt: skip


def _shown(value: Any, most: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = printable(" ".join(text.split()))  # escaped first, so the cells counted are the cells shown
    return text if len(text) <= most else text[: most - 1] + "…"


def _words(row: dict[str, Any], most: int) -> list[str]:
    """The record's kept values (`name=value`), then a word for each other field, or why it failed."""
    from formwork.flows.verdicts import field_verdicts

    verdicts, problems = field_verdicts(row)
    other = {v.path: v.kind for v in verdicts if v.kind != "kept"}
    held = {path.split(".")[0].split("[")[0] for path in other}  # the top fields they belong to
    words = []
    if row["status"] != "failed":
        words += [f"{name}={_shown(value, most)}" for name, value in (row["data"] or {}).items()
                  if name not in held]  # fmt: skip
    words += [printable(f"{path}:{kind}") for path, kind in other.items()]
    return words + [printable(word) for said, _ in problems for word in said.split()]  # a row's problem


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


def _print_results(rows: list[dict], run_id: int | None) -> None:
    """Each record in one or two lines (see the module docstring); then what to do next."""
    from formwork.flows.verdicts import next_step

    counts = ", ".join(f"{sum(r['status'] == s for r in rows)} {s}" for s in COLOURS)
    out.print(f"results of run {run_id}: {counts}" if run_id else f"results: {counts}", highlight=False)
    key_width = min(max((len(r["record"]) for r in rows), default=6), 16)
    for row in rows:
        for line in record_lines(row, key_width, max(out.width, 60)):
            out.print(line, soft_wrap=True, highlight=False)
    out.print(printable(next_step(rows)), highlight=False, markup=False)
    out.print("each field's reason in full: --format jsonl, or `formwork review`", highlight=False)
