"""A SQL table or query as input: read in keyset pages, rows as records, a watermark for nightly runs.

Each backend test builds a real `messages` table: on SQLite in its own file, on PostgreSQL in a fresh
database, read through a login role with a password (so the password's absence can be checked).
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from sqlalchemy import (
    Column,
    DateTime,
    Engine,
    Integer,
    MetaData,
    Numeric,
    String,
    Table,
    Text,
    create_engine,
    event,
    insert,
    select,
    text,
    update,
)
from sqlalchemy.engine.url import make_url
from typer.testing import CliRunner

from formwork.db.models import Base, ModelCall, Record, Result, Watermark
from formwork.db.session import session_factory
from formwork.flows.cli import app
from formwork.tasks.redact import redact
from formwork.tasks.sources import SourceProblem
from formwork.tasks.sources.sql import read_sql, real_source_url, sql_selection, url_label
from tests.run_exit import expected_exit

PASSWORD = "Src-s3cret-91"
T0 = datetime(2025, 3, 1, 8, 0, tzinfo=UTC)
runner = CliRunner()

messages = Table(
    "messages",
    MetaData(),
    Column("id", Integer, primary_key=True),
    Column("text", Text),
    Column("author", String(40)),
    Column("amount", Numeric(10, 2)),
    Column("updated_at", DateTime(timezone=True)),
)


def _rows(n: int, start: int = 1) -> list[dict]:
    return [{"id": i, "text": f"Taxi {10 + i} EUR to the airport", "author": f"user{i % 3}",
             "amount": Decimal(f"{10 + i}.50"), "updated_at": T0 + timedelta(minutes=i)}
            for i in range(start, start + n)]  # fmt: skip


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def source_url(request: pytest.FixtureRequest, tmp_path) -> str:
    """A database holding `messages`; on PostgreSQL the URL logs in as a role with a password."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'source.db'}"
    else:
        admin_url = request.getfixturevalue("postgres_db_url")
        role = f"reader_{uuid.uuid4().hex[:8]}"
        with create_engine(admin_url).begin() as connection:
            connection.execute(text(f"CREATE ROLE {role} LOGIN PASSWORD '{PASSWORD}'"))
            connection.execute(text(f"GRANT ALL ON SCHEMA public TO {role}"))
        url = make_url(admin_url).set(username=role, password=PASSWORD).render_as_string(hide_password=False)
    engine = create_engine(url)
    messages.create(engine)
    engine.dispose()
    return url


def _write(url: str, statement) -> None:  # type: ignore[no-untyped-def]
    engine = create_engine(url)
    with engine.begin() as connection:
        connection.execute(statement)
    engine.dispose()


@pytest.fixture
def selects() -> list[str]:
    """Every SELECT any engine sends while the test runs (to count the pages)."""
    seen: list[str] = []

    def note(conn, cursor, statement, parameters, context, executemany) -> None:  # type: ignore[no-untyped-def]
        if "FROM messages" in statement and "LIMIT" in statement.upper() and "LIMIT 0" not in statement:
            seen.append(statement)

    event.listen(Engine, "before_cursor_execute", note)
    yield seen
    event.remove(Engine, "before_cursor_execute", note)


def test_a_table_is_read_in_keyset_pages_with_json_safe_meta(source_url, selects) -> None:
    _write(source_url, insert(messages).values(_rows(7)))
    records = list(read_sql(source_url, table="messages", page_size=3))
    assert [r.key for r in records] == [str(i) for i in range(1, 8)]
    assert len(selects) == 3  # 3 + 3 + 1 rows
    assert records[0].text == "Taxi 11 EUR to the airport" and records[0].problem is None
    meta = records[0].meta
    assert meta["amount"] == "11.50" and meta["author"] == "user1"
    assert datetime.fromisoformat(meta["updated_at"]).replace(tzinfo=UTC) == T0 + timedelta(minutes=1)
    json.dumps([r.meta for r in records])  # every value JSON can hold


