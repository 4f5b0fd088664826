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
        assert row.data is not None and row.formatting_finish == "stop" and row.attempts == 1
        if row.status != "failed":
            assert isinstance(row.model, Mood) and row.model.mood == row.data["mood"]


@pytest.mark.slow
def test_a_row_the_class_rejects_fails_with_the_reason(local_engine: object) -> None:
    [row] = extract(["Anna: we won the finals!!!"], schema=NeverValid, settings=TRUSTING)
    assert row.data is not None and row.data["mood"] in {"happy", "sad", "angry"}
    assert row.status == "failed" and row.model is None and not row.ok
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
