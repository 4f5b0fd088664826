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
from formwork.tasks.sources import SourceProblem
from formwork.tasks.sources.sql import read_sql, sql_selection, url_label

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
    assert records.high.replace(tzinfo=UTC) == rows[5]["updated_at"]
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
    assert first.exit_code == 0, first.output
    assert "3 records" in first.output
    # overnight: row 2 is edited, row 4 arrives, rows 1 and 3 stay as they were
    _write(source_url, update(messages).where(messages.c.id == 2).values(
        text="Hotel 240 GBP, two nights", updated_at=T0 + timedelta(hours=5)))  # fmt: skip
    _write(source_url, insert(messages).values(_rows(1, start=4)))
    second = runner.invoke(app, args)
    assert second.exit_code == 0, second.output

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
        assert mark.value["type"] == "datetime" and mark.run_id == runs[1]
        assert datetime.fromisoformat(mark.value["value"]).replace(tzinfo=UTC) == T0 + timedelta(hours=5)
    third = runner.invoke(app, args)  # nothing new: only the boundary row is read again, and not extracted
    assert third.exit_code == 0 and "nothing to do" in third.output, third.output
    if not is_sqlite:
        assert PASSWORD not in _all_text(db)
        from prefect.client.orchestration import get_client

        with get_client(sync_client=True) as client:
            parameters = [run.parameters for run in client.read_flow_runs()]
        assert parameters and PASSWORD not in json.dumps(parameters)
