"""`formwork eval` writes a chart only where `--chart` asks for one.

Without `--chart` it wrote eval-SCHEMA.png and eval-SCHEMA.json into whatever folder it was run from,
which neither the docs nor the option's help said: files a data engineer did not ask for, in a
repository or a cron job's folder. A real run of the bundled model on one gold record.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from formwork.flows.cli import app

GOLD = Path(__file__).parent.parent / "examples" / "gold" / "expense.jsonl"


@pytest.mark.slow
def test_eval_without_chart_writes_no_file_into_the_working_folder(
    prefect_harness, local_engine, monkeypatch, tmp_path
) -> None:
    monkeypatch.setenv("FORMWORK_REASONING_MAX_TOKENS", "32")
    monkeypatch.setenv("FORMWORK_MAX_ATTEMPTS", "1")
    here = tmp_path / "cwd"
    here.mkdir()
    monkeypatch.chdir(here)
    db = f"sqlite:///{tmp_path}/eval.db"
    result = CliRunner().invoke(app, ["eval", str(GOLD), "--schema", "expense", "--mode", "one-pass",
                                      "--limit", "1", "--db", db])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "per-field accuracy" in result.output  # it did evaluate
    assert sorted(p.name for p in here.iterdir()) == []
    assert "chart:" not in result.output
