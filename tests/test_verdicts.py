"""Messages for people: each field kept, dropped, refused or unsure in a few words, and what to do next.

Every sentence form the judge writes has a test here (`read_error`), so a changed sentence in
tasks/validate.py or tasks/confidence/bounds.py fails one named test; the forms the real judge writes
today are also produced by the judge itself, then stored in a real SQLite database and read back through
`formwork results` (table, jsonl, csv) and the review page.
"""

from __future__ import annotations

import csv
import io
import json
import math

import pytest
from typer.testing import CliRunner

from formwork.db.store import QueuePolicy, finish_run, save_outcomes, start_run, store_records
from formwork.flows.cli import app
from formwork.flows.review import load_review, render_review
from formwork.flows.verdicts import field_verdicts, next_step, read_error, summary_line
from formwork.schemas.registry import load_schema
from formwork.tasks.calls import Outcome
from formwork.tasks.engines.base import Completion
from formwork.tasks.sources.records import InputRecord
from formwork.tasks.validate import judge

EXPENSE = load_schema("expense")
runner = CliRunner()


@pytest.mark.parametrize(
    ("sentence", "path", "kind", "words"),
    [
        ('who "coffee for the team" was a guess (probability 0.80, below 0.99); choose the value the text '
         "supports", "who", "dropped", "p 0.80 < 0.99"),
        ('who "Tom" is below its bound (probability 0.80, below 0.99); held to its bound, not retried',
         "who", "dropped", "p 0.80 < 0.99"),
        ('category "entertainment" stands where an earlier attempt was below its bound; held to its bound, '
         "not retried", "category", "dropped", "held from an earlier attempt"),
        ("category null stands where an earlier attempt was below its bound, so it does not show the text "
         "has none; held to its bound, not retried", "category", "unsure", "null, held from before"),
        ('category "meals" is a choice no calibration covers for this schema and model (run formwork eval '
         "--calibrate); choose the value the text supports", "category", "dropped",
         "no calibration for this choice"),
        ('category "meals" has no probability to hold to 0.99: the engine gave no grammar-masked logprobs '
         "(see docs/production.md)", "category", "dropped", "no probability"),
        ('who "Bob" does not appear in the text; copy the who as it is written, or null if the text has '
         "none", "who", "dropped", "not in the text"),
        ('project "Taxi" is the text that gives who, not a value of its own; give the project the text '
         "names, or null if it names none", "project", "refused", "a copy of who"),
        ('who "Ann" is what a JSON-like example in the text writes for "who", not what the text states; '
         "give the who the text states, or null if it states none", "who", "refused", "from a JSON example"),
        ("who: 'Jane Doe' is the schema's example, not found in the text", "who", "refused",
         "the schema's example"),
        ("email: 'bob' does not look like an e-mail address", "email", "refused", "not an e-mail address"),
        ("date: '2024-02-31' is not a 'date'", "date", "refused", "wrong format (date)"),
        ("category: 'snacks' is not one of ['meals', 'travel']", "category", "refused",
         "not one of the choices"),
        ("who: 'xxxx' is too long", "who", "refused", "'xxxx' is too long"),
        ("project null is unsure (probability 0.40, below 0.99): the text may hold a value; held to its "
         "bound, not retried", "project", "unsure", "null, p 0.40 < 0.99"),
        ("project null is a choice no calibration covers for this schema and model, so it does not show "
         "the text has none; held to its bound, not retried", "project", "unsure", "null, no calibration"),
        ("project null has no probability to hold to 0.99, so it does not show the text has none",
         "project", "unsure", "null, no probability"),
        ('who "Aiko" dropped: unsure (score 0.64 < 0.9)', "who", "dropped", "score 0.64 < 0.9"),
        ('who "Aiko" dropped: unsure (p 0.9899 < 0.99)', "who", "dropped", "p 0.9899 < 0.99"),
        ('category "meals" dropped: its field is not certified', "category", "dropped",
         "field not certified"),
        ('category "meals" dropped: no calibration covers this choice', "category", "dropped",
         "no calibration for this choice"),
        ('who "Tom" dropped: the readings disagree', "who", "dropped", "the readings disagree"),
        ("amount 12 dropped: no probability (the engine gave no grammar-masked logprobs)", "amount",
         "dropped", "no probability"),
        ("project null is unsure: unsure (score 0.51 < 0.9); the text may hold a value", "project", "unsure",
         "null, score 0.51 < 0.9"),
        ("project null is unsure: its field is not certified; the text may hold a value", "project",
         "unsure", "null, field not certified"),
        ("project null is unsure: the readings disagree; the text may hold a value", "project", "unsure",
         "null, the readings disagree"),
    ],
)  # fmt: skip
def test_each_field_sentence_reads_as_a_few_words(sentence: str, path: str, kind: str, words: str) -> None:
    reason = read_error(sentence)
    assert (reason.path, reason.kind, reason.words) == (path, kind, words)


