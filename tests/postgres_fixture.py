"""Pytest plugin: a real PostgreSQL server for the test session, and a fresh database per test.

Load it with `pytest_plugins = ["tests.postgres_fixture"]` in tests/conftest.py, or with
`-p tests.postgres_fixture`.

- `postgres_url` (session): installs PostgreSQL if missing (deploy/postgres/install.sh, Debian's package),
  initdb's a data folder under pytest's temporary folder and starts it on a free loopback port
  (deploy/postgres/start_local.sh, about 2 s), yields
  `postgresql+psycopg://postgres@127.0.0.1:PORT/formwork_test`, and stops it (`pg_ctl stop -m fast`).
- `own_postgres`: a server of the test's own, which it may stop and start again (`OwnServer`).
- `any_db_url`: parametrized over SQLite and PostgreSQL, a brand-new empty database per test. The
  PostgreSQL case is marked `postgres` and starts the server only when first asked for. Fresh URLs
  matter: db.session.get_engine caches one migrated engine per URL for the whole process.

If PostgreSQL cannot be installed or started, the fixture FAILS with the log; it never skips, because a
skipped database test reads as a passing one.

Environment:
    FORMWORK_TEST_POSTGRES_URL  a running server to use instead of starting one, as a URL to a database
                                whose user may CREATE DATABASE (e.g. postgresql+psycopg://postgres@host/postgres)
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine.url import make_url

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "deploy" / "postgres"
TEST_DB = "formwork_test"
# Throwaway data: durability off makes CREATE DATABASE per test and every commit much cheaper.
TEST_OPTS = "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _let_postgres_in(folder: Path, top: Path) -> None:
    """Make `folder` and its parents up to `top` searchable by others (pytest creates them 0700).

    Only the execute bit is added: other users may pass through, not list. pytest resets its own root
    folder to 0700 when another session starts, so this is applied again before the server is stopped.
    """
    if os.geteuid() != 0:
        return  # not root: the server runs as ourselves
    for path in [folder, *folder.parents]:
        path.chmod(path.stat().st_mode | stat.S_IXOTH)
        if path == top:
            break


def _stop(bin_dir: Path, data_dir: Path, top: Path) -> None:
    _let_postgres_in(data_dir.parent, top)
    command = [str(bin_dir / "pg_ctl"), "-D", str(data_dir), "stop", "-m", "fast", "-w", "-t", "30"]
    if os.geteuid() == 0:
        command = ["runuser", "-u", "postgres", "--", *command]
    if subprocess.run(command, capture_output=True, cwd="/", check=False).returncode == 0:
        return
    pid_file = data_dir / "postmaster.pid"  # root can always read it: signal the postmaster directly
    if pid_file.exists():
        pid = int(pid_file.read_text().split()[0])
        os.kill(pid, signal.SIGINT)  # SIGINT is PostgreSQL's "fast" shutdown
        for _ in range(300):
            if not pid_file.exists():
                return
            time.sleep(0.1)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A running PostgreSQL server for the session, with an empty `formwork_test` database.

    Its data folder lives outside pytest's basetemp: pytest deletes old basetemp folders whenever
    another pytest session starts, which would pull the data from under a running server.
    """
    given = os.environ.get("FORMWORK_TEST_POSTGRES_URL")
    if given:
        with _admin(given) as admin:
            if not admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (TEST_DB,)).fetchone():
                admin.execute(f'CREATE DATABASE "{TEST_DB}"')
        yield make_url(given).set(database=TEST_DB).render_as_string(hide_password=False)
        return
    installed = subprocess.run(
        ["bash", str(SCRIPTS / "install.sh")], capture_output=True, text=True, timeout=900, check=False
    )
    if installed.returncode != 0:
        pytest.fail(f"PostgreSQL could not be installed:\n{installed.stdout}\n{installed.stderr}")
    bin_dir = Path(installed.stdout.strip().splitlines()[-1])
    root = Path(tempfile.mkdtemp(prefix="formwork-postgres-"))
    top = root
    _let_postgres_in(root, top)
    data_dir = root / "data"
    env = {**os.environ, "POSTGRES_OPTS": TEST_OPTS}
    started = None
    for _ in range(3):  # a free port can be taken between the probe and the bind: try another
        started = subprocess.run(
            ["bash", str(SCRIPTS / "start_local.sh"), str(data_dir), str(_free_port()), TEST_DB],
            capture_output=True, text=True, timeout=180, check=False, env=env,
        )  # fmt: skip
        if started.returncode == 0:
            break
    assert started is not None
    if started.returncode != 0:
        _stop(bin_dir, data_dir, top)
        pytest.fail(f"PostgreSQL did not start (start_local.sh prints the log's end):\n{started.stderr}")
    try:
        yield started.stdout.strip().splitlines()[-1]
    finally:
        _stop(bin_dir, data_dir, top)
        shutil.rmtree(root, ignore_errors=True)


class OwnServer:
    """A PostgreSQL server that one test starts, stops and starts again (a restart under a run)."""

    def __init__(self, bin_dir: Path, root: Path) -> None:
        self.bin_dir, self.root, self.data_dir = bin_dir, root, root / "data"
        self.port = _free_port()
        self.url = ""

    def start(self) -> None:
        """Start it (initdb on the first start, about 2 s a start); the same port and data every time."""
        env = {**os.environ, "POSTGRES_OPTS": TEST_OPTS}
        started = subprocess.run(
            ["bash", str(SCRIPTS / "start_local.sh"), str(self.data_dir), str(self.port), TEST_DB],
            capture_output=True, text=True, timeout=180, check=False, env=env,
        )  # fmt: skip
        if started.returncode != 0:
            pytest.fail(f"PostgreSQL did not start:\n{started.stderr}")
        self.url = started.stdout.strip().splitlines()[-1]

    def stop(self) -> None:
        _stop(self.bin_dir, self.data_dir, self.root)


@pytest.fixture
def own_postgres() -> Iterator[OwnServer]:
    """A PostgreSQL server for this test alone (never the session's, which other tests share): the test
    may stop it and start it again. Stopped and deleted afterwards."""
    installed = subprocess.run(
        ["bash", str(SCRIPTS / "install.sh")], capture_output=True, text=True, timeout=900, check=False
    )
    if installed.returncode != 0:
        pytest.fail(f"PostgreSQL could not be installed:\n{installed.stdout}\n{installed.stderr}")
    root = Path(tempfile.mkdtemp(prefix="formwork-postgres-own-"))
    _let_postgres_in(root, root)
    server = OwnServer(Path(installed.stdout.strip().splitlines()[-1]), root)
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def _admin(url: str) -> psycopg.Connection:
    """An autocommit connection to the server's `postgres` database (CREATE DATABASE needs autocommit)."""
    parsed = make_url(url)
    return psycopg.connect(
        host=parsed.host, port=parsed.port, user=parsed.username, password=parsed.password,
        dbname="postgres", autocommit=True,
    )  # fmt: skip


@pytest.fixture
def postgres_db_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A new, empty PostgreSQL database for this test, dropped afterwards."""
    server = request.getfixturevalue("postgres_url")
    name = f"{re.sub(r'[^a-z0-9]+', '_', request.node.name.lower())[:40]}_{uuid.uuid4().hex[:8]}"
    with _admin(server) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield make_url(server).set(database=name).render_as_string(hide_password=False)
    finally:
        # FORCE ends the connections that db.session's cached engine still holds in its pool.
        with _admin(server) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def any_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A new, empty database for this test on each backend; migrated on first use by db.session."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'formwork.db'}"
    return request.getfixturevalue("postgres_db_url")
