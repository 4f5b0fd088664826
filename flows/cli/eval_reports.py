"""The tables and lines `formwork eval` (flows.cli.eval) prints from its reports: outcomes and costs per
mode, per-field accuracy, enum confusion, certified values, and what a calibration or verification found."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from formwork.flows.cli.common import err, out
from formwork.tasks.evaluation.verification import Claim


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def _claim(claim: dict[str, Any]) -> str:
    """A checked claim of a report (verification.Claim as a dict) in the words the claim itself uses:
    written out again here, it lost "records" for a list field and "together, not per field" for a pool."""
    return Claim(**{**claim, "pool": tuple(claim.get("pool") or ())}).describe()


def print_reports(reports: dict[str, dict[str, Any]]) -> None:
    """The tables: outcomes and costs per mode, per-field accuracy per mode, enum confusion."""
    modes = list(reports)
    summary = Table(title="outcomes per mode (on the values delivered: unsure ones are no mismatch)")
    summary.add_column("")
    for mode in modes:
        summary.add_column(mode, justify="right")
    rows: list[tuple[str, Any]] = [
        (name.replace("_", " "), lambda r, n=name: str(r["outcomes"][n]))
        for name in ("no_json", "schema_mismatch", "content_wrong", "all_correct")
    ]
    rows += [
        ("share ok", lambda r: _percent(r["share_ok"])),
        ("precision of ok", lambda r: _percent(r["precision_ok"])),
        ("values certified (coverage)", lambda r: _percent(r.get("coverage"))),
        ("precision of certified values", lambda r: _percent(r.get("certified_precision"))),
        ("tokens / record (in+out)",
         lambda r: f"{r['prompt_tokens_per_record']:.0f}+{r['completion_tokens_per_record']:.0f}"),
        ("seconds / record", lambda r: f"{r['wall_seconds_per_record']:.1f}"),
        ("parse steps", lambda r: ", ".join(f"{k} {v}" for k, v in sorted(r["parse_steps"].items())) or "-"),
        ("run id", lambda r: str(r["run_id"])),
    ]  # fmt: skip
    for label, cell in rows:
        summary.add_row(label, *(cell(reports[m]) for m in modes))
    out.print(summary)
    # read: every value the user is handed (unsure ones too, refused ones null); kept: the row's data
    fields = Table(title="per-field accuracy (read: every value delivered; kept: certified or kept)")
    fields.add_column("field")
    for mode in modes:
        fields.add_column(f"{mode} read", justify="right")
        fields.add_column(f"{mode} kept", justify="right")
    for key in dict.fromkeys(k for r in reports.values() for k in r["field_accuracy"]):
        fields.add_row(key, *(_percent(reports[m].get(which, {}).get(key)) for m in modes
                              for which in ("read_accuracy", "field_accuracy")))  # fmt: skip
    out.print(fields)
    for mode, report in reports.items():
        for key, confusion in report["confusion"].items():
            predicted = sorted({p for row in confusion.values() for p in row})
            table = Table(title=f"{mode} · {key}: gold (rows) × predicted (columns)")
            table.add_column("gold")
            for label in predicted:
                table.add_column(label, justify="right")
            for gold_label, row in sorted(confusion.items()):
                table.add_row(gold_label, *(str(row.get(p, "")) for p in predicted))
            out.print(table)
        certified = report.get("certified") or {}
        if certified:
            table = Table(title=f"{mode} · certified values per field (coverage, precision)")
            for column in ("field", "values", "certified", "coverage", "right", "precision"):
                table.add_column(column, justify="right" if column != "field" else "left")
            for name, c in certified.items():
                coverage = c["certified"] / c["values"] if c["values"] else None
                precision = c["right"] / c["certified"] if c["certified"] else None
                counted = (str(c["values"]), str(c["certified"]), _percent(coverage), str(c["right"]))
                table.add_row(name, *counted, _percent(precision))
            out.print(table)
        if report.get("calibrated"):
            done = report["calibrated"]
            out.print(f"{mode}: calibration {done['id']} stored ({done['covered']}):")
            for sentence in done["fields"].values():
                out.print(f"  {sentence}")
            out.print(f"  {done['rows']}")
            if done.get("exported"):
                out.print(f"{mode}: written for shipping to {done['exported']}")
        if report.get("verified"):
            checked = report["verified"]
            out.print(f"{mode}: applied {checked['applied']}")
            out.print(f"{mode}: verification on {report['records']} gold records"
                      + (f" ({report['half']} half)" if report.get("half") else "")
                      + f": {checked['verdict']}")  # fmt: skip
            for claim in checked["fields"]:
                out.print(f"  {_claim(claim)}")
            out.print(f"  {_claim(checked['rows'])} (measured)")
        if report.get("warning"):
            err.print(f"[yellow]warning:[/] {report['warning']}")
