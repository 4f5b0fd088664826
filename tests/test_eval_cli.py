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
from formwork.tasks.evaluation.gold import GoldProblem, half_of, load_gold

runner = CliRunner()
GOLD = Path(__file__).parent.parent / "examples" / "gold" / "expense.jsonl"
EXPENSE_FIELDS = ("who", "date", "amount", "currency", "category", "project")


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
    for shown in ("outcomes per mode", "precision of ok", "per-field accuracy", "currency", "parse steps",
                  "certified values per field"):  # fmt: skip
        assert shown in result.output

    with session_factory(db)() as session:
        evals = session.scalars(select(EvalRun).order_by(EvalRun.id)).all()
        assert [e.mode for e in evals] == ["one-pass", "prompt-json"] and len({e.batch for e in evals}) == 1
        for row in evals:  # linked to the run that made the rows, and the scores add up
            assert session.get(Run, row.run_id).flow == "evaluate"
            assert row.records == 2 and sum(row.scores["outcomes"].values()) == 2
            assert 0 <= row.scores["share_ok"] <= 1 and row.scores["calls"] >= 2
            counts = row.scores["certified"]  # per field: values, certified, and certified right
            assert set(counts) == set(EXPENSE_FIELDS) and all(c["values"] == 2 for c in counts.values())
            assert all(c["right"] <= c["certified"] <= c["values"] for c in counts.values())
        assert evals[0].run_id != evals[1].run_id
        assert sum(evals[1].scores["parse_steps"].values()) == evals[1].scores["calls"]

    import matplotlib.image

    assert matplotlib.image.imread(chart).shape[0] > 100  # a real image
    drawn = json.loads(chart.with_suffix(".json").read_text())
    assert drawn["modes"] == ["one-pass", "prompt-json"]
    for row in evals:  # the chart shows the stored numbers, not a placeholder
        assert drawn["outcomes"][row.mode] == list(row.scores["outcomes"].values())
        assert drawn["field_accuracy"][row.mode] == [row.scores["field_accuracy"][f] for f in drawn["fields"]]


