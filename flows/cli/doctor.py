"""`formwork doctor`: check everything a run needs before a night depends on it, and say what to fix.

The checks are flows.cli.doctor_checks and flows.cli.doctor_engines; this module runs them in the order a
run needs them and prints the report. One failing part does not hide the others: every check runs and
the table shows them all; the command exits 1 when any failed.
"""

from __future__ import annotations

import typer
from rich.table import Table

from formwork.flows.cli.common import DbOption, err, out
from formwork.flows.cli.doctor_checks import Check, database_checks, prefect_check, settings_check
from formwork.flows.cli.doctor_engines import local_engine_check, model_check, openai_checks, vllm_checks


def diagnose(db: str | None = None) -> list[Check]:
    """Every check, in the order a run needs them; parts that need the settings skip without them."""
    first, settings = settings_check(db)
    checks = [first]
    if settings is not None:
        engines = {"local": lambda s: [model_check(s), local_engine_check(s)], "vllm": vllm_checks,
                   "openai": openai_checks}  # fmt: skip
        checks += database_checks(settings.db_url) + engines[settings.engine](settings)
        return [*checks, prefect_check()]
    return [*checks, prefect_check()]


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
