"""`formwork eval` end to end on the real model: tables printed, scores stored and linked, chart drawn."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from formwork.db.models import EvalRun, Run
from formwork.db.session import session_factory
from formwork.flows.cli import app
from formwork.schemas.registry import load_schema
from formwork.tasks.evaluation.gold import GoldProblem, load_gold

runner = CliRunner()
GOLD = Path(__file__).parent.parent / "examples" / "gold" / "expense.jsonl"


@pytest.mark.slow
def test_eval_compares_modes_stores_scores_and_draws_the_numbers(
    prefect_harness, local_engine, monkeypatch, tmp_path
) -> None:
    monkeypatch.setenv("FORMWORK_REASONING_MAX_TOKENS", "32")
    monkeypatch.setenv("FORMWORK_MAX_ATTEMPTS", "1")
    db, chart = f"sqlite:///{tmp_path}/eval.db", tmp_path / "eval.png"
    args = ["eval", str(GOLD), "--schema", "expense", "--compare", "one-pass,prompt-json", "--limit", "2"]
    result = runner.invoke(app, [*args, "--db", db, "--chart", str(chart)])
    assert result.exit_code == 0, result.output
    for shown in ("outcomes per mode", "precision of ok", "per-field accuracy", "currency", "parse steps"):
        assert shown in result.output

    with session_factory(db)() as session:
        evals = session.scalars(select(EvalRun).order_by(EvalRun.id)).all()
        assert [e.mode for e in evals] == ["one-pass", "prompt-json"] and len({e.batch for e in evals}) == 1
        for row in evals:  # linked to the run that made the rows, and the scores add up
            assert session.get(Run, row.run_id).flow == "evaluate"
            assert row.records == 2 and sum(row.scores["outcomes"].values()) == 2
            assert 0 <= row.scores["share_ok"] <= 1 and row.scores["calls"] >= 2
            assert len(row.scores["calibration"]) == 10 and row.scores["calibration"][0]["threshold"] == 0.0
        assert evals[0].run_id != evals[1].run_id
        assert sum(evals[1].scores["parse_steps"].values()) == evals[1].scores["calls"]

    import matplotlib.image

    assert matplotlib.image.imread(chart).shape[0] > 100  # a real image
    drawn = json.loads(chart.with_suffix(".json").read_text())
    assert drawn["modes"] == ["one-pass", "prompt-json"]
    for row in evals:  # the chart shows the stored numbers, not a placeholder
        assert drawn["outcomes"][row.mode] == list(row.scores["outcomes"].values())
        assert drawn["field_accuracy"][row.mode] == [row.scores["field_accuracy"][f] for f in drawn["fields"]]


def test_mode_and_compare_together_are_refused(tmp_path) -> None:
    result = runner.invoke(app, ["eval", str(GOLD), "-s", "expense", "--mode", "one-pass", "--compare", "x"])
    assert result.exit_code == 2 and "not both" in result.output


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("not json", "not JSON"),
        ('{"id": "a", "text": "x"}', '"gold" must be an object'),
        ('{"id": "a", "text": "x", "gold": {"colour": "red"}}', "no field colour"),
        ('{"text": "x", "gold": {}}', 'needs "id"'),
    ],
)
def test_a_broken_gold_line_is_refused_with_its_line_number(tmp_path, line: str, problem: str) -> None:
    path = tmp_path / "gold.jsonl"
    path.write_text('{"id": "ok", "text": "Taxi 5 EUR", "gold": {"amount": 5}}\n' + line + "\n")
    with pytest.raises(GoldProblem, match=problem) as caught:
        load_gold(path, load_schema("expense"))
    assert ":2:" in str(caught.value)


def test_a_repeated_gold_id_is_refused(tmp_path) -> None:
    path = tmp_path / "gold.jsonl"
    path.write_text('{"id": "a", "text": "x", "gold": {}}\n' * 2)
    with pytest.raises(GoldProblem, match="appears twice"):
        load_gold(path, load_schema("expense"))
