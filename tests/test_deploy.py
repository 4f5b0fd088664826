"""The deployment files stay true to the code: entrypoints exist, parameters match, scripts parse."""

from __future__ import annotations

import importlib
import inspect
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DEPLOYMENTS = yaml.safe_load((ROOT / "deploy" / "prefect.yaml").read_text())["deployments"]


@pytest.mark.parametrize("deployment", DEPLOYMENTS, ids=[d["name"] for d in DEPLOYMENTS])
def test_each_deployment_points_at_a_flow_with_those_parameters(deployment: dict) -> None:
    path, name = deployment["entrypoint"].split(":")
    flow = getattr(importlib.import_module("formwork." + path.removesuffix(".py").replace("/", ".")), name)
    accepted = set(inspect.signature(flow.fn).parameters)
    assert set(deployment.get("parameters", {})) <= accepted
    for schedule in deployment.get("schedules", []):
        assert len(schedule["cron"].split()) == 5


@pytest.mark.parametrize("script", sorted((ROOT / "deploy").rglob("*.sh")), ids=lambda p: p.name)
def test_shell_scripts_parse(script: Path) -> None:
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
