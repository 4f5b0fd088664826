"""Every shipped calibration says what it was measured on; `formwork models` prints it (issue 52 point 8).

Only the contact one-pass file (TextMine JDR) named its data; the other three printed "on 147 gold
records", which hid that those records are the project's own hand-written development gold, not real
records. The files read here are the real shipped ones.
"""

from __future__ import annotations

import json

from typer.testing import CliRunner

from formwork.flows.cli import app
from formwork.tasks.evaluation import shipped

FILES = sorted(shipped.SHIPPED.glob("*.json"))


def test_every_shipped_file_names_its_data_and_still_passes_its_checks() -> None:
    assert len(FILES) >= 4
    for path in FILES:
        data = json.loads(path.read_text(encoding="utf-8"))
        gold = data.get("gold")
        assert isinstance(gold, str), f"{path.name} does not say what it was measured on"
        assert gold.startswith(f"{data['gold_size']} "), f"{path.name}: {gold!r} does not give its size first"
        assert "examples/gold" in gold and "calibration half" in gold, f"{path.name}: {gold!r}"
        hand_written = "TextMine" not in gold
        assert not hand_written or ("hand-written" in gold and "development" in gold), path.name
    assert [data["file"] for data in shipped.shipped_files()] == [path.name for path in FILES]


def test_models_prints_each_shipped_files_data(monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "2000")
    listed = " ".join(CliRunner().invoke(app, ["models"]).output.split())
    for path in FILES:
        gold = json.loads(path.read_text(encoding="utf-8"))["gold"]
        assert f"on {gold}" in listed, f"{path.name}'s data is not in the listing"
