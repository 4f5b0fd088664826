"""The default reader is the measured best (issue 51 point 4): with no reader setting, the model and mode
the shipped calibrations are for once its file is installed, else the bundled SmolLM2-135M in two-pass mode
with a note that nothing will be certified; any reader setting (argument, environment, formwork.toml) wins;
`--model NAME[@MODE]` on run, retry and eval; every run summary names its model, mode and calibration.

The 1.5B is never run here: its presence is a file in a temporary cache folder (FORMWORK_CACHE).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from formwork.db.models import Run
from formwork.db.queries import run_summary
from formwork.db.session import session_factory
from formwork.flows.cli import app
from formwork.tasks.engines.models import known, model_file
from formwork.tasks.reader_choice import BEST_MODE, BEST_MODEL, best_model_file
from formwork.tasks.settings import Settings

runner = CliRunner()


@pytest.fixture
def nothing_set(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No reader setting from the session, the shell or a formwork.toml; an empty model cache."""
    for name in Settings.model_fields:
        monkeypatch.delenv(f"FORMWORK_{name.upper()}", raising=False)
    monkeypatch.setenv("FORMWORK_CONFIG", str(tmp_path / "no-formwork.toml"))
    monkeypatch.setenv("FORMWORK_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _install_best() -> None:
    """The measured best's file where the installer writes it (its content is never read here)."""
    path = model_file(known(BEST_MODEL))
    path.parent.mkdir(parents=True)
    path.write_bytes(b"GGUF")


def test_the_settings_find_the_best_model_where_the_installer_puts_it(nothing_set) -> None:
    assert best_model_file() == model_file(known(BEST_MODEL)) == nothing_set / "models" / f"{BEST_MODEL}.gguf"


def test_nothing_set_runs_the_measured_best_once_installed_else_the_bundled_model_with_a_note(
    nothing_set,
) -> None:
    bundled = Settings()
    assert (bundled.local_model, bundled.mode) == (None, "two-pass")
    note = bundled.default_note() or ""
    assert "nothing will be certified" in note and f"formwork models install {BEST_MODEL}" in note
    _install_best()
    best = Settings()
    assert (best.engine, best.local_model, best.mode) == ("local", BEST_MODEL, BEST_MODE)
    assert best.default_note() is None
    copied = best.model_copy(update={"escalate_to": "@two-readings"})  # a flow's copy keeps the choice
    assert (copied.local_model, copied.mode) == (BEST_MODEL, BEST_MODE)


def test_any_reader_setting_wins_over_the_default(nothing_set, monkeypatch, tmp_path) -> None:
    _install_best()
    monkeypatch.setenv("FORMWORK_MODE", "two-readings")
    assert (Settings().local_model, Settings().mode) == (None, "two-readings")
    monkeypatch.delenv("FORMWORK_MODE")
    monkeypatch.setenv("FORMWORK_ENGINE", "local")
    assert (Settings().local_model, Settings().mode, Settings().default_note()) == (None, "two-pass", None)
    monkeypatch.delenv("FORMWORK_ENGINE")
    config = tmp_path / "formwork.toml"
    config.write_text('local_model = "smollm2-135m"\n', encoding="utf-8")
    monkeypatch.setenv("FORMWORK_CONFIG", str(config))
    assert (Settings().local_model, Settings().mode) == ("smollm2-135m", "two-pass")
    # the 1.5B named without a mode runs in the mode its calibrations are for; a mode named is kept
    assert Settings(local_model=BEST_MODEL).mode == BEST_MODE
    assert Settings(local_model=BEST_MODEL, mode="two-pass").mode == "two-pass"


def test_run_says_it_falls_back_and_how_to_install_the_best(nothing_set, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "600")
    ran = runner.invoke(app, ["run", str(tmp_path / "nope.jsonl"), "--schema", "expense",
                              "--db", f"sqlite:///{tmp_path}/x.db"])  # fmt: skip
    assert ran.exit_code == 2
    assert "note:" in ran.output and "nothing will be certified" in ran.output
    assert f"formwork models install {BEST_MODEL}" in ran.output


def _run(session, confidence: dict | None) -> int:
    run = Run(flow="batch_extract", source="s", schema_name="expense", schema_version=3, engine="local",
              reasoning_model="m", formatting_model="qwen2.5-coder-1.5b", confidence=confidence)  # fmt: skip
    session.add(run)
    session.flush()
    return run.id


def test_every_summary_names_the_model_its_mode_and_the_calibration_or_none(db_url) -> None:
    key = {"model": "qwen2.5-coder-1.5b", "mode": "one-pass"}
    sessions = session_factory(db_url)
    with sessions() as session:
        shipped = _run(session, {"calibration": "shipped expense-v3", "guarantee": "g", "key": key})
        none = _run(session, {"calibration": None, "guarantee": "g", "key": key | {"mode": "two-pass"}})
        off = _run(session, None)
        session.commit()
        rows = {run: dict(run_summary(session, run).rows()) for run in (shipped, none, off)}
    said = "model, mode, calibration"
    assert rows[shipped][said] == "qwen2.5-coder-1.5b, one-pass, calibration shipped expense-v3"
    assert rows[none][said] == "qwen2.5-coder-1.5b, two-pass, calibration none"
    assert rows[off][said] == "qwen2.5-coder-1.5b, mode not recorded, calibration off"