def test_a_query_with_its_own_column_names(source_url) -> None:
    _write(source_url, insert(messages).values(_rows(5)))
    query = "SELECT id AS msg_id, text AS body, author FROM messages WHERE author = 'user1';"
    records = list(read_sql(source_url, query=query, id_column="msg_id", text_column="body", page_size=1))
    assert [r.key for r in records] == ["1", "4"]
    assert records[1].text.startswith("Taxi 14") and records[1].meta == {"author": "user1"}


def test_since_takes_only_rows_at_or_after_the_watermark_and_null_rows_always(source_url) -> None:
    rows = _rows(6)
    rows[1]["updated_at"] = None  # never stamped: has no place in the order, read on every run
    rows[2]["text"] = None
    _write(source_url, insert(messages).values(rows))
    records = read_sql(source_url, table="messages", updated_column="updated_at", since=rows[3]["updated_at"],
                       page_size=2)  # fmt: skip
    keys = [r.key for r in records]
    assert keys == ["2", "4", "5", "6"]
    high = records.high  # SQLite: the column's own text; PostgreSQL: a datetime
    assert (datetime.fromisoformat(high) if isinstance(high, str) else high).replace(tzinfo=UTC) == rows[5][
        "updated_at"
    ]
    by_id = list(read_sql(source_url, table="messages", since=4))
    assert [r.key for r in by_id] == ["5", "6"]
    everything = {r.key: r for r in read_sql(source_url, table="messages")}
    assert everything["3"].problem == "row id=3: the text column is NULL"


def test_a_bad_source_is_refused_before_reading_and_says_why(source_url) -> None:
    with pytest.raises(SourceProblem, match="no table 'missing'"):
        read_sql(source_url, table="missing")
    with pytest.raises(SourceProblem, match=r"no column \['body'\]"):
        read_sql(source_url, table="messages", text_column="body")
    with pytest.raises(SourceProblem, match="exactly one of --query or --table"):
        read_sql(source_url)
    with pytest.raises(SourceProblem, match="need a database URL"):
        sql_selection("input.jsonl", table="messages")


def test_an_unreachable_database_is_refused_without_its_password() -> None:
    url = f"postgresql://reader:{PASSWORD}@127.0.0.1:1/nightly"
    with pytest.raises(SourceProblem) as caught:
        read_sql(url, table="messages")
    assert "Connection refused" in str(caught.value) and PASSWORD not in str(caught.value)
    assert PASSWORD not in url_label(url)


def _all_text(db_url: str) -> str:
    """Every value of every Formwork table, as one string (to search for a leaked password)."""
    engine = create_engine(db_url)
    with engine.connect() as connection:
        dump = [str(row) for t in Base.metadata.sorted_tables for row in connection.execute(select(t))]
    engine.dispose()
    return "\n".join(dump)


@pytest.mark.slow
def test_nightly_runs_extract_only_new_and_changed_rows(
    prefect_harness, local_engine, monkeypatch, source_url, tmp_path
) -> None:
    monkeypatch.setenv("FORMWORK_REASONING_MAX_TOKENS", "16")
    monkeypatch.setenv("FORMWORK_MAX_ATTEMPTS", "1")
    is_sqlite = source_url.startswith("sqlite")
    db = f"sqlite:///{tmp_path / 'formwork.db'}" if is_sqlite else make_url(source_url).set(
        username="postgres", password=None).render_as_string(hide_password=False)  # fmt: skip
    _write(source_url, insert(messages).values(_rows(3)))
    args = ["run", source_url, "--schema", "expense", "--db", db, "--table", "messages",
            "--updated-column", "updated_at"]  # fmt: skip

    first = runner.invoke(app, args)
    assert first.exit_code == expected_exit(first.output), first.output
    assert "3 records" in first.output
    # overnight: row 2 is edited, row 4 arrives, rows 1 and 3 stay as they were
    _write(source_url, update(messages).where(messages.c.id == 2).values(
        text="Hotel 240 GBP, two nights", updated_at=T0 + timedelta(hours=5)))  # fmt: skip
    _write(source_url, insert(messages).values(_rows(1, start=4)))
    second = runner.invoke(app, args)
    assert second.exit_code == expected_exit(second.output), second.output

    with session_factory(db)() as session:
        runs = sorted({run for (run,) in session.execute(select(ModelCall.run_id))})
        assert len(runs) == 2
        called = select(ModelCall.record_id).where(ModelCall.run_id == runs[1])
        second_run = {session.get(Record, rid).text for (rid,) in session.execute(called)}
        assert second_run == {"Hotel 240 GBP, two nights", "Taxi 14 EUR to the airport"}
        assert session.query(Result).count() == 5  # 3 + the edited text + the new row
        sources = {source for (source,) in session.execute(select(Record.source))}
        assert sources == {url_label(source_url) + "#table=messages"}
        mark = session.scalars(select(Watermark)).one()
        assert mark.value["type"] == ("str" if is_sqlite else "datetime") and mark.run_id == runs[1]
        assert datetime.fromisoformat(mark.value["value"]).replace(tzinfo=UTC) == T0 + timedelta(hours=5)
    third = runner.invoke(app, args)  # nothing new: only the boundary row is read again, and not extracted
    assert third.exit_code == 0 and "nothing to do" in third.output, third.output
    if not is_sqlite:
        assert PASSWORD not in _all_text(db)
        from prefect.client.orchestration import get_client

        with get_client(sync_client=True) as client:
            parameters = [run.parameters for run in client.read_flow_runs()]
        assert parameters and PASSWORD not in json.dumps(parameters)


