"""The Python API on the real embedded model, and the installed package's one `formwork` namespace."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel, Field, model_validator

from formwork.flows.api import extract, resolve_schema
from formwork.schemas.registry import SchemaProblem
from formwork.tasks.settings import Settings
from tests.pydantic_models import Receipt

QUICK = Settings(engine="local", reasoning_max_tokens=48, max_attempts=1)
# The class-validator test needs a row the judge passes: no enum passes uncalibrated, so confidence is
# left to the field bounds (none here), and one pass, so no reasoning cut at length fails it first
# (only ok and partial rows are built as model instances, so only they reach the class's validators).
TRUSTING = QUICK.model_copy(update={"calibration": False, "mode": "one-pass"})


class Mood(BaseModel):
    """A chat line's mood."""

    mood: Literal["happy", "sad", "angry"] = Field(description="How the writer feels")


class NeverValid(Mood):
    """A class whose own validator rejects every row: the API must not hand back an `ok` it rejects."""

    @model_validator(mode="after")
    def reject(self) -> NeverValid:
        raise ValueError("this class accepts nothing")


@pytest.mark.slow
def test_texts_come_back_in_order_as_instances_of_the_class(local_engine: object) -> None:
    texts = ["Anna: we won the finals!!! best day ever", "   ", "Tom: my cat died this morning"]
    rows = extract(texts, schema=Mood, settings=QUICK)
    assert [row.text for row in rows] == texts
    assert rows[1].status == "failed" and rows[1].errors == ["bad input: the text is empty or not a string"]
    for row in (rows[0], rows[2]):
        assert row.formatting_finish == "stop" and row.attempts == 1
        if row.status != "failed":  # the class holds the value read, whether certified or unsure
            assert isinstance(row.model, Mood) and row.model.mood == row.values["mood"]["value"]
            assert row.unchecked is None and row.data is not None
        else:  # a failed row's answer is never handed out as data
            assert row.data is None and row.unchecked is not None


@pytest.mark.slow
def test_a_row_the_class_rejects_fails_with_the_reason(local_engine: object) -> None:
    [row] = extract(["Anna: we won the finals!!!"], schema=NeverValid, settings=TRUSTING)
    assert row.status == "failed" and row.model is None and not row.ok
    assert row.data is None and row.unchecked is not None
    assert row.unchecked["mood"] in {"happy", "sad", "angry"}
    assert "the model class rejects it" in row.errors[-1] and "accepts nothing" in row.errors[-1]


def test_every_kind_of_schema_resolves_and_a_wrong_one_is_refused(tmp_path: Path) -> None:
    assert resolve_schema(Receipt).name == "Receipt"
    assert resolve_schema("expense").name == "expense"
    body = {"title": "note", "type": "object", "properties": {"topic": {"enum": ["a", "b"]}}}
    assert resolve_schema(body).checked_body["properties"]["topic"]["enum"] == ["a", "b", None]
    (tmp_path / "note.json").write_text('{"type": "object", "properties": {"n": {"type": "integer"}}}')
    assert resolve_schema(tmp_path / "note.json").name == "note"
    with pytest.raises(SchemaProblem, match="must be a Pydantic model class"):
        resolve_schema(42)  # type: ignore[arg-type]


def test_installed_formwork_claims_no_generic_top_level_names(tmp_path: Path) -> None:
    """Outside the repository, `db`, `tasks`, `schemas` and `flows` are the user's names, not ours."""
    probe = (
        "import importlib.util as u, formwork.flows.api, formwork.db.models, formwork.schemas.builtin;"
        "print(sorted(n for n in ('db', 'tasks', 'schemas', 'flows') if u.find_spec(n)))"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.slow
def test_extract_applies_the_policy_a_run_applies_and_says_which(
    local_engine: object, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, any_db_url: str
) -> None:
    """Defect 6: extract() applied no bound, so a coin-flip enum came back `ok`. Now it looks up what
    `formwork run` would: no database configured and nothing shipped: the uncalibrated default (no row
    is ok); the configured database's per-value calibration when it has one for the key."""
    from formwork.db.models import Calibration
    from formwork.db.session import session_factory
    from formwork.flows.api import applied_policy
    from formwork.tasks.confidence.certify import FieldClaim, field_level, lower_bound
    from formwork.tasks.confidence.score import ScoreModel
    from formwork.tasks.evaluation import shipped
    from formwork.tasks.evaluation.calibration import schema_fields
    from formwork.tasks.evaluation.key import calibration_key

    monkeypatch.delenv("FORMWORK_DB_URL", raising=False)
    monkeypatch.setattr(shipped, "SHIPPED", tmp_path)  # nothing shipped for this test's schema anyway
    plain = Settings(engine="local", reasoning_max_tokens=48, max_attempts=1, mode="one-pass")
    texts = ["Anna: we won the finals!!! best day ever"]
    [row] = extract(texts, schema=Mood, settings=plain)
    assert row.confidence.startswith("uncalibrated: none: no calibration for Mood@v")
    policy = applied_policy(plain, resolve_schema(Mood), (local_engine, local_engine))
    assert policy is not None and not policy.vouched and row.status != "ok"

    configured = plain.model_copy(update={"db_url": any_db_url})
    checked = resolve_schema(Mood)
    key = calibration_key(configured, checked, (local_engine, local_engine))  # type: ignore[arg-type]
    share = field_level(0.9, len(schema_fields(checked.checked_body)))
    claims = {"mood": FieldClaim("mood", 0.95, share, 100, 0.5, 90, 90, lower_bound(90, 90, share)).as_dict()}
    with session_factory(any_db_url)() as session:
        session.add(made := Calibration(
            **key.as_dict(), method="per-value", threshold=None, target=0.95, level=0.9, bound=0.0, kept=0,
            correct=0, fields=claims, score_model=ScoreModel({}, 20.0).as_dict(), gold_hash="0" * 64,
            gold_size=100))  # fmt: skip
        session.commit()
        made_id = made.id
    [row] = extract(texts, schema=Mood, settings=configured)
    assert row.confidence.startswith(f"calibration {made_id}: 1 of 1 fields certified on 100 gold records")
    assert not any("no calibration covers" in e for e in row.errors)


@pytest.mark.slow
def test_an_unsure_required_field_is_a_value_with_its_state_not_a_failed_row(
    local_engine: object, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Issue 51: with no calibration a required enum is dropped as unsure, and the class then rejected
    the row (6 of 6 rows `failed`). Now the row stays what the run made it, the class holds the value
    the model read, and the row says that value is unsure; `data` keeps the safe reading."""
    from formwork.tasks.evaluation import shipped

    monkeypatch.delenv("FORMWORK_DB_URL", raising=False)
    monkeypatch.setattr(shipped, "SHIPPED", tmp_path)  # no calibration, as for any new schema
    plain = Settings(engine="local", reasoning_max_tokens=48, max_attempts=1, mode="one-pass")
    [row] = extract(["Anna: we won the finals!!! best day ever"], schema=Mood, settings=plain)
    assert row.status == "partial" and row.data is not None and row.data.get("mood") is None  # not safe
    assert row.states == {"mood": "unsure"} and row.unsure == ["mood"]
    assert isinstance(row.model, Mood) and row.model.mood in {"happy", "sad", "angry"}
    assert row.values["mood"]["value"] == row.model.mood and row.values["mood"]["why"]
