"""`formwork schemas` names the judgement fields that have no description (the rubric the guide shows).

A field the model judges (free text that is no identifier, a label, yes or no) and that nothing explains
is read by convention the text does not settle; a copied identifier or a formatted value needs no rubric.
"""

from __future__ import annotations

import json

from typer.testing import CliRunner

from formwork.flows.cli import app
from formwork.flows.cli.schemas import unguided
from formwork.schemas.registry import builtin_names, load_schema

runner = CliRunner()
TICKET = {
    "title": "ticket",
    "type": "object",
    "properties": {
        "customer": {"type": ["string", "null"], "maxLength": 80},
        "summary": {"type": "string", "maxLength": 200, "description": "What the customer asks, in a line."},
        "severity": {"enum": ["low", "high", None]},
        "refund_requested": {"type": "boolean"},
        "email": {"type": ["string", "null"], "format": "email", "maxLength": 120},
        "phone_number": {"type": ["string", "null"], "maxLength": 40},
        "order_id": {"type": ["string", "null"], "maxLength": 40},
        "opened": {"type": ["string", "null"], "format": "date"},
        "amount": {"type": ["number", "null"]},
        "tags": {"type": "array", "maxItems": 5, "items": {"enum": ["billing", "bug"]}},
        "products": {"type": "array", "maxItems": 5, "description": "The products the ticket names.",
                     "items": {"type": "object", "properties": {
                         "name": {"type": "string", "maxLength": 60, "description": "As written."},
                         "kind": {"enum": ["app", "device"]}}}},
    },
}  # fmt: skip


def test_judgement_fields_without_a_description_are_named(tmp_path) -> None:
    path = tmp_path / "ticket.json"
    path.write_text(json.dumps(TICKET))
    result = runner.invoke(app, ["schemas", str(path), "--format", "jsonl"])
    assert result.exit_code == 0, result.output
    [line] = [json.loads(x) for x in result.stdout.splitlines()]
    named = [entry.split(":", 1)[0] for entry in line["unguided"]]
    assert named == ["customer", "severity", "refund_requested", "tags", "products[].kind"]
    assert line["unguided"][0] == (
        "customer: free text to judge, with no description: say what counts (a rubric) in it"
    )
    text = runner.invoke(app, ["schemas", str(path)])
    assert "no guide: severity: a label to judge" in text.output


def test_every_builtin_judgement_field_has_a_guide() -> None:
    """The built-ins explain each field they ask the model to judge, so `formwork schemas` lists none."""
    missing = {name: list(unguided(load_schema(name).checked_body)) for name in builtin_names()}
    assert missing == {name: [] for name in builtin_names()}