@pytest.mark.parametrize(
    ("sentence", "words"),
    [
        ("reasoning pass stopped at length after 384 tokens", "reasoning pass stopped at length"),
        ("formatting pass stopped at length after 90 tokens", "formatting pass stopped at length"),
        ("no JSON came back (Expecting value; finish=length)", "no JSON came back (finish length)"),
        ("no JSON came back", "no JSON came back"),
        ("note: the text was cut to 3000 characters to fit", "text cut to 3000 characters to fit"),
        ("the text was cut to 300 characters to fit the context", "text cut to 300 characters to fit"),
        ("no value at all: every field is null, which is not an answer unless the schema's root says "
         "`x-empty-ok: true`", "no value at all"),
        ("the text is empty", "the text is empty"),
        ("no calibration vouches for this row: every value passes the uncalibrated bound, but only a "
         "calibration makes a row ok (formwork eval GOLD --schema S --calibrate)",
         "no calibration vouches for this row"),
    ],
)  # fmt: skip
def test_each_row_sentence_reads_as_the_rows_problem(sentence: str, words: str) -> None:
    reason = read_error(sentence)
    assert (reason.path, reason.words) == (None, words)


def done(text: str, pieces: tuple[tuple[str, float], ...] = ()) -> Completion:
    return Completion(text, "stop", 10, 10, 0.1, "test", token_logprobs=pieces)  # type: ignore[arg-type]


def judged(data: dict, source: str, **bounds: float):
    """The real judge on a formatting output written by hand."""
    return judge(EXPENSE, source, done("notes"), done(json.dumps(data)), **bounds)


GOOD = {"who": "Maria", "date": "2024-03-14", "amount": 42.8, "currency": "USD", "category": "meals",
        "project": None}  # fmt: skip
SOURCE = "Lunch 2024-03-14, $42.80, Maria"


def row_of(verdict, status: str | None = None) -> dict:
    return {"status": status or verdict.status, "errors": verdict.errors, "nulled": verdict.nulled,
            "evidence": verdict.evidence}  # fmt: skip


def test_the_judges_own_sentences_become_verdicts() -> None:
    invented = judged({**GOOD, "who": "Bob", "date": "2024-02-31"}, SOURCE)
    verdicts, problems = field_verdicts(row_of(invented))
    by_path = {v.path: v for v in verdicts}
    assert invented.status == "partial" and problems == []
    assert (by_path["who"].kind, by_path["who"].words) == ("dropped", "not in the text")
    assert (by_path["date"].kind, by_path["date"].words) == ("refused", "wrong format (date)")
    assert by_path["who"].detail.startswith('who "Bob" does not appear in the text')
    assert {p for p, v in by_path.items() if v.kind == "kept"} == {"amount", "currency", "category"}

    uncalibrated = judged(GOOD, SOURCE, choice_confidence=1.5)
    category = {v.path: v for v in field_verdicts(row_of(uncalibrated))[0]}["category"]
    assert (category.kind, category.words) == ("dropped", "no calibration for this choice")

    unweighed = judged(GOOD, SOURCE, min_confidence=0.9)  # the null project cannot be weighed either
    unsure = {v.words for v in field_verdicts(row_of(unweighed))[0] if v.kind != "kept"}
    assert unsure == {"no probability", "null, no probability"}


