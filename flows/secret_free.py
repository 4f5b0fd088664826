"""Flows that refuse a secret parameter before Prefect stores it.

Prefect writes a flow run's parameters when it creates the run: before it validates them and before
the flow's body runs. A body that refuses a password has already leaked it (into Prefect's database,
its UI, every `read_flow_runs`), and a run that fails leaks it too. So every Formwork flow is declared
with `secret_free_flow`, whose `serialize_parameters` (the one place where a call's parameters become
what Prefect stores: a direct call, a subflow, a submission to a work pool) refuses first. A run
created elsewhere (a deployment run from the UI or `run_deployment`) reaches its worker with its
parameters already stored; `validate_parameters` then refuses to run it, so the worker never uses them.

A secret is what `tasks.redact` masks (a URL's password, `password=` in a DSN or query string, a
registered API key) anywhere in a value, or a secret setting (`Settings.secret_fields()`) named as a
parameter or as a key of a dict parameter (`overrides`). The CLI hands such values to a flow through
the environment (`flows.cli.common.settings_in_environment`), never as parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from prefect import Flow

from formwork.tasks.redact import redact
from formwork.tasks.settings import Settings

P = ParamSpec("P")
R = TypeVar("R")
FIXES = {
    "db_url": "set FORMWORK_DB_URL (or db_url in formwork.toml) where the flow runs",
    "source": "leave the password out of the URL and use PGPASSWORD or ~/.pgpass",
}
FIX = "set it as a FORMWORK_* variable where the flow runs (formwork retry --set does)"


def _holds_secret(value: Any, secret_names: frozenset[str]) -> bool:
    if isinstance(value, str):
        return redact(value) != value
    if isinstance(value, dict):
        return any(k in secret_names or _holds_secret(k, secret_names) or _holds_secret(v, secret_names)
                   for k, v in value.items())  # fmt: skip
    if isinstance(value, list | tuple | set | frozenset):
        return any(_holds_secret(item, secret_names) for item in value)
    return False


def secret_parameters(parameters: dict[str, Any]) -> list[str]:
    """The names of the parameters that carry a secret, in their order."""
    names = Settings.secret_fields()
    return [name for name, value in parameters.items()
            if (name in names and value is not None) or _holds_secret(value, names)]  # fmt: skip


def refuse_secret_parameters(parameters: dict[str, Any]) -> None:
    """Raise ValueError naming each parameter that carries a secret and what to do instead."""
    found = secret_parameters(parameters)
    if found:
        fixes = "; ".join(dict.fromkeys(FIXES.get(name, FIX) for name in found))
        raise ValueError(f"{', '.join(found)} must not carry a password or a secret setting (Prefect "
                         f"stores flow parameters): {fixes}")  # fmt: skip


class SecretFreeFlow(Flow[P, R]):
    """A Prefect flow that refuses a secret parameter before any run of it is created or started."""

    def serialize_parameters(self, parameters: dict[str, Any]) -> dict[str, Any]:
        serialized = super().serialize_parameters(parameters)
        refuse_secret_parameters(serialized)  # what Prefect would store, as it would store it
        return serialized

    def validate_parameters(self, parameters: dict[str, Any]) -> dict[str, Any]:
        refuse_secret_parameters(parameters)
        return super().validate_parameters(parameters)


def secret_free_flow(name: str) -> Callable[[Callable[P, R]], SecretFreeFlow[P, R]]:
    """`@flow(name=..., validate_parameters=True)`, refusing secret parameters (the module docstring)."""
    return lambda fn: SecretFreeFlow(fn, name=name, validate_parameters=True)
