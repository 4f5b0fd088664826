"""No flow lets Prefect store a secret (issue 41 point 1).

Prefect writes a flow run's parameters when it creates the run, before it validates them and before
the flow's body runs: a body that refuses a password has already leaked it, and a run that fails
leaks it too. Every flow of the package is found by walking its modules (a new flow is covered with
no list to keep), and each parameter is given every secret its type can hold: a URL with a password
(a string), the same inside a list, a secret setting or a URL with a password inside a dict. The flow
is called for real under Prefect's test harness; it must refuse, and no flow run Prefect holds may
contain the secret. A deployment's run, whose parameters reached Prefect some other way (the UI,
`run_deployment`), is refused when the worker validates them.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import typing
from typing import Any

import pytest
from prefect import Flow
from pydantic import TypeAdapter, ValidationError

from formwork.tasks.settings import Settings

PASSWORD = "pw-issue-41"
KEY = "sk-issue-41-0123456789"
URL = f"postgresql://reader:{PASSWORD}@db.internal/app"
ROOTS = ("formwork.flows", "formwork.db", "formwork.tasks", "formwork.schemas")
PLACEHOLDER = "missing-input.jsonl"  # a required parameter's harmless value


def every_flow() -> dict[str, Flow[Any, Any]]:
    """Every Prefect flow defined anywhere in the package, by name."""
    found: dict[str, Flow[Any, Any]] = {}
    for root in ROOTS:
        package = importlib.import_module(root)
        for info in pkgutil.walk_packages(package.__path__, f"{root}."):
            if ".migrations" in info.name or info.name.endswith(".__main__"):
                continue  # Alembic's env.py and the CLI's entry point run when imported
            module = importlib.import_module(info.name)
            found |= {v.name: v for v in vars(module).values() if isinstance(v, Flow)}
    return found


FLOWS = every_flow()
SHAPES = {  # the secrets a parameter may be given, by the shape of its type
    "url": URL,
    "urls": [URL],
    "secret-setting": {"vllm_api_key": KEY},
    "url-setting": {"vllm_url": f"http://ops:{PASSWORD}@gpu-1:8000/v1"},
}


def _fits(annotation: Any, value: Any) -> bool:
    try:
        TypeAdapter(annotation).validate_python(value, strict=True)
    except ValidationError:
        return False
    return True


def _cases() -> list[Any]:
    """(flow, parameter, secret) for every secret shape each parameter's type accepts."""
    cases = []
    for name, flow in sorted(FLOWS.items()):
        hints = typing.get_type_hints(flow.fn)
        for parameter in flow.parameters.properties:
            if parameter in Settings.secret_fields():  # a secret setting as a parameter: any value
                cases.append(pytest.param(name, parameter, KEY, id=f"{name}-{parameter}-key"))
            cases += [pytest.param(name, parameter, secret, id=f"{name}-{parameter}-{shape}")
                      for shape, secret in SHAPES.items() if _fits(hints[parameter], secret)]  # fmt: skip
    return cases


def _required(flow: Flow[Any, Any]) -> dict[str, Any]:
    return {name: PLACEHOLDER for name in flow.parameters.required or []}


def test_every_flow_is_found_and_has_string_parameters_to_check() -> None:
    assert {"batch_extract", "evaluate", "reprocess_failed"} <= set(FLOWS)
    checked = {tuple(case.values[:2]) for case in _cases()}
    assert {("evaluate", "db_url"), ("batch_extract", "source"), ("reprocess_failed", "overrides")} <= checked


@pytest.mark.parametrize(("name", "parameter", "secret"), _cases())
def test_a_flow_refuses_a_secret_parameter_before_prefect_stores_it(
    prefect_harness, name: str, parameter: str, secret: Any
) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName

    flow = FLOWS[name]
    parameters = _required(flow) | {parameter: secret}
    refused = rf"\b{parameter}\b.* must not carry a password"
    with pytest.raises(ValueError, match=refused):
        flow(**parameters)
    with pytest.raises(ValueError, match=refused):
        flow.validate_parameters(parameters)  # a deployment's run: stored elsewhere, never run
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=[name])))
    stored = json.dumps([run.parameters for run in runs])
    assert PASSWORD not in stored and KEY not in stored


def test_a_flow_still_takes_parameters_without_a_secret() -> None:
    flow = FLOWS["reprocess_failed"]
    taken = flow.validate_parameters({"db_url": "postgresql://reader@db.internal/app", "limit": 5,
                                      "overrides": {"reasoning_max_tokens": 99}})  # fmt: skip
    assert taken["limit"] == 5 and taken["db_url"] == "postgresql://reader@db.internal/app"
    serialized = flow.serialize_parameters({"overrides": {"vllm_url": "http://gpu-1:8000/v1"}})
    assert serialized == {"overrides": {"vllm_url": "http://gpu-1:8000/v1"}}
