"""`formwork schemas FILE...`: what was changed and why, one jsonl line per file, --strict refusing."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from formwork.flows.cli import app

runner = CliRunner()
LOOSE = {"type": "object", "properties": {"note": {"type": "string", "description": "a note"}}}


def test_a_loose_schema_is_accepted_after_normalising_and_says_what_changed(tmp_path) -> None:
    path = tmp_path / "loose.json"
    path.write_text(json.dumps(LOOSE))
    result = runner.invoke(app, ["schemas", str(path)])
    assert result.exit_code == 0, result.output
    assert "accepted after normalising (loose@" in result.output
    assert "changed: #/properties/note: a free string got maxLength 256" in result.output


def test_jsonl_gives_one_line_per_file_and_strict_refuses(tmp_path) -> None:
    loose, remote = tmp_path / "loose.json", tmp_path / "remote.json"
    loose.write_text(json.dumps(LOOSE))
    remote.write_text(json.dumps({"type": "object", "properties": {"a": {"$ref": "https://x.org/a.json"}}}))
    result = runner.invoke(app, ["schemas", str(loose), str(remote), "expense", "--format", "jsonl"])
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.exit_code == 1
    assert [(x["accepted"], bool(x["changed"])) for x in lines] == [
        (True, True),
        (False, False),
        (True, False),
    ]
    assert "#/properties/a: $ref" in lines[1]["refused_because"][-1]
    assert set(lines[0]) == {
        "file", "accepted", "changed", "checked_after", "not_checked", "long_texts", "unguided", "dates",
        "refused_because"
    }  # fmt: skip
    strict = runner.invoke(app, ["schemas", str(loose), "expense", "--strict", "--format", "jsonl"])
    verdicts = [json.loads(line) for line in strict.stdout.splitlines()]
    assert [v["accepted"] for v in verdicts] == [False, True] and strict.exit_code == 1
    assert any("--strict" in reason for reason in verdicts[0]["refused_because"])


def test_every_format_is_said_checked_after_or_not_checked_at_all(tmp_path) -> None:
    """Draft-04 names no `date` or `iri`: both are checked all the same; `int32` has no checker."""
    body = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object", "properties": {
        f: {"type": "string", "format": f} for f in ("date", "iri", "int32")}}  # fmt: skip
    (tmp_path / "formats.json").write_text(json.dumps(body))
    result = runner.invoke(app, ["schemas", str(tmp_path / "formats.json"), "--format", "jsonl"])
    [line] = [json.loads(x) for x in result.stdout.splitlines()]
    after = " ".join(line["checked_after"])
    assert "#/properties/date: format 'date'" in after and "#/properties/iri: format 'iri'" in after
    assert line["not_checked"] == [
        "#/properties/int32: format 'int32' is not checked at all: jsonschema has no checker for it"
    ]
    text = runner.invoke(app, ["schemas", str(tmp_path / "formats.json")])
    assert "not checked: #/properties/int32" in text.output


def test_a_module_model_name_is_shown_as_written_never_as_an_emoji() -> None:
    """`tickets:Ticket` printed as `tickets🎫` (the terminal library read `:ticket:` as an emoji code)."""
    result = runner.invoke(app, ["schemas", "tests.pydantic_models:Ticket"])
    assert "tests.pydantic_models:Ticket" in " ".join(result.output.split()), result.output
    assert "🎫" not in result.output


def test_a_schema_with_a_date_says_how_an_open_date_is_read_and_what_to_write() -> None:
    """shop_receipt states day first; expense none, so it is told what to write; contact has no date."""
    result = runner.invoke(app, ["schemas", "shop_receipt", "expense", "contact", "--format", "jsonl"])
    receipt, expense, contact = (json.loads(line)["dates"] for line in result.stdout.splitlines())
    assert receipt == ["03/06/2024 is read day-first (3 June), as x-date-order says; 25/06/2024 as written"]
    assert '"x-date-order": "day-first"' in expense[0] and "both ways" in expense[0]
    assert contact == []
