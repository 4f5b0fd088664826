"""The `formwork` command as a data engineer uses it: run, read results back, list and lint schemas."""

from __future__ import annotations

import csv
import io
import json

import pytest
from typer.testing import CliRunner

from formwork.flows.cli import app

runner = CliRunner()


def test_help_explains_every_command() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("run", "results", "schemas"):
        assert command in result.output


def test_schemas_lists_the_builtins_with_critical_fields() -> None:
    result = runner.invoke(app, ["schemas"])
    assert result.exit_code == 0
    assert "expense" in result.output and "amount, currency" in result.output


def test_schemas_lints_a_user_file(tmp_path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"type": "object", "properties": {"a": {"$ref": "https://x.org/a.json"}}}))
    result = runner.invoke(app, ["schemas", str(bad)])
    assert result.exit_code == 1 and "points outside this file" in result.output


def test_unknown_schema_exits_2_with_a_message(tmp_path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text('{"text": "x"}\n')
    result = runner.invoke(
        app, ["run", str(source), "--schema", "invoice", "--db", f"sqlite:///{tmp_path}/x.db"]
    )
    assert result.exit_code == 2 and "unknown schema 'invoice'" in result.output


@pytest.mark.slow
def test_run_then_results_as_table_jsonl_and_csv(
    prefect_harness, local_engine, monkeypatch, tmp_path
) -> None:
    monkeypatch.setenv("FORMWORK_REASONING_MAX_TOKENS", "32")
    monkeypatch.setenv("FORMWORK_MAX_ATTEMPTS", "1")
    source = tmp_path / "in.jsonl"
    source.write_text(
        '{"id": "a", "text": "Taxi 35 EUR, Tom"}\n{"id": "b", "text": ""}\n{"id": "c", "text": "x"}\n'
    )
    db = f"sqlite:///{tmp_path}/cli.db"
    ran = runner.invoke(app, ["run", str(source), "--schema", "expense", "--db", db, "--limit", "2"])
    assert ran.exit_code == 0, ran.output
    assert "status failed" in ran.output and "model calls" in ran.output and "2 records" in ran.output

    jsonl = runner.invoke(app, ["results", "--db", db, "--format", "jsonl"])
    rows = [json.loads(line) for line in jsonl.stdout.splitlines()]
    assert [r["record"] for r in rows] == ["a", "b"]
    assert rows[1]["status"] == "failed" and "empty" in rows[1]["errors"][0]
    assert {"status", "reasoning_finish", "formatting_finish", "errors", "data"} <= set(rows[0])

    table = list(
        csv.reader(io.StringIO(runner.invoke(app, ["results", "--db", db, "--format", "csv"]).stdout))
    )
    assert table[0][:6] == ["record", "status", "reasoning_finish", "formatting_finish", "attempts", "errors"]
    if rows[0]["data"]:
        assert set(rows[0]["data"]) <= set(table[0])
    assert len(table) == 3

    failed = runner.invoke(app, ["results", "--db", db, "--status", "failed", "--format", "jsonl"])
    assert all(json.loads(line)["status"] == "failed" for line in failed.stdout.splitlines())
