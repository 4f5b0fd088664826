"""`formwork doctor`: check everything a run needs before a night depends on it, and say what to fix.

Each check is read-only: the database is looked at, never created or migrated (a run migrates it);
a server is asked, never changed. One failing part does not hide the others: every check runs and
the table shows them all; the command exits 1 when any failed. URL passwords never reach the output.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import typer
from rich.table import Table

from formwork.flows.cli.common import DbOption, err, out
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


def _settings(db: str | None) -> tuple[Check, Settings | None]:
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


def _database(url: str) -> list[Check]:
    """Reachability and migration state, with a connection that only reads."""
    from sqlalchemy.exc import SQLAlchemyError

    try:
        return _database_checks(url)
    except (SQLAlchemyError, ImportError) as exc:  # a malformed URL, a driver that is not installed
        fix = "correct FORMWORK_DB_URL / --db (sqlite:///FILE or postgresql://USER@HOST/DB)"
        return [Check("database", "FAIL", redact(str(exc).splitlines()[0]), fix)]


def _database_checks(url: str) -> list[Check]:
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


def _model(settings: Settings) -> Check:
    """Which GGUF the embedded engine loads, its sha256 and whether it is installed. A catalogue model's
    file is hashed again and must still be the catalogue's (one changed after its install would read
    as another model, its shipped calibration lost); any other file's hash is computed here."""
    from formwork.tasks.engines.models import BUNDLED, CATALOGUE, changed, is_installed, model_file, reinstall

    if settings.local_model_path:
        path = settings.local_model_path
        if not path.is_file():
            return Check("model", "FAIL", f"local_model_path {path} is missing", "set it to a GGUF file")
        return Check("model", "ok", f"local_model_path {path}: sha256 {_sha256(path)}")
    name = settings.local_model or BUNDLED.name
    model = CATALOGUE.get(name)
    if model is None:
        return Check("model", "FAIL", f"unknown model {name!r}",
                     f"set local_model to one of {', '.join(CATALOGUE)} (formwork models)")  # fmt: skip
    if not is_installed(model):
        fix = "reinstall Formwork (make install)" if model.bundled else f"run formwork models install {name}"
        return Check("model", "FAIL", f"{name}: not installed", fix)
    if (why := changed(model, model_file(model))) is not None:
        return Check("model", "FAIL", f"{name} changed since its install: {why}", reinstall(model))
    found = f"{name} ({model.title}), installed at {model_file(model)}; sha256 {model.sha256} (checked)"
    return Check("model", "ok", found)


def _sha256(path: Path) -> str:
    import hashlib

    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _local_engine(settings: Settings) -> Check:
    """The model file, the two native imports, then a load and a 16-token schema-constrained probe."""
    import json

    from formwork.tasks.engines import local_model_file, open_engines
    from formwork.tasks.engines.base import EngineError, Sampling
    from formwork.tasks.engines.http_base import PROBE_SCHEMA
    from formwork.tasks.engines.local import bundled_model_path

    try:
        path = local_model_file(settings) or bundled_model_path()
    except (FileNotFoundError, EngineError) as exc:
        return Check("engine local", "FAIL", "no model file", str(exc))
    if not path.is_file():
        return Check("engine local", "FAIL", f"{path} is missing", "set FORMWORK_LOCAL_MODEL_PATH to a GGUF")
    missing = [name for name in ("llama_cpp", "xgrammar") if importlib.util.find_spec(name) is None]
    if missing:
        return Check("engine local", "FAIL", f"not installed: {', '.join(missing)}",
                     "pip install 'formwork[local]' (see deploy/local/build_llama_wheel.sh)")  # fmt: skip
    try:
        engine, _ = open_engines(settings)
        probe = engine.complete([{"role": "user", "content": "Is water wet?"}], Sampling(16), PROBE_SCHEMA)
        answer = json.loads(probe.text).get("answer")
    except Exception as exc:  # any failure to load or decode is the finding itself
        return Check("engine local", "FAIL", f"{path.name}: {redact(str(exc))}", "check the GGUF file")
    if answer not in ("yes", "no"):
        return Check("engine local", "FAIL", f"probe answered {probe.text[:80]!r}", "reinstall xgrammar")
    return Check("engine local", "ok", f"{path.name} loaded; schema-constrained probe answered {answer!r}")