def test_sqlite_text_timestamps_keep_the_inclusive_boundary(tmp_path) -> None:
    """Issue 20 point 8: the watermark was bound as `… 10:00:00.000000` against stored `… 10:00:00`,
    so the inclusive boundary acted as exclusive and a row written in the same second was missed."""
    url = f"sqlite:///{tmp_path / 'stamped.db'}"
    stamped = "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT, updated_at DATETIME)"
    _write(url, text(stamped))  # as another program writes it: seconds, no fraction
    same = "'2025-03-01 10:00:00'"
    _write(url, text(f"INSERT INTO notes VALUES (1, 'Taxi 12 EUR', {same}), (2, 'Lunch 9', {same}), "
                     f"(3, 'Bus 3 EUR', {same})"))  # fmt: skip
    first = read_sql(url, table="notes", updated_column="updated_at", page_size=1)  # pages end mid-second
    assert [r.key for r in first] == ["1", "2", "3"]
    _write(url, text("INSERT INTO notes VALUES (4, 'Hotel 80 EUR', '2025-03-01 10:00:00')"))
    again = read_sql(url, table="notes", updated_column="updated_at", since=first.high)
    assert "4" in [r.key for r in again]


def test_the_safety_window_moves_back_in_the_values_own_shape() -> None:
    from formwork.db.watermarks import reread_from

    window = timedelta(minutes=5)
    assert reread_from("2025-03-01 10:00:00", window) == "2025-03-01 09:55:00"
    assert reread_from("2025-03-01T10:00:00.250000+00:00", window) == "2025-03-01T09:55:00"
    assert reread_from(T0, window) == T0 - window
    assert (
        reread_from(41, window) == 41 and reread_from("not a time at all!!", window) == "not a time at all!!"
    )


@pytest.mark.postgres
def test_a_row_committed_after_a_run_read_past_it_is_read_again(postgres_db_url) -> None:
    """Issue 20 point 8: `DEFAULT now()` is the transaction's start, so a slow transaction commits a
    timestamp below what a run already read; only a re-read window behind the watermark finds it."""
    from formwork.db.watermarks import reread_from

    engine = create_engine(postgres_db_url)
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE notes (id serial PRIMARY KEY, text text, "
                                "updated_at timestamptz NOT NULL DEFAULT now())"))  # fmt: skip
    slow = engine.connect()
    slow.begin()
    slow.execute(text("INSERT INTO notes (text) VALUES ('Taxi 12 EUR')"))  # stamped now, committed later
    with engine.begin() as connection:
        connection.execute(text("SELECT pg_sleep(0.05)"))
        connection.execute(text("INSERT INTO notes (text) VALUES ('Lunch 9 EUR')"))
    first = read_sql(postgres_db_url, table="notes", updated_column="updated_at")
    assert [r.text for r in first] == ["Lunch 9 EUR"]
    slow.commit()
    slow.close()
    engine.dispose()
    exact = read_sql(postgres_db_url, table="notes", updated_column="updated_at", since=first.high)
    assert "Taxi 12 EUR" not in [r.text for r in exact]  # what the watermark alone misses
    since = reread_from(first.high, timedelta(minutes=5))
    windowed = read_sql(postgres_db_url, table="notes", updated_column="updated_at", since=since)
    assert "Taxi 12 EUR" in [r.text for r in windowed]


