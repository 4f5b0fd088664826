"""The checks of `formwork doctor` (flows.cli.doctor) that are not an engine's: the configuration, the
database and its migrations, and the Prefect API; and the one line of the report each check makes.

Each check is read-only: the database is looked at, never created or migrated (a run migrates it); a server
is asked, never changed. URL passwords never reach what a check found.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from formwork.tasks.redact import redact

if TYPE_CHECKING:
    from formwork.tasks.settings import Settings

State = Literal["ok", "warn", "FAIL"]
CONNECT_TIMEOUT_S = 5


@dataclass(frozen=True)
class Check:
    """One line of the report: what was checked, how it went, what was found and what to do."""

    name: str
    state: State
    found: str
    fix: str = ""


def settings_check(db: str | None) -> tuple[Check, Settings | None]:
    from pydantic import ValidationError

    from formwork.tasks.settings import Settings, _config_file

    try:
        settings = Settings(**({"db_url": db} if db else {}))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        fix = f"fix the FORMWORK_* variable or {_config_file()} entry named here"
        return Check("configuration", "FAIL", redact(problems), fix), None
    except (ValueError, OSError) as exc:  # a malformed or unreadable formwork.toml
        return Check("configuration", "FAIL", redact(f"{_config_file()}: {exc}"), "fix the file"), None
    where = _config_file()
    found = f"engine {settings.engine}; " + (f"read {where}" if where.is_file() else f"no {where}, defaults")
    return Check("configuration", "ok", found + " and FORMWORK_* variables"), settings


def database_checks(url: str) -> list[Check]:
    """Reachability and migration state, with a connection that only reads."""
    from sqlalchemy.exc import SQLAlchemyError

    try:
        return _reachable_checks(url)
    except (SQLAlchemyError, ImportError) as exc:  # a malformed URL, a driver that is not installed
        fix = "correct FORMWORK_DB_URL / --db (sqlite:///FILE or postgresql://USER@HOST/DB)"
        return [Check("database", "FAIL", redact(str(exc).splitlines()[0]), fix)]


def _reachable_checks(url: str) -> list[Check]:
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory
    from sqlalchemy import create_engine
    from sqlalchemy.engine.url import make_url
    from sqlalchemy.exc import SQLAlchemyError

    from formwork.db.session import alembic_config

    parsed = make_url(url)
    shown = parsed.render_as_string(hide_password=True)
    scripts = ScriptDirectory.from_config(alembic_config(url))
    head = scripts.get_current_head()
    file = parsed.database if parsed.get_backend_name() == "sqlite" else None
    if file not in (None, "", ":memory:") and not Path(file).is_file():
        return [Check("database", "ok", f"{shown}: not created yet; the first run creates it"),
                Check("migrations", "ok", f"none yet; the first run migrates to {head}")]  # fmt: skip
    args = {"connect_timeout": CONNECT_TIMEOUT_S} if parsed.get_backend_name() == "postgresql" else {}
    engine = create_engine(url, connect_args=args)
    try:
        with engine.connect() as connection:
            current = MigrationContext.configure(connection).get_current_revision()
    except SQLAlchemyError as exc:
        said = redact(str(exc.orig or exc).strip().splitlines()[0])
        fix = "start the database or correct FORMWORK_DB_URL / --db (host, port, user, database name)"
        return [Check("database", "FAIL", f"{shown}: {said}", fix)]
    finally:
        engine.dispose()
    checks = [Check("database", "ok", f"{shown}: reachable")]
    known = {script.revision for script in scripts.walk_revisions()}
    if current == head:
        checks.append(Check("migrations", "ok", f"at head {head}"))
    elif current is None or current in known:
        checks.append(Check("migrations", "warn", f"at {current or 'no revision'}, head is {head}",
                            "the next run migrates it (its user needs CREATE/ALTER rights)"))  # fmt: skip
    else:
        checks.append(Check("migrations", "FAIL", f"at {current}, which this Formwork does not know",
                            "the database is newer than this code: upgrade Formwork here"))  # fmt: skip
    return checks


def prefect_check() -> Check:
    """The API the flows report to: a server that answers /health, or the ephemeral one said plainly."""
    import httpx
    from prefect.settings import Settings as PrefectSettings

    current = PrefectSettings()  # read now, from the environment and profile this command runs with
    url = current.api.url
    if not url:
        if not current.server.ephemeral.enabled:
            return Check("prefect", "FAIL", "no PREFECT_API_URL and the ephemeral server is disabled",
                         "set PREFECT_API_URL to your Prefect server (http://HOST:4200/api)")  # fmt: skip
        return Check("prefect", "ok", "ephemeral mode: each run starts a local Prefect API "
                     "(fine on one machine; workers need PREFECT_API_URL)")  # fmt: skip
    try:
        response = httpx.get(f"{url.rstrip('/')}/health", timeout=CONNECT_TIMEOUT_S)
        response.raise_for_status()
    except httpx.HTTPError as exc:
        return Check("prefect", "FAIL", redact(f"{url}: {exc!r}"),
                     "start it (prefect server start) or correct PREFECT_API_URL")  # fmt: skip
    return Check("prefect", "ok", redact(f"{url}: healthy"))