def _vllm_engines(s: Settings) -> list[Check]:
    """Each distinct server: served models, version, and the structured-output probe (check())."""
    from formwork.tasks.engines.base import EngineError
    from formwork.tasks.engines.vllm_server import VllmServerEngine

    servers = {(s.vllm_url, s.vllm_model): "reasoning"}
    formatting = (s.vllm_format_url or s.vllm_url, s.vllm_format_model or s.vllm_model)
    servers[formatting] = "reasoning + formatting" if formatting in servers else "formatting"
    checks = []
    for (url, model), role in servers.items():
        name = f"engine vllm ({role})"
        try:
            key = s.api_key()
            engine = VllmServerEngine(url, model, timeout_s=min(s.vllm_timeout_s, 30.0), api_key=key)
        except ValueError as exc:
            checks.append(Check(name, "FAIL", redact(str(exc)), "fix FORMWORK_VLLM_API_KEY_FILE"))
            continue
        try:
            info = engine.check()
        except EngineError as exc:
            fix = exc.hint or "start the server (deploy/vllm/serve_gpu.sh) or correct FORMWORK_VLLM_URL"
            if "is the server running" in fix:
                setting = "FORMWORK_VLLM_FORMAT_URL" if role == "formatting" else "FORMWORK_VLLM_URL"
                fix = f"start vLLM at {redact(url)} (deploy/vllm/serve_gpu.sh) or correct {setting}"
            checks.append(Check(name, "FAIL", redact(exc.message), redact(fix)))
            continue
        finally:
            engine.close()
        found = f"{info.base_url}: vLLM {info.version}, model {info.model}, structured outputs enforced"
        checks.append(Check(name, "ok", found))
    return checks


def _openai_engines(s: Settings) -> list[Check]:
    """Each server of the openai engine: the dialect it speaks, its probe, and its logprob mode."""
    from formwork.tasks.engines import open_openai_server, openai_urls
    from formwork.tasks.engines.base import EngineError

    checks = []
    for url in openai_urls(s):
        engine = open_openai_server(s, url, timeout_s=min(s.vllm_timeout_s, 30.0))
        name = f"engine openai ({redact(url)})"
        try:
            info = engine.check()
        except EngineError as exc:
            found = f"dialect {engine.dialect}: probe refused: {redact(exc.message)}"
            fix = redact(exc.hint or "start the server or correct FORMWORK_OPENAI_URL")
            checks.append(Check(name, "FAIL", found, fix))
            continue
        finally:
            engine.close()
        found = f"model {info.model}; dialect {info.dialect}; probe constrained; logprobs {info.logprob_mode}"
        found += f"; control tokens: {info.control_tokens}"
        checks.append(Check(name, "ok", found))
    return checks


def _prefect() -> Check:
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


def diagnose(db: str | None = None) -> list[Check]:
    """Every check, in the order a run needs them; parts that need the settings skip without them."""
    first, settings = _settings(db)
    checks = [first]
    if settings is not None:
        engines = {"local": lambda s: [_model(s), _local_engine(s)], "vllm": _vllm_engines,
                   "openai": _openai_engines}  # fmt: skip
        checks += _database(settings.db_url) + engines[settings.engine](settings)
        return [*checks, _prefect()]
    return [*checks, _prefect()]


def doctor(db: DbOption = None) -> None:
    """Check the configuration, database, engines and Prefect API; exit 1 with what to fix if any fail."""
    checks = diagnose(db)
    table = Table(title="formwork doctor")
    for column in ("check", "state", "found", "fix"):
        table.add_column(column, overflow="fold")
    colours = {"ok": "green", "warn": "yellow", "FAIL": "bold red"}
    for check in checks:
        table.add_row(check.name, f"[{colours[check.state]}]{check.state}[/]", check.found, check.fix)
    out.print(table)
    failed = [check for check in checks if check.state == "FAIL"]
    for check in failed:  # unwrapped lines, for logs and for grep
        err.print(f"FAIL {check.name}: {check.found}. Fix: {check.fix}", soft_wrap=True, markup=False)
    raise typer.Exit(1 if failed else 0)