def test_without_an_updated_column_every_row_is_read_each_run(source_url, tmp_path) -> None:
    """Issue 20 point 9: the watermark was max(id), so a new row whose id sorts lower and a row
    edited in place were never read."""
    from formwork.db.store import start_run
    from formwork.db.watermarks import advance_watermark, rows_since_watermark
    from formwork.schemas.registry import load_schema

    notes = Table("notes", MetaData(), Column("id", String(40), primary_key=True), Column("text", Text))
    engine = create_engine(source_url)
    notes.create(engine)
    engine.dispose()
    _write(
        source_url, insert(notes).values([{"id": "b7", "text": "Taxi 12 EUR"}, {"id": "c2", "text": "Bus 3"}])
    )
    db, schema = f"sqlite:///{tmp_path / 'formwork.db'}", load_schema("expense")
    selection = sql_selection(source_url, table="notes")
    first = rows_since_watermark(db, source_url, selection, schema)
    assert [r.key for r in first] == ["b7", "c2"]
    with session_factory(db)() as session:
        advance_watermark(session, first, schema, start_run(session, schema, flow="t", source="s",
                          engine="local", reasoning_model="m", formatting_model="m"))  # fmt: skip
    _write(source_url, insert(notes).values({"id": "a9", "text": "Lunch 9 EUR"}))  # sorts lower
    _write(source_url, update(notes).where(notes.c.id == "b7").values(text="Taxi 14 EUR"))  # in place
    second = {r.key: r.text for r in rows_since_watermark(db, source_url, selection, schema)}
    assert second == {"a9": "Lunch 9 EUR", "b7": "Taxi 14 EUR", "c2": "Bus 3"}


def test_a_query_may_hold_a_colon_word_in_a_string_literal(source_url) -> None:
    """Issue 20 point 17: `:word` inside a literal was read as a bind parameter and refused."""
    _write(source_url, insert(messages).values(_rows(2)))
    query = "SELECT id, text || ' at 10:30 :note' AS text FROM messages WHERE author <> 'x:y'"
    records = list(read_sql(source_url, query=query))
    assert [r.text for r in records] == ["Taxi 11 EUR to the airport at 10:30 :note",
                                         "Taxi 12 EUR to the airport at 10:30 :note"]  # fmt: skip
    if not source_url.startswith("sqlite"):
        cast = list(read_sql(source_url, query="SELECT id::text AS id, text FROM messages"))
        assert [r.key for r in cast] == ["1", "2"]


