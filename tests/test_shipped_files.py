"""A damaged shipped calibration is refused in one line and left out: never a hang, never a traceback.

Review 5: a shipped file whose field claimed `correct` above `kept` made the bound never return, so
every run without its own calibration and `formwork models` hung; an unreadable one ended `formwork
models` in a traceback. The files here are the real shipped ones, copied and damaged.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from formwork.flows.cli import app
from formwork.tasks.confidence.certify import lower_bound
from formwork.tasks.evaluation import shipped
from formwork.tasks.evaluation.key import CalibrationKey

SOURCE = next(shipped.SHIPPED.glob("expense-v3-*-two-readings.json"))


def _returns_within(seconds: float, call) -> bool:
    """Whether `call` returns (or raises) within `seconds`: a hang must fail the test, not stall it."""
    done = threading.Event()

    def run() -> None:
        with contextlib.suppress(ValueError):
            call()
        done.set()

    threading.Thread(target=run, daemon=True).start()
    return done.wait(seconds)


@pytest.mark.parametrize("counts", [(98, 97, 0.98), (5, 3, 0.9), (True, 3, 0.9), (2, 3, 1.0), (2, 3, -1)])
def test_the_bound_refuses_counts_that_are_none_at_once(counts) -> None:
    assert _returns_within(5, lambda: lower_bound(*counts))
    with pytest.raises(ValueError, match=r"no counts|no confidence level"):
        lower_bound(*counts)


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A shipped folder holding the real expense calibration, and the listing wide enough to read."""
    shutil.copy(SOURCE, tmp_path / SOURCE.name)
    monkeypatch.setattr(shipped, "SHIPPED", tmp_path)
    monkeypatch.setenv("COLUMNS", "600")
    shipped._refused.cache_clear()
    return tmp_path


DAMAGES = {
    "more right than kept": lambda d: d["fields"]["amount"].update(correct=d["fields"]["amount"]["kept"] + 1),
    "rows more right than kept": lambda d: d.update(correct=5, kept=3),
    "a count written as text": lambda d: d["fields"]["amount"].update(kept="138"),
    "a bound written as text": lambda d: d["fields"]["amount"].update(bound="high"),
    "not a calibration": lambda d: d.clear() or d.update(key=[1]),
}


@pytest.mark.parametrize("damage", DAMAGES.values(), ids=DAMAGES.keys())
def test_a_damaged_file_is_refused_in_one_line_and_the_others_still_serve(folder, damage, caplog) -> None:
    data = json.loads(SOURCE.read_text(encoding="utf-8"))
    key = CalibrationKey(**data["key"])
    damage(data)
    (folder / "damaged.json").write_text(json.dumps(data))
    with caplog.at_level(logging.WARNING, logger=shipped.__name__):
        assert _returns_within(10, lambda: shipped.find_shipped(key))
        found = shipped.find_shipped(key)
        shipped.find_shipped(key)
    assert found is not None and found["file"] == SOURCE.name  # the good file still applies
    said = [r.getMessage() for r in caplog.records if "damaged.json" in r.getMessage()]
    assert len(said) == 1 and "\n" not in said[0] and "refused" in said[0]  # once, in one line


def test_models_lists_with_a_damaged_shipped_file_and_says_it_in_one_line(folder) -> None:
    data = json.loads(SOURCE.read_text(encoding="utf-8"))
    data["fields"]["amount"]["correct"] = data["fields"]["amount"]["kept"] + 1
    (folder / "claims-too-much.json").write_text(json.dumps(data))
    (folder / "truncated.json").write_text(SOURCE.read_text(encoding="utf-8")[:200])
    result = CliRunner().invoke(app, ["models"])
    assert result.exit_code == 0 and result.exception is None
    assert "Traceback" not in result.output
    for name in ("claims-too-much.json", "truncated.json"):  # each refusal said, in one line
        assert len([line for line in result.output.splitlines() if name in line and "refused" in line]) == 1
    assert "expense@v3 two-readings: 2 of 6 fields certified" in result.output


def test_a_real_shipped_file_passes_every_check() -> None:
    for path in shipped.SHIPPED.glob("*.json"):
        assert shipped.read_shipped(path)["file"] == path.name