def test_a_value_below_its_bound_shows_its_probability_and_bound() -> None:
    text = json.dumps(GOOD)
    pieces = tuple((ch, math.log(0.999)) for ch in text)  # every token sure, but one: the category
    at = text.index('"meals"')
    pieces = (*pieces[:at], (text[at : at + 7], math.log(0.8)), *pieces[at + 7 :])
    verdict = judge(EXPENSE, SOURCE, done("notes"), done(text, pieces), min_confidence=0.95)
    assert verdict.status == "partial", verdict.errors
    category = {v.path: v for v in field_verdicts(row_of(verdict))[0]}["category"]
    assert category.kind == "dropped" and category.words.startswith("p 0.8") and "< 0.95" in category.words


def test_a_probability_beside_its_bound_shows_the_digits_that_differ() -> None:
    """Never "p 0.99 < 0.99": the judge writes the digits that differ, and a row stored before it did is
    read with its evidence's own probability."""
    text = json.dumps(GOOD)
    pieces = tuple((ch, math.log(0.99999)) for ch in text)
    at = text.index('"meals"')
    pieces = (*pieces[:at], (text[at : at + 7], math.log(0.9899)), *pieces[at + 7 :])
    verdict = judge(EXPENSE, SOURCE, done("notes"), done(text, pieces), min_confidence=0.99)
    assert any("(probability 0.9899, below 0.99)" in e for e in verdict.errors), verdict.errors
    category = {v.path: v for v in field_verdicts(row_of(verdict))[0]}["category"]
    assert (category.kind, category.words) == ("dropped", "p 0.9899 < 0.99")
    old = {**row_of(verdict), "errors": [e.replace("0.9899", "0.99") for e in verdict.errors]}
    category = {v.path: v for v in field_verdicts(old)[0]}["category"]
    assert category.words == "p 0.9899 < 0.99"  # from the evidence's confidence


def test_structure_decides_without_sentences() -> None:
    """Evidence and nulled paths alone: the judge's sentences may change, the verdicts still hold."""
    row = {"status": "partial", "errors": [], "nulled": ["who", "items[1]"], "evidence": [
        {"path": "who", "value": "Bob", "grounded": False},
        {"path": "items[1].name", "value": "tea", "grounded": True},
        {"path": "amount", "value": 3, "grounded": False},
        {"path": "currency", "value": "EUR", "grounded": True, "verdict": "refused"},
        {"path": "category", "value": "meals", "grounded": True, "confidence": 0.97},
        {"path": "project", "value": None, "kind": "absent", "grounded": True},
        {"path": "note", "value": "none", "kind": "default", "grounded": True},
    ]}  # fmt: skip
    assert summary_line(row).splitlines() == [
        "kept: category, note",
        "who: dropped",
        "items[1].name: dropped (with items[1])",
        "amount: dropped (not in the text)",
        "currency: refused",
    ]


