"""`formwork schemas`: list the built-ins, or check your own schema files and say what changes.

For each file it prints whether the schema is accepted as is, accepted after normalising (each change
with its JSON pointer and why), or refused (the keyword, its pointer and the fix), plus the keywords
that are checked after decoding rather than enforced by the grammar, each `format` that nothing
checks at all, how a text too long for one prompt merges each field (schemas/roles.py), and which
judgement fields have no guide: a field the model must judge (free text that is not a copied identifier
or a formatted value, a label from an enum, yes or no) and whose description, the rubric the field guide
shows it, is missing. Such fields are the ones a small model reads worst (issue 53): who is "the person
who spent the money", which category a parking fee is, what makes a severity high.
Where a schema has a date field it also says how "03/06/2024" is read: in the order the root's
`x-date-order` states, or both ways, with what to write if the records follow one convention.
`--format jsonl` writes one line per file for scripts; `--strict` refuses any schema that would need a
change.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from enum import StrEnum
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from formwork.flows.cli.common import err, out


class SchemaFormat(StrEnum):
    text = "text"
    jsonl = "jsonl"


KEYS = ("file", "accepted", "changed", "checked_after", "not_checked", "long_texts", "unguided", "dates",
        "refused_because")  # fmt: skip  # a jsonl line's keys, in order


def _judgement(node: dict[str, Any], name: str) -> str | None:
    """What a field asks the model to judge ("a label", "yes or no", "free text"), or None for a field it
    copies or computes (a number, a date, an e-mail, a phone, an order number) or for a nesting one."""
    from formwork.schemas.identifiers import identifier_rule

    branches = [node, *(b for b in node.get("anyOf") or node.get("oneOf") or [] if isinstance(b, dict))]
    types: set[str] = set()
    for branch in branches:
        declared = branch.get("type", [])
        types |= {declared} if isinstance(declared, str) else set(declared)
    if any("enum" in b for b in branches):
        return "a label"
    if "boolean" in types:
        return "yes or no"
    formatted = any(b.get("format") or b.get("x-format") for b in branches)
    if "string" in types and not formatted and identifier_rule(node, name) is None:
        return "free text"
    return None


def unguided(node: dict[str, Any], prefix: str = "") -> Iterator[str]:
    """One line per judgement field under `node` (at any depth: `items[].category`) with no description."""
    for name, child in (node.get("properties") or {}).items():
        if not isinstance(child, dict):
            continue
        path = f"{prefix}{name}"
        items = child.get("items") if isinstance(child.get("items"), dict) else None
        judged = _judgement(items if items is not None and not items.get("properties") else child, name)
        described = any(str(n.get("description") or "").strip() for n in (child, items or {}))
        if judged and not described:
            yield f"{path}: {judged} to judge, with no description: say what counts (a rubric) in it"
        if child.get("properties"):
            yield from unguided(child, f"{path}.")
        if items is not None and items.get("properties"):
            yield from unguided(items, f"{path}[].")


def dates(body: dict[str, Any]) -> list[str]:
    """How a date its digits leave open is read, where the schema has a date field (at any depth)."""
    from formwork.schemas.annotations import date_order
    from formwork.schemas.walk import walk

    if not any(node.get("format") in ("date", "date-time") for _, node in walk(body)):
        return []
    order = date_order(body)
    if order:
        meant = "3 June" if order == "day-first" else "6 March"
        return [f"03/06/2024 is read {order} ({meant}), as x-date-order says; 25/06/2024 as written"]
    return ['03/06/2024 is read both ways (3 June, 6 March) and either is accepted: if the records write '
            'one way, say so at the root, "x-date-order": "day-first" (or "month-first")']  # fmt: skip


def check_one(spec: str, strict: bool) -> dict[str, Any]:
    """The verdict on one schema file (or package.module:Model), as the jsonl line says it."""
    from formwork.schemas.registry import SchemaProblem, load_checked_schema

    try:
        schema = load_checked_schema(spec, strict=strict)
    except SchemaProblem as exc:
        reasons = str(exc).split("\n  ")
        return {
            "file": spec,
            "accepted": False,
            "changed": [],
            "checked_after": [],
            "not_checked": [],
            "long_texts": [],
            "unguided": [],
            "dates": [],
            "refused_because": reasons,
        }
    from formwork.schemas.roles import schema_roles

    report = schema.normalised
    return {
        "file": spec,
        "accepted": True,
        "label": schema.label,
        "changed": report.changed,
        "checked_after": report.checked_after,
        "not_checked": report.ignored,  # a format no checker reads: said, never silent
        "long_texts": schema_roles(schema.body).explain(),  # how a long text's parts merge each field
        "unguided": list(unguided(schema.checked_body)),  # judgement fields with no rubric
        "dates": dates(schema.body),  # how an open "03/06/2024" is read
        "refused_because": [],
    }


def _print_verdict(verdict: dict[str, Any]) -> None:
    if not verdict["accepted"]:
        err.print(f"[red]✗[/] {escape(verdict['file'])}: refused")
        for reason in verdict["refused_because"]:
            err.print(f"    {escape(reason)}")
        return
    how = "accepted after normalising" if verdict["changed"] else "accepted as is"
    err.print(f"[green]✓[/] {escape(verdict['file'])}: {how} ({verdict['label']})")
    for title, key in (
        ("changed", "changed"),
        ("checked after", "checked_after"),
        ("not checked", "not_checked"),
        ("long texts", "long_texts"),
        ("no guide", "unguided"),
        ("dates", "dates"),
    ):
        for line in verdict[key]:
            err.print(f"    {title}: {escape(line)}")


def schemas(
    files: Annotated[
        list[str] | None,
        typer.Argument(help="schema files (.json) or Pydantic models (package.module:Model)"),
    ] = None,
    format: Annotated[SchemaFormat, typer.Option("--format", "-f", help="text or jsonl")] = SchemaFormat.text,
    strict: Annotated[bool, typer.Option(help="refuse a schema that would need changing")] = False,
) -> None:
    """List the built-in schemas, or check your own: accepted, what was changed and why, or refused."""
    from formwork.schemas.registry import builtin_names, load_schema

    if files:
        verdicts = [check_one(spec, strict) for spec in files]
        for verdict in verdicts:
            if format is SchemaFormat.jsonl:
                line = {k: verdict[k] for k in KEYS}
                sys.stdout.write(json.dumps(line, ensure_ascii=False) + "\n")
            else:
                _print_verdict(verdict)
        raise typer.Exit(0 if all(v["accepted"] for v in verdicts) else 1)
    table = Table(title="built-in schemas")
    for column in ("name", "version", "fields", "critical"):
        table.add_column(column)
    bare: dict[str, list[str]] = {}
    for name in builtin_names():
        schema = load_schema(name)
        table.add_row(
            name, str(schema.version), ", ".join(schema.properties), ", ".join(sorted(schema.critical_fields))
        )
        bare[name] = [line.split(":", 1)[0] for line in unguided(schema.checked_body)]
    out.print(table)
    for name, fields in bare.items():
        if fields:
            out.print(f"{name}: judgement fields with no description (no guide): {', '.join(fields)}")