@pytest.mark.slow
def test_rows_a_killed_run_claimed_are_processed_and_the_watermark_waits_for_them(
    prefect_harness, local_engine, monkeypatch, tmp_path
) -> None:
    """Issue 20 point 7: rows claimed by a killed run were skipped, the watermark moved past them and
    every later run said "nothing to do" (after three runs 10 of 10 rows had no result)."""
    from formwork.db.claims import claim_records
    from formwork.db.store import start_run, store_records
    from formwork.db.watermarks import save_watermark
    from formwork.schemas.registry import load_schema

    monkeypatch.setenv("FORMWORK_REASONING_MAX_TOKENS", "16")
    monkeypatch.setenv("FORMWORK_MAX_ATTEMPTS", "1")
    source_url, db = f"sqlite:///{tmp_path / 'source.db'}", f"sqlite:///{tmp_path / 'formwork.db'}"
    engine = create_engine(source_url)
    messages.create(engine)
    engine.dispose()
    _write(source_url, insert(messages).values(_rows(3)))
    rows, schema = read_sql(source_url, table="messages", updated_column="updated_at"), load_schema("expense")
    with session_factory(db)() as session:  # a run stores and claims the rows, then is killed
        ids = store_records(session, rows.record_source, list(rows))
        killed = start_run(session, schema, flow="batch_extract", source=rows.record_source,
                           engine="local", reasoning_model="m", formatting_model="m")  # fmt: skip
        assert claim_records(session, killed, schema, ids, timedelta(minutes=1)) == ids
    args = ["run", source_url, "--schema", "expense", "--db", db, "--table", "messages",
            "--updated-column", "updated_at"]  # fmt: skip
    second = runner.invoke(app, args)  # the killed run's claims are still fresh: skipped, not lost
    assert second.exit_code == 3, second.output  # and the run says so rather than finishing quietly
    assert "3 records of this input have no result yet" in second.output
    with session_factory(db)() as session:
        mark = session.scalars(select(Watermark)).one()
        assert datetime.fromisoformat(mark.value["value"]).replace(tzinfo=UTC) == T0 + timedelta(minutes=1)
        assert session.query(Result).count() == 0
        # an hour on, the killed run is silent; and say an older version had moved the watermark past
        session.execute(text("UPDATE record_claims SET claimed_at = '2020-01-01 00:00:00.000000'"))
        session.execute(text("UPDATE runs SET heartbeat_at = '2020-01-01 00:00:00.000000'"))
        session.commit()
        save_watermark(session, mark.source, mark.selection, schema, "2099-01-01 00:00:00", mark.run_id)
    third = runner.invoke(app, args)
    assert third.exit_code == expected_exit(third.output), third.output
    with session_factory(db)() as session:
        assert sorted(r.record_id for r in session.scalars(select(Result))) == ids


@pytest.mark.parametrize(
    "secret_url",
    [
        "postgresql://reader:Sl/ash-s3cret@db.internal/app",  # a `/` in the password
        "postgresql://reader@db.internal/app?sslmode=require&password=Qu3ry-s3cret",
        "host=db.internal user=reader password='Dsn s3cret' dbname=app",
    ],
)
def test_passwords_in_query_strings_dsns_and_with_slashes_are_masked(secret_url: str) -> None:
    """Issue 20 point 11: these reached records.source, runs.source and Prefect's flow parameters."""
    from formwork.flows.secret_free import refuse_secret_parameters
    from formwork.tasks.sources.sql import source_in_environment

    secret = "s3cret"
    assert secret not in redact(secret_url) and "***" in redact(secret_url)
    with pytest.raises(ValueError, match="must not carry a password"):
        refuse_secret_parameters({"source": secret_url})
    if "://" in secret_url:
        assert secret not in url_label(secret_url)
        with source_in_environment(secret_url) as parameter:  # what the CLI hands Prefect
            assert secret not in parameter and real_source_url(parameter) == secret_url


@pytest.mark.postgres
def test_a_query_string_password_with_a_slash_reads_and_is_never_stored(postgres_db_url, tmp_path) -> None:
    from formwork.db.store import store_records
    from formwork.tasks.sources.sql import source_in_environment

    role, password = f"reader_{uuid.uuid4().hex[:8]}", "Sl/ash-s3cret"
    with create_engine(postgres_db_url).begin() as connection:
        connection.execute(text(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'"))
        connection.execute(text(f"GRANT ALL ON SCHEMA public TO {role}"))
    base = make_url(postgres_db_url).set(username=role, password=None).render_as_string()
    url = f"{base}?password={password.replace('/', '%2F')}"
    engine = create_engine(url)
    messages.create(engine)
    engine.dispose()
    _write(url, insert(messages).values(_rows(2)))
    with source_in_environment(url) as parameter:
        rows = read_sql(parameter, table="messages")
        db = f"sqlite:///{tmp_path / 'formwork.db'}"
        with session_factory(db)() as session:
            assert len(store_records(session, rows.record_source, list(rows))) == 2
    assert "s3cret" not in _all_text(db) and "***" in _all_text(db)