@pytest.mark.postgres
def test_eval_hands_the_database_url_to_its_flow_through_the_environment(
    prefect_harness, monkeypatch, tmp_path, postgres_db_url
) -> None:
    """Issue 41 point 1: the URL from FORMWORK_DB_URL, password included, was a stored flow parameter.
    The database must answer (eval opens it before any flow starts, issue 54 point 22); the test
    server trusts local connections, so the password is carried and ignored. The gold here is broken,
    so the flow run is created and fails before it reads any record."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName
    from sqlalchemy import make_url

    password = "eval-s3cret-41"
    url = make_url(postgres_db_url).set(password=password).render_as_string(hide_password=False)
    monkeypatch.setenv("FORMWORK_DB_URL", url)
    gold = tmp_path / "gold.jsonl"
    gold.write_text("not json\n")
    result = runner.invoke(app, ["eval", str(gold), "--schema", "expense"])
    assert result.exit_code == 2 and "not JSON" in " ".join(result.output.split()), result.output
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=["evaluate"])))
    assert any(run.parameters.get("gold") == str(gold) for run in runs)  # the flow did run
    assert password not in json.dumps([run.parameters for run in runs])


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


FULL = {"who": "Tom", "date": "2024-03-03", "amount": 35, "currency": "EUR", "category": "transport",
        "project": None}  # fmt: skip


def test_a_gold_that_leaves_a_field_out_is_refused_for_calibration_with_its_line_and_field(tmp_path) -> None:
    """Defect 1: a left-out field would count as right unchecked, and the bound would then cover it."""
    path = tmp_path / "gold.jsonl"
    left_out = {k: v for k, v in FULL.items() if k != "category"}
    rows = [{"id": "a", "text": "Taxi 35 EUR, 2024-03-03, Tom", "gold": FULL},
            {"id": "b", "text": "Taxi 35 EUR", "gold": left_out}]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert len(load_gold(path, load_schema("expense"))) == 2  # scoring alone may leave fields out
    with pytest.raises(GoldProblem, match=r":2: the gold leaves out category"):
        load_gold(path, load_schema("expense"), complete=True)
    path.write_text(json.dumps({"id": "c", "text": "x", "gold": {}}) + "\n")
    with pytest.raises(GoldProblem, match=r':1: "gold": \{\} names no field'):
        load_gold(path, load_schema("expense"), complete=True)


@pytest.mark.parametrize("target", ["0", "0.3", "1"])
def test_a_target_outside_half_to_0999_is_refused(tmp_path, target: str) -> None:
    result = runner.invoke(app, ["eval", str(GOLD), "-s", "expense", "--calibrate", "--target", target])
    assert result.exit_code == 2 and "--target" in result.output
    from formwork.flows.evaluate import _checked

    with pytest.raises(ValueError, match=r"outside 0\.5 to 0\.999"):
        _checked(float(target), True, False, None, False)


def test_the_gold_set_splits_in_two_fixed_halves_by_a_hash_of_each_id(tmp_path) -> None:
    from formwork.tasks.evaluation.gold import half_of

    expense = load_schema("expense")
    every = [g.id for g in load_gold(GOLD, expense)]
    halves = {h: [g.id for g in load_gold(GOLD, expense, half=h)] for h in ("calibration", "verification")}
    assert sorted(halves["calibration"] + halves["verification"]) == sorted(every)
    assert not set(halves["calibration"]) & set(halves["verification"]) and all(halves.values())
    assert half_of("exp-001") == half_of("exp-001") and {half_of(f"r{n}") for n in range(8)} == {
        "calibration", "verification"}  # fmt: skip
    reordered = tmp_path / "gold.jsonl"
    reordered.write_text("".join(reversed(GOLD.read_text().splitlines(keepends=True))))
    assert {g.id for g in load_gold(reordered, expense, half="verification")} == set(halves["verification"])


@pytest.mark.slow
def test_compare_calibrate_stores_one_calibration_per_mode_and_exports_each(
    prefect_harness, local_engine, monkeypatch, tmp_path
) -> None:
    """Defect 3: `--compare two-pass,one-pass --calibrate` left the last mode's threshold in force for
    both; now each mode's calibration is stored under its own key, applies to that mode only, and
    `--export` writes each as a file to ship, which a run then finds by its full key."""
    from formwork.db.calibrations import policy_for
    from formwork.db.models import Calibration
    from formwork.schemas.registry import load_schema as schema_of
    from formwork.tasks.evaluation import shipped
    from formwork.tasks.evaluation.key import calibration_key
    from formwork.tasks.settings import Settings

    monkeypatch.setenv("FORMWORK_REASONING_MAX_TOKENS", "32")
    monkeypatch.setenv("FORMWORK_MAX_ATTEMPTS", "1")
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"id": "a", "text": "Taxi 35 EUR, 2024-03-03, Tom", "gold": FULL}) + "\n")
    db, ship = f"sqlite:///{tmp_path}/eval.db", tmp_path / "ship"
    args = ["eval", str(gold), "-s", "expense", "--compare", "two-pass,one-pass", "--calibrate", "--export",
            str(ship), "--db", db, "--chart", str(tmp_path / "c.png")]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "written for shipping to" in result.output
    expense = schema_of("expense")
    with session_factory(db)() as session:
        rows = session.scalars(select(Calibration).order_by(Calibration.id)).all()
        assert [r.mode for r in rows] == ["two-pass", "one-pass"]
        assert all(r.grounded is not None and r.reasoning_model and r.model_hash for r in rows)
        for row in rows:
            key = calibration_key(Settings(mode=row.mode), expense, (local_engine, local_engine))
            assert key.model_hash == row.model_hash and key.mode == row.mode
            applied = policy_for(session, key).applied  # its own mode's: no field certifies on 1 row
            assert applied["calibration"] == row.id
            assert applied["guarantee"].startswith("0 of 6 fields certified on 1 gold records")
    files = sorted(p.name for p in ship.glob("*.json"))
    assert len(files) == 2 and all("one-pass" in f or "two-pass" in f for f in files)
    monkeypatch.setattr(shipped, "SHIPPED", ship)
    key = calibration_key(Settings(mode="one-pass"), expense, (local_engine, local_engine))
    assert policy_for(None, key).applied["calibration"].startswith("shipped in ")
    assert "one-pass" in policy_for(None, key).applied["calibration"]


def test_an_export_never_leaves_its_folder_whatever_the_schema_title(tmp_path) -> None:
    """Issue 41 point 15: `--export FOLDER` wrote `FOLDER/../../evil-v1-….json` for a schema titled
    `../../evil`; every part of the name is cleaned, and a path that resolves outside is refused."""
    from formwork.flows import eval_steps
    from formwork.tasks.evaluation.key import CalibrationKey

    body = json.loads((Path(__file__).parent.parent / "schemas/builtin/expense.json").read_text())
    evil = tmp_path / "evil.json"
    evil.write_text(json.dumps(body | {"title": "../../evil"}))
    schema = load_schema(str(evil))
    assert schema.name == "../../evil"
    folder = tmp_path / "a" / "b" / "ship"
    folder.mkdir(parents=True)
    key = CalibrationKey(schema.name, schema.version, schema.digest, "../x/SmolLM2 135M.gguf", None,
                         "local/../..", "two-pass", True, "m", "s", "p")  # fmt: skip
    name = eval_steps.export_name(key)
    assert (folder / name).resolve().parent == folder.resolve(), name
    assert name == f"evil-v{schema.version}-x-SmolLM2-135M.gguf-local-two-pass.json"
    assert eval_steps.export_path(folder, key) == folder.resolve() / name
    (folder / name).symlink_to(tmp_path / "elsewhere.json")  # a link planted in the folder
    with pytest.raises(ValueError, match="outside"):
        eval_steps.export_path(folder, key)


def test_one_schemas_gold_may_live_in_several_files_with_ids_unique_across_them(tmp_path) -> None:
    expense = load_schema("expense")
    first, second = tmp_path / "en.jsonl", tmp_path / "zh.jsonl"
    row = {"text": "Taxi 35 EUR, 2024-03-03, Tom", "gold": FULL}
    first.write_text(json.dumps({"id": "a", **row}) + "\n")
    second.write_text(json.dumps({"id": "b", **row}) + "\n")
    assert [g.id for g in load_gold([first, second], expense)] == ["a", "b"]
    assert [g.id for g in load_gold([first, second], expense, limit=1)] == ["a"]
    second.write_text(json.dumps({"id": "a", **row}) + "\n")
    with pytest.raises(GoldProblem, match=r"zh\.jsonl:1: id 'a' appears twice"):
        load_gold([first, second], expense)


@pytest.mark.slow
def test_a_measured_run_calibrates_one_half_and_verifies_the_other_without_the_model(
    prefect_harness, local_engine, monkeypatch, tmp_path
) -> None:
    """`--measure` stores the readings once; `--from-run` calibrates on one half's rows and verifies on
    the other's, deciding them again as a run applying the calibration would (no model call): the
    verified counts are those of the rows of the verification half alone."""
    from formwork.db.models import Calibration

    monkeypatch.setenv("FORMWORK_REASONING_MAX_TOKENS", "24")
    monkeypatch.setenv("FORMWORK_MAX_ATTEMPTS", "1")
    db, gold = f"sqlite:///{tmp_path}/eval.db", tmp_path / "gold.jsonl"
    gold.write_text("".join(GOLD.read_text().splitlines(keepends=True)[:6]))
    common = [
        str(gold),
        "-s",
        "expense",
        "--mode",
        "one-pass",
        "--db",
        db,
        "--chart",
        str(tmp_path / "c.png"),
    ]
    measured = runner.invoke(app, ["eval", *common, "--measure"])
    assert measured.exit_code == 0, measured.output
    with session_factory(db)() as session:
        run_id = session.scalars(select(EvalRun.run_id)).one()
    calibrated = runner.invoke(app, ["eval", *common, "--calibrate", "--half", "calibration",
                                     "--from-run", str(run_id)])  # fmt: skip
    assert calibrated.exit_code == 0, calibrated.output
    assert "calibration 1 stored" in calibrated.output
    assert "chart:" in measured.output and "chart:" not in calibrated.output, "a replay draws no chart"
    verified = runner.invoke(app, ["eval", *common, "--verify", "--half", "verification",
                                   "--from-run", str(run_id)])  # fmt: skip
    assert verified.exit_code == 0, verified.output
    assert "applied calibration 1:" in " ".join(verified.output.split())
    with session_factory(db)() as session:
        (made,) = session.scalars(select(Calibration)).all()
        halves = load_gold(gold, load_schema("expense"))
        assert made.gold_size == sum(1 for g in halves if half_of(g.id) == "calibration")
    wrong = runner.invoke(app, ["eval", *common[:4], "two-pass", *common[5:], "--verify", "--from-run",
                                str(run_id)])  # fmt: skip
    assert wrong.exit_code == 2 and "no `formwork eval` of mode two-pass" in " ".join(wrong.output.split())
    unread = runner.invoke(app, ["eval", str(GOLD), *common[1:], "--verify", "--limit", "8", "--from-run",
                                 str(run_id)])  # fmt: skip
    assert unread.exit_code == 2 and "did not read 2 of these gold records" in " ".join(unread.output.split())


@pytest.mark.slow
def test_a_two_readings_run_calibrates_one_pass_from_its_notes_free_reading(
    prefect_harness, local_engine, monkeypatch, tmp_path
) -> None:
    """A two-readings run's notes-free reading is the one-pass call, so `--mode one-pass --from-run`
    calibrates the one-pass mode from it: the stored calibration is keyed one-pass, its costs are the
    notes-free calls alone, and the rows it counts hold no value of the two-pass reading."""
    from formwork.db.models import Calibration, ModelCall
    from formwork.flows.evaluate import evaluate

    monkeypatch.setenv("FORMWORK_REASONING_MAX_TOKENS", "24")
    monkeypatch.setenv("FORMWORK_MAX_ATTEMPTS", "1")
    db, gold = f"sqlite:///{tmp_path}/eval.db", tmp_path / "gold.jsonl"
    gold.write_text("".join(GOLD.read_text().splitlines(keepends=True)[:4]))
    common = [str(gold), "-s", "expense", "--db", db, "--chart", str(tmp_path / "c.png")]
    measured = runner.invoke(app, ["eval", *common, "--mode", "two-readings", "--measure"])
    assert measured.exit_code == 0, measured.output
    with session_factory(db)() as session:
        run_id = session.scalars(select(EvalRun.run_id)).one()
        readings = [(c.judged or {}).get("reading") for c in session.scalars(select(ModelCall))]
    report = evaluate(str(gold), "expense", modes=["one-pass"], db_url=db, calibrate=True, from_run=run_id)
    with session_factory(db)() as session:
        (made,) = session.scalars(select(Calibration)).all()
        assert made.mode == "one-pass" and made.gold_size == 4
    notes_free = readings.count("notes-free")
    assert 0 < notes_free < len(readings) and report["one-pass"]["calls"] == notes_free
    other = runner.invoke(app, ["eval", *common, "--mode", "one-pass-reasoning", "--calibrate", "--from-run",
                                str(run_id)])  # fmt: skip
    said = " ".join(other.output.split())
    assert other.exit_code == 2 and "no `formwork eval` of mode one-pass-reasoning" in said