def test_next_step_names_the_command_for_the_most_common_cause() -> None:
    below = {"schema": "expense@v3", "status": "partial", "nulled": ["who"], "evidence": [],
             "errors": ['who "x" was a guess (probability 0.80, below 0.99); choose the value the text '
                        "supports"]}  # fmt: skip
    uncalibrated = {**below, "errors": ['category "meals" is a choice no calibration covers for this schema '
                                        "and model (run formwork eval --calibrate)"]}  # fmt: skip
    line = next_step([below, uncalibrated, uncalibrated])
    assert line.startswith("next: 2 choice(s) had no calibration")
    assert "formwork eval GOLD.jsonl --schema expense --calibrate" in line and "formwork models" in line
    uncertified = {**below, "errors": ['who "Maria" dropped: its field is not certified']}
    line = next_step([uncertified, uncertified, below])
    assert line.startswith("next: 2 value(s) are in fields their calibration could not certify")
    assert "--claim pooled" in line and "no calibration" not in line
    assert next_step([{"status": "ok", "errors": [], "nulled": [], "evidence": []}]) == (
        "every value kept: nothing to do"
    )
    cut = {"status": "failed", "errors": ["reasoning pass stopped at length after 384 tokens"],
           "nulled": [], "evidence": []}  # fmt: skip
    assert "reasoning_max_tokens" in next_step([cut])


@pytest.fixture
def stored_run(tmp_path) -> str:
    """A real SQLite database holding one run of three judged records: ok, partial, failed."""
    from formwork.db.session import session_factory

    url = f"sqlite:///{tmp_path}/verdicts.db"
    sessions = session_factory(url)
    texts = {"lunch": SOURCE, "taxi": "Taxi 35 EUR on 2024-05-02", "blank": "hello",
             "invented": "Lunch, 42.80 USD, Maria, March 14th 2024"}  # fmt: skip
    with sessions() as session:
        ids = store_records(session, "test", [InputRecord(k, t) for k, t in texts.items()])
        models = {"engine": "local", "reasoning_model": "test", "formatting_model": "test"}
        run_id = start_run(session, EXPENSE, flow="test", source="test", **models)
        taxi = {
            **GOOD,
            "who": "Bob",
            "amount": 35,
            "currency": "EUR",
            "date": "2024-05-02",
            "category": "travel",
        }
        outcomes = [
            judged(GOOD, SOURCE),
            judged(taxi, texts["taxi"], choice_confidence=1.5),
            judge(EXPENSE, "hello", done("notes"), Completion("{", "length", 10, 90, 0.1, "test")),
            judged({**GOOD, "amount": 1.5}, texts["invented"]),  # a critical value the text lacks: failed
        ]
        stored = [Outcome(record_id, verdict, 1) for record_id, verdict in zip(ids, outcomes, strict=True)]
        save_outcomes(session, run_id, EXPENSE, stored, QueuePolicy())
        finish_run(session, run_id)
    return url


def test_results_table_gives_each_record_two_lines_at_80_columns(stored_run: str) -> None:
    """Kept values, then one word per other field; the reasons in full are in --format jsonl."""
    from rich.cells import cell_len

    shown = runner.invoke(app, ["results", "--db", stored_run])  # CliRunner's console: 80 columns
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert lines[0] == "results of run 1: 1 ok, 1 partial, 2 failed"
    records: dict[str, list[str]] = {}
    for line in lines[1:]:
        if line.split(" ")[0] in ("lunch", "taxi", "blank", "invented"):
            records[line.split(" ")[0]] = [line]
        elif line.startswith(" ") and records:
            list(records.values())[-1].append(line)
    assert all(1 <= len(r) <= 2 and all(cell_len(line) <= 80 for line in r) for r in records.values())
    lunch, taxi, blank, invented = (" ".join(" ".join(records[k]).split()) for k in records)
    # every field in the schema's order; these rows are judged with no policy, so nothing certifies a
    # value and each is marked unsure (`?`); a refused one is a word (flows.delivered, issue 51)
    assert lunch.startswith("lunch ok who=Maria? date=2024-03-14? amount=42.8? currency=USD? category=meals?")
    assert taxi.startswith("taxi partial who:refused date=2024-05-02? amount=35? currency=EUR?")
    assert taxi.endswith("category=travel? project=null")  # the reasons in full: jsonl
    assert blank == "blank failed no JSON came back (finish length)"
    assert invented.startswith("invented failed") and "amount=" not in invented  # a failed row keeps none
    assert "choose the value the text supports" not in shown.output  # the model's feedback stays out
    assert "next: " in shown.output and "--calibrate" in shown.output and "--format jsonl" in shown.output


def test_a_record_with_long_values_still_fits_two_lines() -> None:
    from rich.cells import cell_len

    from formwork.flows.cli.results import record_lines

    long = {"record": "a-very-long-record-key-from-a-mail-folder", "status": "partial", "errors": [],
            "nulled": [], "evidence": [{"path": f"f{i}", "value": "x", "grounded": False} for i in range(9)],
            "data": {"who": "张伟 " * 30, "note": "word " * 40, "items": [{"name": "tea"}] * 20,
                     **{f"f{i}": "x" for i in range(9)}}}  # fmt: skip
    lines = record_lines(long, 16)
    assert len(lines) == 2 and all(cell_len(line.plain) <= 80 for line in lines)
    assert lines[0].plain.startswith("a-very-long-rec… partial who=张伟") and "more" in lines[1].plain


def test_a_failed_rows_answer_is_never_its_data(stored_run: str) -> None:
    lines = runner.invoke(app, ["results", "--db", stored_run, "--format", "jsonl"]).stdout.splitlines()
    invented = next(json.loads(line) for line in lines if json.loads(line)["record"] == "invented")
    assert invented["status"] == "failed" and invented["data"] is None
    assert invented["unchecked"]["amount"] == 1.5  # kept apart, under its own name
    table = list(
        csv.reader(io.StringIO(runner.invoke(app, ["results", "--db", stored_run, "-f", "csv"]).stdout))
    )
    row = next(r for r in table if r[0] == "invented")
    assert row[8::2] == [""] * 6 and row[9::2] == ["refused"] * 6 and "1.5" not in row  # value, state


def test_jsonl_and_csv_carry_the_verdict_and_the_detail(stored_run: str) -> None:
    lines = runner.invoke(app, ["results", "--db", stored_run, "--format", "jsonl"]).stdout.splitlines()
    taxi = next(json.loads(line) for line in lines if json.loads(line)["record"] == "taxi")
    who = next(v for v in taxi["verdicts"] if v["path"] == "who")
    assert (who["verdict"], who["why"]) == ("dropped", "not in the text")
    assert who["detail"] in taxi["errors"] and "does not appear in the text" in who["detail"]
    blank = next(json.loads(line) for line in lines if json.loads(line)["record"] == "blank")
    assert blank["verdicts"] == [
        {
            "path": None,
            "verdict": "refused",
            "why": "no JSON came back (finish length)",
            "detail": blank["errors"][0],
        }
    ]

    table = list(
        csv.reader(io.StringIO(runner.invoke(app, ["results", "--db", stored_run, "-f", "csv"]).stdout))
    )
    assert table[0][5:7] == ["errors", "verdicts"]
    taxi_row = next(r for r in table if r[0] == "taxi")
    assert "who: dropped (not in the text)" in taxi_row[6] and "does not appear in the text" in taxi_row[5]


def test_review_page_shows_verdicts_and_folds_the_judges_sentences(stored_run: str) -> None:
    from formwork.db.session import reader_factory

    with reader_factory(stored_run)() as session:
        page = render_review(load_review(session, None), "run")
    assert "<li>who: dropped (not in the text)</li>" in page
    assert '<li class="bad">✗ dropped: category = &quot;travel&quot;' in page  # grounded, but dropped: no ✓
    assert '<li class="def">– in a failed row: who = &quot;Maria&quot;' in page  # a failed row keeps none
    assert "unchecked answer of a failed row (not kept)" in page
    assert page.count("✓") == 8  # lunch's five values, taxi's date, amount and currency
    assert "<summary>the judge's sentences</summary><ul><li>who &quot;Bob&quot; does not appear" in page
    assert 'id="next">next: ' in page
